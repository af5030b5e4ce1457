/**
 * Startup and memory with a big backlog: stores 1,000,000 jobs through the
 * engine's batch API, then opens a fresh engine on that data directory (and on
 * an empty one) in a new process each time and reports open time and RSS.
 * Targets (SPEC §10): open < 3 s with 1,000,000 jobs; RSS independent of the backlog.
 *
 *   npx tsx bench/engine-open.ts [--jobs 1000000] [--runs 3] [--dir DIR] [--keep]
 *
 * Not part of `npm test`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/engine/clock.ts';
import { Engine } from '../src/engine/engine.ts';
import { defaultEngineOptions } from '../src/engine/settings.ts';
import type { EnqueueRequest } from '../src/engine/types.ts';
import { databaseFileName, openDataDir } from '../src/store/sqlite/open.ts';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import { bytesReadSoFar, machineDescription, markdownTable, median, mib, parseArgs } from './engine-lib.ts';

const args = parseArgs(process.argv.slice(2));
const queues = Array.from({ length: 10 }, (_, i) => `queue-${i}`);

interface OpenSample {
  openMs: number;
  rssBeforeBytes: number;
  rssAfterOpenBytes: number;
  rssAfterOpsBytes: number;
  bytesReadByOpen: number;
  listQueuesMs: number;
  maintenanceMs: number;
  reserveAckMs: number;
  closeMs: number;
  jobs: number;
}

/** In a fresh process: open the engine, time it and the first operations, measure RSS. */
async function child(dataDir: string): Promise<void> {
  global.gc?.();
  const rssBeforeBytes = process.memoryUsage().rss;
  const readBefore = bytesReadSoFar();
  let t = performance.now();
  const engine = await Engine.open(openSqliteStore(dataDir, { durability: 'full' }), defaultEngineOptions(), {
    clock: systemClock,
  });
  const openMs = performance.now() - t;
  const bytesReadByOpen = bytesReadSoFar() - readBefore;
  const rssAfterOpenBytes = process.memoryUsage().rss;

  t = performance.now();
  const listed = await engine.listQueues();
  const listQueuesMs = performance.now() - t;
  t = performance.now();
  await engine.runMaintenance();
  const maintenanceMs = performance.now() - t;
  t = performance.now();
  const [job] = await engine.reserve({ queues: [queues[0]!] });
  if (job) await engine.ack({ jobId: job.id, attempt: job.attempt });
  const reserveAckMs = performance.now() - t;
  const rssAfterOpsBytes = process.memoryUsage().rss;
  t = performance.now();
  engine.close();
  const closeMs = performance.now() - t;
  const jobs = listed.reduce((n, q) => n + Object.values(q.counts).reduce((a, b) => a + b, 0), 0);
  const sample: OpenSample = {
    openMs,
    rssBeforeBytes,
    rssAfterOpenBytes,
    rssAfterOpsBytes,
    bytesReadByOpen,
    listQueuesMs,
    maintenanceMs,
    reserveAckMs,
    closeMs,
    jobs,
  };
  process.stdout.write(`${JSON.stringify(sample)}\n`);
}

/** Fills `dataDir` with `total` jobs the way producers would: batches of 1,000, eight in flight. */
async function fill(dataDir: string, total: number): Promise<{ seconds: number; batches: number }> {
  const store = openSqliteStore(dataDir, { durability: 'full' });
  let batches = 0;
  const engine = await Engine.open(store, defaultEngineOptions(), {
    clock: systemClock,
    onBatch: () => {
      batches++;
    },
  });
  const payload = Buffer.alloc(256, 'x');
  const started = performance.now();
  let made = 0;
  const batch = (): EnqueueRequest[] => {
    const n = Math.min(1000, total - made);
    const requests: EnqueueRequest[] = [];
    for (let i = 0; i < n; i++, made++) {
      const request: EnqueueRequest = {
        queue: queues[made % queues.length]!,
        type: made % 3 === 0 ? 'email.send' : 'report.build',
        payload,
        contentType: 'application/json',
        priority: made % 10,
      };
      // 5 % scheduled up to a day ahead, 10 % with an idempotency key, 10 % with metadata.
      if (made % 20 === 0) request.delayMs = (made % 86_400) * 1000;
      if (made % 10 === 1) request.idempotencyKey = `order-${made}`;
      if (made % 10 === 2) request.metadata = { tenant: `t${made % 97}`, source: 'bench' };
      requests.push(request);
    }
    return requests;
  };
  const producer = async () => {
    while (made < total) {
      const results = await engine.enqueueBatch(batch());
      if (results.some((r) => !r.ok)) throw new Error('a job of the fill was rejected');
    }
  };
  await Promise.all(Array.from({ length: 8 }, producer));
  // Some leased (lease 1 h) and dead jobs, as a live server has.
  for (const queue of queues) {
    const leased = await engine.reserve({ queues: [queue], maxJobs: 1000, leaseMs: 3_600_000 });
    const dead = leased.slice(0, 100);
    await Promise.all(
      dead.map((j) =>
        engine.nack({ jobId: j.id, attempt: j.attempt, error: 'bench', directive: { kind: 'dead_letter' } }),
      ),
    );
  }
  const seconds = (performance.now() - started) / 1000;
  engine.close();
  return { seconds, batches };
}

function measure(dataDir: string, runs: number): OpenSample[] {
  const samples: OpenSample[] = [];
  for (let i = 0; i < runs; i++) {
    const result = spawnSync(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', new URL(import.meta.url).pathname, '--child', dataDir],
      { encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`the child failed: ${result.stderr}`);
    samples.push(JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '') as OpenSample);
  }
  return samples;
}

async function main(): Promise<void> {
  const childDir = args.get('child');
  if (childDir !== undefined) return child(childDir);

  const total = Number(args.get('jobs') ?? 1_000_000);
  const runs = Number(args.get('runs') ?? 3);
  const root = args.get('dir') ?? mkdtempSync(join(tmpdir(), 'sepp-bench-open-'));
  mkdirSync(root, { recursive: true });
  const emptyDir = join(root, 'empty');
  const fullDir = join(root, 'full');
  try {
    openDataDir(emptyDir, { durability: 'full' }).close();
    console.error(`filling ${fullDir} with ${total.toLocaleString('en')} jobs …`);
    const filled = await fill(fullDir, total);
    console.error(`filled in ${filled.seconds.toFixed(1)} s (${filled.batches} group commits)`);

    const rows: string[][] = [];
    for (const [name, dir] of [
      ['empty', emptyDir],
      [`${total.toLocaleString('en')} jobs`, fullDir],
    ] as const) {
      const samples = measure(dir, runs);
      const m = (pick: (s: OpenSample) => number) => median(samples.map(pick));
      rows.push([
        name,
        Math.round(m((s) => s.jobs)).toLocaleString('en'),
        mib(statSync(join(dir, databaseFileName)).size),
        `${m((s) => s.openMs).toFixed(0)} ms`,
        mib(m((s) => s.rssBeforeBytes)),
        mib(m((s) => s.rssAfterOpenBytes)),
        mib(m((s) => s.rssAfterOpsBytes)),
        `${(m((s) => s.bytesReadByOpen) / 1024).toFixed(0)} KiB`,
        `${m((s) => s.listQueuesMs).toFixed(1)} ms`,
        `${m((s) => s.maintenanceMs).toFixed(1)} ms`,
        `${m((s) => s.reserveAckMs).toFixed(1)} ms`,
        `${m((s) => s.closeMs).toFixed(0)} ms`,
      ]);
    }
    const table = markdownTable(
      [
        'database',
        'jobs',
        'db file',
        'open',
        'RSS before open',
        'RSS after open',
        'RSS after first ops',
        'read by open',
        'listQueues',
        'first maintenance',
        'first reserve+ack',
        'close',
      ],
      rows,
    );
    console.log(
      [
        `### Engine open and memory (${runs} runs each, medians; a fresh process per run; warm page cache)`,
        '',
        `Filled through \`enqueueBatch\` (1,000 jobs per call, 8 in flight, durability full, 256-byte payloads, 10 queues, ` +
          `5 % scheduled, 10 % with idempotency keys, 10,000 leased, 1,000 dead): ${filled.seconds.toFixed(1)} s, ` +
          `${Math.round(total / filled.seconds).toLocaleString('en')} jobs/s, ${filled.batches} group commits.`,
        '',
        table,
        '',
        '"read by open" counts the bytes the process read through read(2) while opening (from /proc/self/io rchar, cache hits included): what open touches, independent of the page cache.',
        '',
        ...machineDescription(root),
      ].join('\n'),
    );
  } finally {
    if (!args.has('keep')) rmSync(root, { recursive: true, force: true });
  }
}

await main();
