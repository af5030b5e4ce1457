/**
 * Engine throughput with group commit against one transaction per operation
 * (GroupCommitter maxBatchOperations = 1), at 1, 8 and 64 concurrent callers,
 * durability full (an fsync per commit), for enqueue and for reserve + ack.
 * Each cell runs for a fixed time on a fresh data directory.
 *
 *   npx tsx bench/engine-throughput.ts [--seconds 3] [--rounds 3] [--concurrency 1,8,64] [--ready-jobs 60000] [--dir DIR]
 *                                      [--batch N]
 *
 * --batch N makes every call carry N jobs, the W3 shape without gRPC: enqueueBatch of N,
 * reserve of up to N, then one ackBatch of what it got (SPEC's "engine alone in batches").
 *
 * Not part of `npm test`.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { defaultEngineOptions } from '../src/engine/settings.ts';
import type { CommitStats as BatchStats, EnqueueRequest } from '../src/engine/types.ts';
import { databaseFileName } from '../src/store/sqlite/open.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { machineDescription, markdownTable, median, parseArgs, percentile } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const seconds = Number(args.get('seconds') ?? 3);
const concurrencies = (args.get('concurrency') ?? '1,8,64').split(',').map(Number);
const batch = Number(args.get('batch') ?? 1);
const root = args.get('dir') ?? tmpdir();

type Workload = 'enqueue' | 'reserve+ack';
type Mode = 'group commit' | 'one transaction per operation';

interface Cell {
  workload: Workload;
  mode: Mode;
  concurrency: number;
  /** Jobs finished per second: enqueued, or reserved and acked. */
  jobsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  commitsPerSecond: number;
  operationsPerCommit: number;
  /** The ready jobs ran out before the time was up (the rate is still right; the run was shorter). */
  ranDry: boolean;
}

const payload = Buffer.alloc(256, 'x');
const request = (): EnqueueRequest => ({ queue: 'bench', type: 'work', payload });

/** One data directory holding `jobs` ready jobs, copied for every reserve + ack cell (filling is not measured). */
async function readyTemplate(jobs: number): Promise<string> {
  const dataDir = mkdtempSync(join(root, 'sepp-bench-template-'));
  const engine = await Engine.open(openSqliteStore(dataDir, { durability: 'full' }), defaultEngineOptions(), {
    clock: systemClock,
  });
  for (let made = 0; made < jobs; made += 10_000) {
    await Promise.all(
      Array.from({ length: 10 }, () => engine.enqueueBatch(Array.from({ length: 1000 }, request))),
    );
  }
  engine.close(); // checkpoints: the database file alone holds everything
  return dataDir;
}

async function runCell(workload: Workload, mode: Mode, concurrency: number, template: string): Promise<Cell> {
  const dataDir = mkdtempSync(join(root, 'sepp-bench-tput-'));
  if (workload === 'reserve+ack')
    copyFileSync(join(template, databaseFileName), join(dataDir, databaseFileName));
  const store = openSqliteStore(dataDir, {
    durability: 'full',
    ...(mode === 'one transaction per operation' ? { maxBatchOperations: 1 } : {}),
  });
  const batches: BatchStats[] = [];
  let counting = false;
  const engine = await Engine.open(store, defaultEngineOptions(), {
    clock: systemClock,
    onBatch: (stats) => {
      if (counting) batches.push(stats);
    },
  });
  try {
    const latencies: number[] = [];
    let jobs = 0;
    let stop = false;
    let ranDry = false;
    const caller = async () => {
      while (!stop) {
        const t = performance.now();
        if (workload === 'enqueue') {
          if (batch === 1) await engine.enqueue(request());
          else await engine.enqueueBatch(Array.from({ length: batch }, request));
          jobs += batch;
        } else {
          const leased = await engine.reserve({ queues: ['bench'], maxJobs: batch });
          if (leased.length === 0) {
            ranDry = true;
            stop = true;
            break;
          }
          if (batch === 1) await engine.ack({ jobId: leased[0]!.id, attempt: leased[0]!.attempt });
          else await engine.ackBatch(leased.map((job) => ({ jobId: job.id, attempt: job.attempt })));
          jobs += leased.length;
        }
        latencies.push(performance.now() - t);
      }
    };
    counting = true;
    const started = performance.now();
    const timer = setTimeout(() => {
      stop = true;
    }, seconds * 1000);
    // Calls in flight when the time is up still count: the window ends when the last one returns.
    await Promise.all(Array.from({ length: concurrency }, caller));
    clearTimeout(timer);
    const elapsedS = (performance.now() - started) / 1000;
    counting = false;
    latencies.sort((a, b) => a - b);
    const operations = batches.reduce((n, b) => n + b.operations, 0);
    return {
      workload,
      mode,
      concurrency,
      jobsPerSecond: jobs / elapsedS,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      commitsPerSecond: batches.length / elapsedS,
      operationsPerCommit: operations / Math.max(1, batches.length),
      ranDry,
    };
  } finally {
    engine.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const templateJobs = Number(args.get('ready-jobs') ?? 60_000);
const rounds = Number(args.get('rounds') ?? 3);
console.error(`filling a template with ${templateJobs.toLocaleString('en')} ready jobs …`);
const template = await readyTemplate(templateJobs);
// Every round runs every cell, the two modes back to back, so that both see
// the same machine (other work on it changes fsync latency from minute to minute).
const samples: Cell[] = [];
for (let round = 1; round <= rounds; round++) {
  for (const workload of ['enqueue', 'reserve+ack'] as const) {
    for (const concurrency of concurrencies) {
      for (const mode of ['group commit', 'one transaction per operation'] as const) {
        const cell = await runCell(workload, mode, concurrency, template);
        console.error(
          `round ${round}: ${workload} × ${concurrency}, ${mode}: ${Math.round(cell.jobsPerSecond)} jobs/s`,
        );
        samples.push(cell);
      }
    }
  }
}

/** The median of every measure over the rounds. */
function summary(workload: Workload, mode: Mode, concurrency: number): Cell | undefined {
  const of = samples.filter(
    (c) => c.workload === workload && c.mode === mode && c.concurrency === concurrency,
  );
  if (of.length === 0) return undefined;
  const m = (pick: (c: Cell) => number) => median(of.map(pick));
  return {
    workload,
    mode,
    concurrency,
    jobsPerSecond: m((c) => c.jobsPerSecond),
    p50Ms: m((c) => c.p50Ms),
    p99Ms: m((c) => c.p99Ms),
    commitsPerSecond: m((c) => c.commitsPerSecond),
    operationsPerCommit: m((c) => c.operationsPerCommit),
    ranDry: of.some((c) => c.ranDry),
  };
}

const rows: string[][] = [];
for (const workload of ['enqueue', 'reserve+ack'] as const) {
  for (const concurrency of concurrencies) {
    const group = summary(workload, 'group commit', concurrency);
    const single = summary(workload, 'one transaction per operation', concurrency);
    if (group === undefined || single === undefined) continue;
    const cellText = (c: Cell) =>
      `${Math.round(c.jobsPerSecond).toLocaleString('en')}${c.ranDry ? ' (ran dry)' : ''}`;
    const latencyText = (c: Cell) => `${c.p50Ms.toFixed(2)} / ${c.p99Ms.toFixed(2)}`;
    rows.push([
      workload,
      String(concurrency),
      cellText(group),
      cellText(single),
      `${(group.jobsPerSecond / single.jobsPerSecond).toFixed(1)}×`,
      latencyText(group),
      latencyText(single),
      `${Math.round(group.commitsPerSecond).toLocaleString('en')} × ${group.operationsPerCommit.toFixed(1)}`,
      `${Math.round(single.commitsPerSecond).toLocaleString('en')} × ${single.operationsPerCommit.toFixed(1)}`,
    ]);
  }
}

rmSync(template, { recursive: true, force: true });
console.log(
  [
    `### Engine throughput: group commit vs one transaction per operation (durability full, ${seconds} s per cell, medians of ${rounds} rounds${batch === 1 ? '' : `, ${batch} jobs per call`})`,
    '',
    `Jobs/s counts jobs enqueued, or jobs reserved and acked (two writes each). Latency is per call (enqueue${batch === 1 ? '' : 'Batch'}) or per reserve + ack${batch === 1 ? '' : 'Batch'} pair, in ms. Commits: commits/s × operations per commit.`,
    '',
    markdownTable(
      [
        'workload',
        'callers',
        'group commit jobs/s',
        'one txn/op jobs/s',
        'speed-up',
        'group p50 / p99 ms',
        'one txn/op p50 / p99 ms',
        'group commits/s × ops',
        'one txn/op commits/s × ops',
      ],
      rows,
    ),
    '',
    ...machineDescription(root),
  ].join('\n'),
);
