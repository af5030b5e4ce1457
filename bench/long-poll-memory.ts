/**
 * Where the load test's memory goes (issue 29, item 16): starts `sepp serve`
 * (a checkout's sources under tsx, bench/lib/sepp-serve.ts) and measures its
 * resident memory
 *
 * - per long-polling worker: `--workers` unary Reserve calls waiting
 *   (`--step` at a time), as tests/faults/load.test.ts has them;
 * - per connection: `--connections` more client connections, each after one call;
 * - per job: `--producers` paced producers for `--seconds` while every worker
 *   acks what it gets and polls again (RSS sampled every 250 ms, as the load
 *   test does; the server's CPU from /proc), then 10 s idle.
 *
 * No Events subscriber: with none, the engine records no job events (event-log.ts).
 *
 *   npx tsx bench/long-poll-memory.ts [--workers 1000] [--step 250] [--connections 100]
 *       [--seconds 60] [--producers 20] [--runs 1] [--against DIR] [--server-env NAME=VALUE,...]
 *
 * `--against DIR` measures the server of another checkout too (its sources, say an
 * export of main), interleaved run by run, the order alternating; the medians of
 * the runs come last. Not part of `npm test`: the load test keeps its bound.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { credentials } from '@grpc/grpc-js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { call, testJob } from '../tests/helpers/server.ts';
import { markdownTable, median, parseArgs } from './engine-lib.ts';
import { installCleanupHandlers } from './lib/processes.ts';
import { rssMib, startSeppServe } from './lib/sepp-serve.ts';

const args = parseArgs(process.argv.slice(2));
const workers = Number(args.get('workers') ?? 1000);
const step = Number(args.get('step') ?? 250);
const extraConnections = Number(args.get('connections') ?? 100);
const seconds = Number(args.get('seconds') ?? 60);
const producers = Number(args.get('producers') ?? 20);
const runs = Number(args.get('runs') ?? 1);
const channels = 10;
const serverEnv = Object.fromEntries(
  String(args.get('server-env') ?? '')
    .split(',')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const root = new URL('..', import.meta.url).pathname;
const checkouts = [
  { label: 'this checkout', dir: root },
  ...(args.has('against') ? [{ label: String(args.get('against')), dir: String(args.get('against')) }] : []),
];

/** A process's memory from /proc, in MiB: anonymous (heap, stacks) and file-backed (code, mapped files). */
function memoryOf(pid: number): { anonymousMib: number; fileMib: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
  return { anonymousMib: field('RssAnon'), fileMib: field('RssFile') };
}

/** CPU time the process has used, user + system, in ms (/proc/PID/stat, clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Figures {
  idleMib: number;
  waitersMib: number;
  perWaiterKib: number;
  perConnectionKib: number;
  jobs: number;
  peakMib: number;
  peakAnonymousMib: number;
  cpuUsPerJob: number;
  idleAfterMib: number;
}

const clientFor = (port: number) =>
  new QueueServiceClient(`127.0.0.1:${port}`, credentials.createInsecure(), {
    // Separate connections, as separate worker processes would have.
    'grpc.use_local_subchannel_pool': 1,
  });

async function measure(checkout: { label: string; dir: string }): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-lp-memory-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(config, '', { mode: 0o600 });
  const server = await startSeppServe({
    srcDir: checkout.dir,
    config,
    dir,
    env: { SEPP_DISK_RESERVE_BYTES: '0', ...serverEnv },
  });
  const { pid, grpcPort } = server;
  const clients = Array.from({ length: channels }, () => clientFor(grpcPort));
  const first = clients[0]!;
  const waiting = async () =>
    (await call(first, first.listQueues, { pageSize: 0, pageToken: '' })).queues.find((q) => q.name === 'lp')
      ?.waitingWorkers ?? 0;
  let stop = false;
  let moved = 0;
  const runsOfWorkers: Promise<void>[] = [];
  try {
    await call(first, first.resumeQueue, { queue: 'lp', allowMissing: true });
    await sleep(2000);
    const idleMib = rssMib(pid);
    const worker = async (i: number) => {
      const c = clients[i % channels]!;
      while (!stop) {
        try {
          const { jobs } = await call(c, c.reserve, {
            maxResponseBytes: 0,
            queues: ['lp'],
            maxJobs: 1,
            leaseDurationMs: 30_000,
            waitTimeoutMs: 60_000,
            workerId: `w${i}`,
          });
          for (const j of jobs) {
            await call(c, c.ack, { jobId: j.jobId, attempt: j.attempt });
            moved++;
          }
        } catch {
          if (!stop) await sleep(100);
        }
      }
    };
    for (let n = Math.min(step, workers); n <= workers; n += step) {
      for (let i = runsOfWorkers.length; i < n; i++) runsOfWorkers.push(worker(i));
      for (let i = 0; i < 600 && (await waiting()) < n; i++) await sleep(100);
    }
    await sleep(2000);
    const waitersMib = rssMib(pid);

    const more = Array.from({ length: extraConnections }, () => clientFor(grpcPort));
    await Promise.all(more.map((c) => call(c, c.getServerInfo, {})));
    await sleep(2000);
    const connectionsMib = rssMib(pid);
    for (const c of more) c.close();

    const beforeJobs = rssMib(pid);
    let peakMib = beforeJobs;
    let peakAnonymousMib = memoryOf(pid).anonymousMib;
    const sampler = setInterval(() => {
      peakMib = Math.max(peakMib, rssMib(pid));
      peakAnonymousMib = Math.max(peakAnonymousMib, memoryOf(pid).anonymousMib);
    }, 250);
    const cpuBefore = cpuMsOf(pid);
    const movedBefore = moved;
    const deadline = Date.now() + seconds * 1000;
    let produced = 0;
    const producer = async (i: number) => {
      const c = clients[i % channels]!;
      while (Date.now() < deadline) {
        await call(c, c.enqueue, { job: testJob('lp', { payload: Buffer.from(`p${i}-${produced++}`) }) });
        // Paced, as in the load test: the workers, not the producers, are mostly waiting.
        await sleep(5);
      }
    };
    await Promise.all(Array.from({ length: producers }, (_, i) => producer(i)));
    for (let i = 0; i < 200 && moved - movedBefore < produced; i++) await sleep(50);
    const jobs = moved - movedBefore;
    const cpuUsPerJob = ((cpuMsOf(pid) - cpuBefore) * 1000) / Math.max(1, jobs);
    await sleep(10_000);
    clearInterval(sampler);
    return {
      idleMib,
      waitersMib,
      perWaiterKib: ((waitersMib - idleMib) * 1024) / workers,
      perConnectionKib: ((connectionsMib - waitersMib) * 1024) / Math.max(1, extraConnections),
      jobs,
      peakMib,
      peakAnonymousMib,
      cpuUsPerJob,
      idleAfterMib: rssMib(pid),
    };
  } finally {
    stop = true;
    await server.stop(10_000);
    await Promise.all(runsOfWorkers);
    for (const c of clients) c.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

installCleanupHandlers(async () => {});
const header = [
  'server',
  'idle MiB',
  `${workers} waiting MiB`,
  'KiB per waiter',
  'KiB per connection',
  `jobs in ${seconds} s`,
  'peak MiB',
  'peak anonymous MiB',
  'server CPU µs/job',
  '10 s after MiB',
];
const cells = (label: string, f: Figures) => [
  label,
  f.idleMib.toFixed(0),
  f.waitersMib.toFixed(0),
  f.perWaiterKib.toFixed(1),
  f.perConnectionKib.toFixed(1),
  String(f.jobs),
  f.peakMib.toFixed(0),
  f.peakAnonymousMib.toFixed(0),
  f.cpuUsPerJob.toFixed(0),
  f.idleAfterMib.toFixed(0),
];
const results = new Map<string, Figures[]>(checkouts.map((c) => [c.label, []]));
const rows: string[][] = [];
for (let run = 0; run < runs; run++) {
  // The order alternates, so neither checkout always runs on the machine the other just warmed.
  const order = run % 2 === 0 ? checkouts : [...checkouts].reverse();
  for (const checkout of order) {
    const figures = await measure(checkout);
    results.get(checkout.label)!.push(figures);
    rows.push(cells(`${checkout.label}, run ${run + 1}`, figures));
    console.error(
      `run ${run + 1}, ${checkout.label}: peak ${figures.peakMib.toFixed(0)} MiB, ${figures.jobs} jobs`,
    );
  }
}
console.log(
  `npx tsx bench/long-poll-memory.ts ${process.argv.slice(2).join(' ')}\n` +
    `${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, Node ${process.version}, ` +
    `load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at the end; ${workers} long-polling workers on ${channels} connections, ` +
    `${producers} producers for ${seconds} s${Object.keys(serverEnv).length > 0 ? `, server env ${JSON.stringify(serverEnv)}` : ''}\n`,
);
console.log(markdownTable(header, rows));
if (runs > 1) {
  const medianOf = (all: Figures[], pick: (f: Figures) => number) => median(all.map(pick));
  console.log(`\nMedians of ${runs} runs:\n`);
  console.log(
    markdownTable(
      header,
      [...results].map(([label, all]) =>
        cells(label, {
          idleMib: medianOf(all, (f) => f.idleMib),
          waitersMib: medianOf(all, (f) => f.waitersMib),
          perWaiterKib: medianOf(all, (f) => f.perWaiterKib),
          perConnectionKib: medianOf(all, (f) => f.perConnectionKib),
          jobs: medianOf(all, (f) => f.jobs),
          peakMib: medianOf(all, (f) => f.peakMib),
          peakAnonymousMib: medianOf(all, (f) => f.peakAnonymousMib),
          cpuUsPerJob: medianOf(all, (f) => f.cpuUsPerJob),
          idleAfterMib: medianOf(all, (f) => f.idleAfterMib),
        }),
      ),
    ),
  );
}
