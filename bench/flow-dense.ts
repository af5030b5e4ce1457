/**
 * What a dense flow's read costs (task batchguard18): starts `sepp serve` (SQLite) from each
 * checkout, makes there the flow of attack5 — `--parents` jobs (default 100) each waited on
 * by the same `--children` jobs (default 10,000): parents × children edges, a million by
 * default, made over EnqueueBatch calls of 1,000 — then times GetFlow from one child,
 * `--reads` times per run, the checkouts interleaved read by read (the order swapped each
 * run). Prints each run's median read with the 1-minute load average (the machine is
 * shared), then each checkout's median of the runs' medians, with what the answer held.
 *
 *   npx tsx bench/flow-dense.ts [--parents 100] [--children 10000] [--runs 3] [--reads 5]
 *     [--against /work/wt/base8]
 *
 * Not a test: the table is read, never asserted.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { EnqueueJob, type EnqueueResult } from '../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { parseArgs } from './engine-lib.ts';
import { installCleanupHandlers } from './lib/processes.ts';
import { type SeppServe, startSeppServe } from './lib/sepp-serve.ts';
import { unary } from './lib/unary-probe.ts';

const args = parseArgs(process.argv.slice(2));
const parents = Number(args.get('parents') ?? 100);
const children = Number(args.get('children') ?? 10_000);
const runs = Number(args.get('runs') ?? 3);
const reads = Number(args.get('reads') ?? 5);
const root = new URL('..', import.meta.url).pathname;
const checkouts = [
  { label: 'this checkout', dir: root },
  ...(args.has('against') ? [{ label: String(args.get('against')), dir: String(args.get('against')) }] : []),
];

const job = (dependsOn: string[] = []) =>
  EnqueueJob.fromPartial({ queue: 'dense', type: 'd', payload: Buffer.alloc(0), dependsOn });

interface Served {
  label: string;
  server: SeppServe;
  client: QueueServiceClient;
  dir: string;
  start: string;
}

function accepted(result: EnqueueResult): string {
  if (result.outcome?.$case !== 'accepted') throw new Error(`a job was refused: ${JSON.stringify(result)}`);
  return result.outcome.value.jobId;
}

async function serve(label: string, srcDir: string): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-flow-dense-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(config, '');
  const server = await startSeppServe({ srcDir, config, dir });
  const client = new QueueServiceClient(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
  const made = await unary(client, client.enqueueBatch, {
    jobs: Array.from({ length: parents }, () => job()),
  });
  const parentIds = made.results.map(accepted);
  let start = '';
  for (let sent = 0; sent < children; sent += 1000) {
    const size = Math.min(1000, children - sent);
    const answer = await unary(client, client.enqueueBatch, {
      jobs: Array.from({ length: size }, () => job(parentIds)),
    });
    start ||= accepted(answer.results[0]!);
    answer.results.forEach(accepted);
  }
  return { label, server, client, dir, start };
}

installCleanupHandlers(async () => {});
const served: Served[] = [];
for (const { label, dir } of checkouts) served.push(await serve(label, dir));
const perRun = new Map<
  string,
  { ms: number; load: number; jobs: number; edges: number; truncated: boolean }[]
>();
try {
  for (let run = 0; run < runs; run++) {
    const order = run % 2 === 0 ? served : [...served].reverse();
    const times = new Map<string, number[]>();
    let answer = new Map<string, { jobs: number; edges: number; truncated: boolean }>();
    for (let read = 0; read < reads; read++) {
      for (const s of order) {
        const started = performance.now();
        const flow = await unary(s.client, s.client.getFlow, { jobId: s.start, limit: 0 });
        const ms = performance.now() - started;
        times.set(s.label, [...(times.get(s.label) ?? []), ms]);
        answer = answer.set(s.label, {
          jobs: flow.jobs.length,
          edges: flow.edges.length,
          truncated: flow.truncated,
        });
      }
    }
    for (const s of served) {
      const row = { ms: median(times.get(s.label)!), load: loadavg()[0] ?? 0, ...answer.get(s.label)! };
      perRun.set(s.label, [...(perRun.get(s.label) ?? []), row]);
      process.stderr.write(`run ${run + 1} ${s.label}: median GetFlow ${row.ms.toFixed(0)} ms\n`);
    }
  }
} finally {
  for (const s of served) {
    s.client.close();
    await s.server.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
}

console.log(
  `\nGetFlow from one of ${children} jobs each waiting on the same ${parents} (${parents * children} edges); ` +
    `${runs} runs of ${reads} reads, checkouts interleaved\n`,
);
console.log('| checkout | run | median GetFlow ms | jobs | edges | truncated | load |');
console.log('|---|---|---|---|---|---|---|');
for (const [label, rows] of perRun) {
  rows.forEach((r, i) => {
    console.log(
      `| ${label} | ${i + 1} | ${r.ms.toFixed(0)} | ${r.jobs} | ${r.edges} | ${r.truncated} | ${r.load.toFixed(2)} |`,
    );
  });
}
console.log('\n| checkout | median of the runs ms |');
console.log('|---|---|');
for (const [label, rows] of perRun) console.log(`| ${label} | ${median(rows.map((r) => r.ms)).toFixed(0)} |`);
