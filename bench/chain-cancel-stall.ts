/**
 * Whether the failure of a long chain keeps the server serving (issue 37, task bounds17):
 * starts `sepp serve` (SQLite), makes a chain of `--chain` jobs (default 5,000) each waiting
 * on the one before (default policy: cancel), made over many requests (flows of 100, each
 * naming the last job of the one before by id), then cancels the chain's first job while a
 * second connection sends unary Enqueues, one at a time, to another queue. Prints, per run
 * and checkout, how long the CancelJob call took, how long until no job of the chain was
 * still waiting (all cancelled: ListQueues polled every 20 ms), and the concurrent enqueues' latency
 * (p50, p99, max) over that time, with the 1-minute load average at the start and the end:
 * the machine is shared.
 *
 *   npx tsx bench/chain-cancel-stall.ts [--chain 5000] [--runs 3] [--against /work/wt/base7]
 *
 * `--against DIR` runs the server of another checkout too, interleaved run by run (the order
 * swapped each run). Not a test: the table is read, never asserted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { credentials } from '@grpc/grpc-js';
import { EnqueueJob } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { parseArgs } from './engine-lib.ts';
import type { LatencySummary } from './lib/latency.ts';
import { installCleanupHandlers } from './lib/processes.ts';
import { startSeppServe } from './lib/sepp-serve.ts';
import { probeEnqueues, unary } from './lib/unary-probe.ts';

const args = parseArgs(process.argv.slice(2));
const chainJobs = Number(args.get('chain') ?? 5000);
const runs = Number(args.get('runs') ?? 3);
const perFlow = 100;
const root = new URL('..', import.meta.url).pathname;
const checkouts = [
  { label: 'this checkout', dir: root },
  ...(args.has('against') ? [{ label: String(args.get('against')), dir: String(args.get('against')) }] : []),
];

const job = (queue: string, dependsOn: string[] = []) =>
  EnqueueJob.fromPartial({ queue, type: 'step', payload: Buffer.alloc(16, 0x61), dependsOn });

/** The chain's first job (on `head`), then the rest on `chain`, in flows; answers the first job's id. */
async function makeChain(client: QueueServiceClient): Promise<string> {
  const { jobId: headId } = await unary(client, client.enqueue, { job: job('head') });
  let last = headId;
  for (let made = 1; made < chainJobs; made += perFlow) {
    const size = Math.min(perFlow, chainJobs - made);
    const jobs = Array.from({ length: size }, (_, i) => ({
      name: `j${i}`,
      job: job('chain', i === 0 ? [last] : []),
      after: i === 0 ? [] : [`j${i - 1}`],
    }));
    const flow = await unary(client, client.enqueueFlow, { jobs });
    if (!flow.committed) throw new Error(`a flow was refused: ${JSON.stringify(flow)}`);
    last = flow.jobs.find((j) => j.name === `j${size - 1}`)?.jobId ?? '';
  }
  return headId;
}

/** The chain's jobs cancelled so far (ListQueues counts no waiting jobs: the rest wait). */
async function cancelledInChain(client: QueueServiceClient): Promise<number> {
  const { queues } = await unary(client, client.listQueues, { pageSize: 100, pageToken: '' });
  return queues.find((q) => q.name === 'chain')?.counts?.cancelled ?? 0;
}

interface Row {
  checkout: string;
  cancelMs: number;
  allCancelledMs: number;
  enqueue: LatencySummary | undefined;
  load: [number, number];
}

async function oneRun(label: string, srcDir: string): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-chain-bench-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(config, '');
  const server = await startSeppServe({ srcDir, config, dir });
  const address = `127.0.0.1:${server.grpcPort}`;
  const control = new QueueServiceClient(address, credentials.createInsecure());
  const prober = new QueueServiceClient(address, credentials.createInsecure(), {
    'grpc.use_local_subchannel_pool': 1,
  });
  try {
    const headId = await makeChain(control);
    if ((await cancelledInChain(control)) !== 0) throw new Error('a job of the chain is cancelled already');
    const loadBefore = loadavg()[0] ?? 0;
    const started = performance.now();
    let cancelMs = 0;
    const done = (async () => {
      await unary(control, control.cancelJob, { jobId: headId });
      cancelMs = performance.now() - started;
      while ((await cancelledInChain(control)) < chainJobs - 1) await sleep(20);
      return performance.now() - started;
    })();
    const [allCancelledMs, enqueue] = await Promise.all([done, probeEnqueues(prober, done, job('probe'))]);
    return { checkout: label, cancelMs, allCancelledMs, enqueue, load: [loadBefore, loadavg()[0] ?? 0] };
  } finally {
    control.close();
    prober.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

installCleanupHandlers(async () => {});
const rows: Row[] = [];
for (let run = 0; run < runs; run++) {
  const order = run % 2 === 0 ? checkouts : [...checkouts].reverse();
  for (const { label, dir } of order) {
    const row = await oneRun(label, dir);
    rows.push(row);
    process.stderr.write(
      `run ${run + 1} ${label}: cancel ${row.cancelMs.toFixed(0)} ms, all cancelled ${row.allCancelledMs.toFixed(0)} ms, enqueue max ${row.enqueue?.maxMs.toFixed(1)} ms\n`,
    );
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
};
const fmt = (ms: number | undefined) => (ms === undefined ? '—' : ms.toFixed(1));
console.log(`\nchain of ${chainJobs} jobs cancelled by its first job's cancel; ${runs} interleaved runs\n`);
console.log(
  '| checkout | run | CancelJob ms | all cancelled ms | enqueues | p50 ms | p99 ms | max ms | load |',
);
console.log('|---|---|---|---|---|---|---|---|---|');
rows.forEach((r, i) => {
  const e = r.enqueue;
  console.log(
    `| ${r.checkout} | ${Math.floor(i / checkouts.length) + 1} | ${r.cancelMs.toFixed(0)} | ${r.allCancelledMs.toFixed(0)} | ${e?.count ?? 0} | ${fmt(e?.p50Ms)} | ${fmt(e?.p99Ms)} | ${fmt(e?.maxMs)} | ${r.load.map((l) => l.toFixed(2)).join('→')} |`,
  );
});
console.log(
  '\n| checkout | median CancelJob ms | median all cancelled ms | median enqueue p99 ms | median enqueue max ms |',
);
console.log('|---|---|---|---|---|');
for (const { label } of checkouts) {
  const mine = rows.filter((r) => r.checkout === label);
  console.log(
    `| ${label} | ${median(mine.map((r) => r.cancelMs)).toFixed(0)} | ${median(mine.map((r) => r.allCancelledMs)).toFixed(0)} | ${fmt(median(mine.map((r) => r.enqueue?.p99Ms ?? Number.NaN)))} | ${fmt(median(mine.map((r) => r.enqueue?.maxMs ?? Number.NaN)))} |`,
  );
}
