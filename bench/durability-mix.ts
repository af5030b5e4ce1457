/**
 * W1 with a relaxed queue beside a full one (issue 35, durability per queue): one
 * server (server.durability full), queue `ledger` full and queue `metrics` relaxed
 * (set at run time). Three phases per run, each W1 (enqueue, then drain):
 *
 *   full alone      `producers` callers enqueue to ledger, one Worker drains it
 *   relaxed alone   the same on metrics
 *   side by side    half the callers on each queue at once, then one Worker per queue
 *
 * and prints jobs/s per queue and phase, and jobs per group commit, as medians of
 * --runs fresh servers.
 *
 *   npx tsx bench/durability-mix.ts [--runs 3] [--jobs 5000] [--producers 50] [--concurrency 50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { markdownTable, median } from './engine-lib.ts';
import { drainJobs, enqueueJobs } from './lib/sdk-phases.ts';
import { BenchServer, probeFsyncMs } from './lib/server-process.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '5000' },
    producers: { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '50' },
  },
});
const runs = Number(args.runs);
const jobs = Number(args.jobs);
const producers = Number(args.producers);
const concurrency = Number(args.concurrency);

type Row = Record<string, number>;

/** Jobs per second of `work`, which handles `count` jobs. */
async function rate(count: number, work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return count / ((performance.now() - started) / 1000);
}

async function oneRun(): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-durability-mix-'));
  const server = await BenchServer.start(dir, 'full');
  const client = SeppClient.connect(`127.0.0.1:${server.port}`);
  try {
    // A queue's settings change once it exists: one job each makes them, a purge takes it away.
    for (const [queue, durability] of [
      ['metrics', 'relaxed'],
      ['ledger', 'full'],
    ] as const) {
      await client.enqueue(queue, 'noop', Buffer.alloc(0));
      await client.queues.purge(queue);
      await client.queues.setSettings(queue, { durability });
    }
    const drain = (queue: string, n: number) =>
      drainJobs(client, queue, n, { concurrency, transport: 'stream' });
    const row: Row = {};
    const commits = async () => (await server.stats()).commits;

    let c0 = await commits();
    row['full alone: enqueue jobs/s'] = await rate(jobs, () =>
      enqueueJobs(client, 'ledger', jobs, producers),
    );
    row['full alone: jobs per commit (enqueue)'] = jobs / Math.max(1, (await commits()) - c0);
    row['full alone: drain jobs/s'] = await rate(jobs, () => drain('ledger', jobs));

    c0 = await commits();
    row['relaxed alone: enqueue jobs/s'] = await rate(jobs, () =>
      enqueueJobs(client, 'metrics', jobs, producers),
    );
    row['relaxed alone: jobs per commit (enqueue)'] = jobs / Math.max(1, (await commits()) - c0);
    row['relaxed alone: drain jobs/s'] = await rate(jobs, () => drain('metrics', jobs));

    const half = Math.floor(jobs / 2);
    const [ledgerIn, metricsIn] = await Promise.all([
      rate(half, () => enqueueJobs(client, 'ledger', half, producers / 2)),
      rate(half, () => enqueueJobs(client, 'metrics', half, producers / 2)),
    ]);
    row['side by side: full enqueue jobs/s'] = ledgerIn;
    row['side by side: relaxed enqueue jobs/s'] = metricsIn;
    const [ledgerOut, metricsOut] = await Promise.all([
      rate(half, () => drain('ledger', half)),
      rate(half, () => drain('metrics', half)),
    ]);
    row['side by side: full drain jobs/s'] = ledgerOut;
    row['side by side: relaxed drain jobs/s'] = metricsOut;
    return row;
  } finally {
    await client.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const load0 = loadavg()[0] ?? 0;
const fsyncMs = probeFsyncMs(tmpdir());
const results: Row[] = [];
for (let i = 0; i < runs; i++) {
  const row = await oneRun();
  console.error(`run ${i + 1}/${runs}: ${JSON.stringify(row)}`);
  results.push(row);
}
const names = Object.keys(results[0] ?? {});
console.log(
  `### W1 with a relaxed queue beside a full one: medians of ${runs} runs (${jobs} jobs a phase, ${producers} producers, concurrency ${concurrency})\n`,
);
console.log(
  markdownTable(
    ['figure', 'median', 'runs'],
    names.map((name) => {
      const values = results.map((r) => r[name] ?? 0);
      const fmt = (v: number) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(2));
      return [name, fmt(median(values)), values.map(fmt).join(' / ')];
    }),
  ),
);
console.log(
  `\n- load average (1 min) ${load0.toFixed(2)} at the start, ${(loadavg()[0] ?? 0).toFixed(2)} at the end; ${cpus().length} CPUs; fdatasync of 4 KiB ${fsyncMs.toFixed(2)} ms`,
);
