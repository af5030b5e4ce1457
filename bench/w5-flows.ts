/**
 * W5 "fan-out / fan-in" (issue 33): flows of jobs that wait on other jobs, end to end,
 * sepp against BullMQ's FlowProducer, both fsync before acknowledging (sepp durability
 * full; Redis appendonly yes, appendfsync always).
 *
 * BullMQ's flows are trees whose parent runs after its children, so the shape both run
 * is the collector: `--children` jobs (20) and one collector that waits on all of them,
 * `--flows` times (1,000), and one wide flow of `--wide` children (10,000) and a collector.
 * sepp also runs the issue's whole shape, a root before the children (1 → 20 → 1), which
 * BullMQ cannot express as one flow. Producers (`--producers`, 10) enqueue the flows while
 * one worker (`--concurrency`, 50) runs them; a phase ends when every collector has been
 * acked. Figures: jobs/s end to end (first enqueue to last collector's ack) and the
 * server's CPU per edge (sepp's server process; redis-server for BullMQ), medians of
 * `--runs` (3), the systems interleaved and their order alternating from run to run.
 *
 *   npx tsx bench/w5-flows.ts [--runs 3] [--flows 1000] [--children 20] [--wide 10000]
 *                             [--only collector,root-collector,wide,plain] [--no-bullmq] [--prefill]
 *                             [--against main] [--profile DIR] [--store sqlite|postgres]
 *                             [--pg-statements N] [--prefetch auto[,0,500]] [--streams 1[,2]]
 *
 * `plain` (not run unless named in --only) is the control: the same jobs, `--flows` batches
 * of `--children` + 1, without edges (enqueueBatch, the same Worker), ended when every job
 * is acked; its figure is server CPU per job. `flat` (also only when named) sends the same
 * jobs as flows without edges (enqueueFlow): the flow call's own cost. --prefill enqueues
 * everything before the Worker starts (the W1 pattern of bench/cpu-per-job.ts), so the CPU
 * "until the producers were done" that each run prints is the enqueue's alone, and so is
 * the --profile.
 *
 * --only runs some shapes; --no-bullmq leaves BullMQ out. --against REF (a git ref or a
 * checkout) adds that server's runs, interleaved (bench/lib/trees.ts). --profile DIR writes
 * a CPU profile of this checkout's server per shape (last run), and one of this process (the
 * producers and the Worker: client-SHAPE.cpuprofile) over the same span. "server busy" is the
 * server's CPU time over the wall time: well under 100 % means the wall time goes elsewhere.
 *
 * --prefetch N sets the Worker's `prefetch` (jobs leased ahead beyond the 50 slots, held until a
 * slot frees; 0 leases one job per free slot; `auto`, the default as it is the SDK's, holds about
 * a second of work once the first runs finished) on every sepp Worker, children's and
 * collectors' alike (one Worker runs them all). A list (0,auto,500) runs this checkout's server
 * once per value, as separate systems interleaved with the others; `--against` runs with the
 * first value (its server only: the Worker is this checkout's SDK either way). BullMQ's Worker
 * has no such setting: it holds at most `concurrency` jobs.
 *
 * --streams N[,M] sets the Worker's `streams` (the Work streams its slots are spread over; absent:
 * the SDK's default, one per 1,000 slots); a list runs each value as its own system, like --prefetch.
 *
 * With `--store postgres`, sepp runs on a fresh PostgreSQL 15 cluster (tests/helpers/postgres.ts,
 * fsync on; a schema per run) and BullMQ is left out; the server CPU is sepp's process only,
 * and each run also prints PostgreSQL's CPU (every process of the cluster, exited backends
 * included). --pg-statements N loads pg_stat_statements and prints, after each sepp run, the
 * N statements that took the most execution time in it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker as BullWorker, FlowProducer } from 'bullmq';
import { Redis } from 'ioredis';
import { Flow, SeppClient } from '../clients/typescript/src/index.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { freePort, waitForPort } from './lib/net.ts';
import { cpuMicros } from './lib/proc-stats.ts';
import { installCleanupHandlers, spawnTracked, stopAll } from './lib/processes.ts';
import { Profiler } from './lib/profiler.ts';
import { BenchServer } from './lib/server-process.ts';
import { type SourceTree, sourceTree } from './lib/trees.ts';
import { commandOutput, packageVersion } from './lib/versions.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    flows: { type: 'string', default: '1000' },
    children: { type: 'string', default: '20' },
    wide: { type: 'string', default: '10000' },
    producers: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '50' },
    only: { type: 'string' },
    'no-bullmq': { type: 'boolean', default: false },
    prefill: { type: 'boolean', default: false },
    against: { type: 'string' },
    profile: { type: 'string' },
    store: { type: 'string', default: 'sqlite' },
    'pg-statements': { type: 'string' },
    prefetch: { type: 'string', default: 'auto' },
    streams: { type: 'string' },
  },
});
const runs = Number(args.runs);
const flows = Number(args.flows);
const children = Number(args.children);
const wide = Number(args.wide);
const producers = Number(args.producers);
const concurrency = Number(args.concurrency);
/** A Worker's `prefetch`: a number of jobs, or `auto` (the SDK's default). */
type Prefetch = number | 'auto';
const prefetches: Prefetch[] = args.prefetch.split(',').map((p) => (p === 'auto' ? p : Number(p)));
if (
  prefetches.some((p) => p !== 'auto' && (!Number.isInteger(p) || p < 0 || p > 1000)) ||
  new Set(prefetches).size !== prefetches.length
)
  throw new Error(
    '--prefetch: distinct values, comma-separated, each auto or an integer from 0 to 1000 (as the Worker allows)',
  );
/** --streams: the Worker's Work streams, a list (each value its own system); absent: the SDK's default. */
const streamCounts: (number | undefined)[] =
  args.streams === undefined ? [undefined] : args.streams.split(',').map(Number);
if (
  streamCounts.some((n) => n !== undefined && (!Number.isInteger(n) || n < 1 || n > concurrency)) ||
  new Set(streamCounts).size !== streamCounts.length
)
  throw new Error('--streams: distinct integers from 1 to --concurrency, comma-separated');
if (args.store !== 'sqlite' && args.store !== 'postgres') throw new Error('--store is sqlite or postgres');
/** With `--store postgres`: the cluster, and a `[store]` table with a new schema per run. */
const postgres =
  args.store === 'postgres'
    ? await startPostgres(
        args['pg-statements'] === undefined
          ? {}
          : {
              settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' },
            },
      ).then(async (cluster) => {
        const database = await cluster.createDatabase('w5');
        if (args['pg-statements'] !== undefined)
          await cluster.query('CREATE EXTENSION pg_stat_statements', [], database);
        return { cluster, database };
      })
    : undefined;
let schemas = 0;
const storeToml = () =>
  postgres === undefined
    ? ''
    : `[store]\nkind = "postgres"\nurl = "${postgres.cluster.urlWithoutPassword(postgres.database)}"\npassword_file = "${postgres.cluster.passwordFile}"\nschema = "w5_${++schemas}"\n`;

type Shape = 'collector' | 'root-collector' | 'wide' | 'plain' | 'flat';
interface Figure {
  jobs: number;
  edges: number;
  seconds: number;
  serverCpuUs: number;
  /** The server's CPU until the producers were done (sepp only): the worker ran meanwhile, unless --prefill. */
  enqueueCpuUs?: number;
  /** This process's CPU (producers and worker: the clients of either system). */
  clientCpuUs: number;
  /** sepp's group commits (each one fsync) in the phase; undefined for BullMQ. */
  commits?: number;
  /** Of those, the commits until the producers were done (sepp only). */
  enqueueCommits?: number;
  /** With --store postgres: every PostgreSQL process's CPU in the phase (backends that exited included). */
  pgCpuUs?: number;
}

/** PostgreSQL's CPU so far: the postmaster's children, living and reaped. */
const pgCpu = () => {
  const pid = postgres?.cluster.pid();
  return pid === undefined ? 0 : cpuMicros([pid]);
};

/** --pg-statements N: after each sepp run, the N statements with the most execution time in it. */
async function printStatements(label: string, edges: number): Promise<void> {
  const top = args['pg-statements'];
  if (postgres === undefined || top === undefined) return;
  const { rows } = await postgres.cluster.query<{ query: string; calls: string; ms: number; max: number }>(
    `SELECT query, calls::text, total_exec_time AS ms, max_exec_time AS max FROM pg_stat_statements
      ORDER BY total_exec_time DESC LIMIT $1`,
    [Number(top)],
    postgres.database,
  );
  console.error(`  ${label}: statements by execution time (µs per edge, calls, max ms)`);
  for (const r of rows)
    console.error(
      `    ${((r.ms * 1000) / Math.max(1, edges)).toFixed(1).padStart(7)} ${r.calls.padStart(7)} ${r.max.toFixed(1).padStart(7)}  ${r.query.replace(/\s+/g, ' ').slice(0, 110)}`,
    );
}

/** The shape's flows: how many, of how many children, with a root before them or not. */
function shapeOf(shape: Shape): {
  count: number;
  width: number;
  root: boolean;
  plain: boolean;
  flat: boolean;
} {
  const plain = shape === 'plain';
  const flat = shape === 'flat';
  if (shape === 'wide') return { count: 1, width: wide, root: false, plain, flat };
  return { count: flows, width: children, root: shape === 'root-collector', plain, flat };
}

const countJobs = (s: { count: number; width: number; root: boolean }) =>
  s.count * (s.width + 1 + (s.root ? 1 : 0));
const countEdges = (s: { count: number; width: number; root: boolean; plain: boolean; flat: boolean }) =>
  s.plain || s.flat ? 0 : s.count * s.width * (s.root ? 2 : 1);

/** `producers` callers take flow numbers from one counter until `count` are enqueued. */
async function produce(count: number, enqueue: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(producers, count) }, async () => {
      while (next < count) await enqueue(next++);
    }),
  );
}

async function runSepp(
  shape: Shape,
  dir: string,
  tree: SourceTree | undefined,
  prefetch: Prefetch,
  streams: number | undefined,
  profile?: string,
): Promise<Figure> {
  const config = join(dir, 'sepp.toml');
  // The wide flow needs more than the default limits (1,000 jobs per flow, 100 dependencies per job).
  writeFileSync(config, `[limits]\nmax_flow_jobs = 100000\nmax_dependencies_per_job = 10000\n${storeToml()}`);
  process.env.SEPP_BENCH_CONFIG = config;
  const server = await BenchServer.start(join(dir, 'data'), 'full', tree?.srcDir);
  const client = SeppClient.connect(`127.0.0.1:${server.port}`);
  const s = shapeOf(shape);
  try {
    let collected = 0;
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const jobs = countJobs(s);
    let completed = 0;
    // The flows end when every collector is acked; the plain control (no dependencies) when every job is.
    const startWorker = () => {
      const worker = client.worker({
        queues: ['w5'],
        concurrency,
        prefetch,
        ...(streams === undefined ? {} : { streams }),
        handlers: {
          root: () => {},
          child: () => {},
          collector: () => {},
        },
      });
      worker.on('completed', (job) => {
        if (s.plain || s.flat ? ++completed === jobs : job.type === 'collector' && ++collected === s.count)
          done();
      });
      worker.on('error', (e) => console.error('sepp worker:', e.message));
      return worker;
    };
    // --prefill enqueues everything first and then drains (bench/cpu-per-job.ts's W1 pattern).
    let worker = args.prefill ? undefined : startWorker();
    const before = await server.stats();
    if (postgres !== undefined && args['pg-statements'] !== undefined)
      await postgres.cluster.query('SELECT pg_stat_statements_reset()', [], postgres.database);
    const pg0 = pgCpu();
    // The client's profile (this process: the producers and the Worker) beside the server's.
    const clientProfiler = profile === undefined ? undefined : new Profiler();
    if (profile !== undefined) await server.profileStart();
    await clientProfiler?.start();
    const client0 = process.cpuUsage();
    const startedMs = performance.now();
    await produce(s.count, async () => {
      if (s.plain) {
        // The control: the same jobs (20 children and a collector per "flow") in one plain batch, no edges.
        const batch = Array.from({ length: s.width + 1 }, (_, i) => ({
          queue: 'w5',
          type: i < s.width ? 'child' : 'collector',
          payload: Buffer.alloc(0),
        }));
        await client.enqueueBatch(batch, { deadlineMs: 300_000 });
        return;
      }
      const flow = new Flow();
      if (s.root) flow.add('root', { queue: 'w5', type: 'root' });
      const names = Array.from({ length: s.width }, (_, i) => `c${i}`);
      for (const name of names)
        flow.add(name, { queue: 'w5', type: 'child', ...(s.root ? { after: ['root'] } : {}) });
      flow.add('collector', { queue: 'w5', type: 'collector', ...(s.flat ? {} : { after: names }) });
      // One call stores the whole flow: the wide one (10,002 jobs) takes longer than the default 10 s deadline under load.
      await client.enqueueFlow(flow, { deadlineMs: 300_000 });
    });
    const produced = await server.stats();
    // With --prefill the profile is the enqueue's alone.
    if (profile !== undefined && args.prefill) await server.profileStop(profile);
    worker ??= startWorker();
    await finished;
    const seconds = (performance.now() - startedMs) / 1000;
    const clientCpu = process.cpuUsage(client0);
    const pgCpuUs = pgCpu() - pg0;
    if (profile !== undefined && !args.prefill) await server.profileStop(profile);
    if (profile !== undefined) await clientProfiler?.stop(profile.replace(/server-([^/]*)$/, 'client-$1'));
    const after = await server.stats();
    await worker.close();
    return {
      jobs,
      edges: countEdges(s),
      seconds,
      serverCpuUs: (after.cpuMs - before.cpuMs) * 1000,
      enqueueCpuUs: (produced.cpuMs - before.cpuMs) * 1000,
      clientCpuUs: clientCpu.user + clientCpu.system,
      commits: after.commits - before.commits,
      enqueueCommits: produced.commits - before.commits,
      ...(postgres === undefined ? {} : { pgCpuUs }),
    };
  } finally {
    client.close();
    await server.stop();
  }
}

async function runBullmq(shape: Shape, dir: string): Promise<Figure> {
  const s = shapeOf(shape);
  if (s.root) throw new Error('BullMQ cannot run a root before the children in one flow');
  const port = await freePort();
  const redis = await spawnTracked(
    {
      name: 'redis',
      command: 'redis-server',
      args: [
        '--bind',
        '127.0.0.1',
        '--port',
        String(port),
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
      ],
    },
    dir,
  );
  await waitForPort(port, 10_000);
  const connection = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: null });
  const flowProducer = new FlowProducer({ connection });
  try {
    let collected = 0;
    let done: () => void = () => {};
    const finished = new Promise<void>((resolve) => {
      done = resolve;
    });
    const worker = new BullWorker(
      'w5',
      async (job) => {
        if (job.name === 'collector' && ++collected === s.count) setImmediate(done);
        return null;
      },
      { connection: { host: '127.0.0.1', port, maxRetriesPerRequest: null }, concurrency },
    );
    worker.on('error', (e) => console.error('bullmq worker:', e.message));
    await worker.waitUntilReady();
    const cpu0 = cpuMicros([redis.pid]);
    const client0 = process.cpuUsage();
    const startedMs = performance.now();
    await produce(s.count, async () => {
      await flowProducer.add({
        name: 'collector',
        queueName: 'w5',
        data: {},
        children: Array.from({ length: s.width }, () => ({ name: 'child', queueName: 'w5', data: {} })),
      });
    });
    await finished;
    const seconds = (performance.now() - startedMs) / 1000;
    const serverCpuUs = cpuMicros([redis.pid]) - cpu0;
    const clientCpu = process.cpuUsage(client0);
    await worker.close();
    return {
      jobs: countJobs(s),
      edges: countEdges(s),
      seconds,
      serverCpuUs,
      clientCpuUs: clientCpu.user + clientCpu.system,
    };
  } finally {
    await flowProducer.close();
    connection.disconnect();
    await redis.stop();
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const base = mkdtempSync(join(tmpdir(), 'sepp-w5-'));
installCleanupHandlers(async () => rmSync(base, { recursive: true, force: true }));
const shapes: Shape[] = ['collector', 'root-collector', 'wide'];
const controls: Shape[] = ['plain', 'flat'];
const only = args.only === undefined ? shapes : (args.only.split(',') as Shape[]);
for (const shape of only)
  if (!shapes.includes(shape) && !controls.includes(shape)) throw new Error(`--only: unknown shape ${shape}`);
const baseTree = args.against === undefined ? undefined : sourceTree(args.against);
if (baseTree !== undefined) installCleanupHandlers(async () => baseTree.cleanup?.());
if (args.profile !== undefined) mkdirSync(args.profile, { recursive: true });
/** A system the runs compare: this checkout's server at one --prefetch, the --against tree's, or BullMQ. */
interface System {
  key: string;
  kind: 'sepp' | 'base' | 'bullmq';
  /** The sepp Worker's prefetch (BullMQ: none). */
  prefetch: Prefetch;
  /** The sepp Worker's Work streams (undefined: the SDK's default). */
  streams?: number;
  label: string;
}
const seppLabel = postgres === undefined ? 'sepp' : 'sepp (PostgreSQL)';
const firstPrefetch = prefetches[0]!;
const systems: System[] = [
  ...prefetches.flatMap((prefetch) =>
    streamCounts.map((streams) => ({
      key: `sepp-p${prefetch}${streams === undefined ? '' : `-s${streams}`}`,
      kind: 'sepp' as const,
      prefetch,
      streams,
      label: `${seppLabel}, prefetch ${prefetch}${streams === undefined ? '' : `, ${streams} stream${streams === 1 ? '' : 's'}`}`,
    })),
  ),
  ...(baseTree === undefined
    ? []
    : [
        {
          key: 'base',
          kind: 'base' as const,
          prefetch: firstPrefetch,
          label: `sepp ${baseTree.label}, prefetch ${firstPrefetch}`,
        },
      ]),
  ...(args['no-bullmq'] || postgres !== undefined
    ? []
    : [{ key: 'bullmq', kind: 'bullmq' as const, prefetch: 0, label: 'BullMQ FlowProducer' }]),
];
const plan: { system: System; shape: Shape }[] = only.flatMap((shape) =>
  systems
    .filter((system) => system.kind !== 'bullmq' || (shape !== 'root-collector' && !controls.includes(shape)))
    .map((system) => ({ system, shape })),
);
const results = new Map<string, Figure[]>();
const loads: number[] = [];
for (let run = 0; run < runs; run++) {
  // The order alternates from run to run: the first system of a pair tends to pay more.
  const order = run % 2 === 0 ? plan : [...plan].reverse();
  for (const { system, shape } of order) {
    const runDir = mkdtempSync(join(base, `${system.key}-${shape}-`));
    const profile =
      system.kind === 'sepp' && run === runs - 1 && args.profile !== undefined
        ? join(
            args.profile,
            `server-${shape}${prefetches.length > 1 ? `-prefetch${system.prefetch}` : ''}${streamCounts.length > 1 ? `-streams${system.streams}` : ''}.cpuprofile`,
          )
        : undefined;
    const figure =
      system.kind === 'bullmq'
        ? await runBullmq(shape, runDir)
        : await runSepp(
            shape,
            runDir,
            system.kind === 'base' ? baseTree : undefined,
            system.prefetch,
            system.kind === 'sepp' ? system.streams : undefined,
            profile,
          );
    loads.push(loadavg()[0]!);
    const key = `${system.key} ${shape}`;
    if (system.kind !== 'bullmq') await printStatements(key, figure.edges || figure.jobs);
    results.set(key, [...(results.get(key) ?? []), figure]);
    console.error(
      `run ${run + 1}: ${key}: ${(figure.jobs / figure.seconds).toFixed(0)} jobs/s, ` +
        (figure.edges > 0
          ? `${(figure.serverCpuUs / figure.edges).toFixed(1)} µs server CPU per edge, `
          : '') +
        `${(figure.serverCpuUs / figure.jobs).toFixed(1)} per job` +
        (figure.enqueueCpuUs === undefined
          ? ', '
          : ` (${(figure.enqueueCpuUs / figure.jobs).toFixed(1)} until the producers were done), `) +
        `server busy ${((figure.serverCpuUs / 1e6 / figure.seconds) * 100).toFixed(0)} %, ` +
        `client busy ${((figure.clientCpuUs / 1e6 / figure.seconds) * 100).toFixed(0)} %` +
        (figure.commits === undefined
          ? ''
          : `, ${(figure.jobs / figure.commits).toFixed(1)} jobs per commit` +
            // The enqueue's own (with --prefill, nothing else commits meanwhile).
            ` (${(figure.jobs / figure.enqueueCommits!).toFixed(1)} until the producers were done)`) +
        (figure.pgCpuUs === undefined
          ? ''
          : `, PostgreSQL ${(figure.pgCpuUs / Math.max(1, figure.edges || figure.jobs)).toFixed(1)} µs CPU per ${figure.edges > 0 ? 'edge' : 'job'}`) +
        ` (load ${loadavg()[0]!.toFixed(1)})`,
    );
  }
}
await stopAll();
baseTree?.cleanup?.();
await postgres?.cluster.close();
rmSync(base, { recursive: true, force: true });

const row = (key: string, label: string) => {
  const figures = results.get(key) ?? [];
  const rates = figures.map((f) => f.jobs / f.seconds);
  const cpu = figures.map((f) => f.serverCpuUs / (f.edges > 0 ? f.edges : f.jobs));
  const cpuPerJob = figures.map((f) => f.serverCpuUs / f.jobs);
  const enqueuePerJob = figures.flatMap((f) =>
    f.enqueueCpuUs === undefined ? [] : [f.enqueueCpuUs / f.jobs],
  );
  const busy = figures.map((f) => f.serverCpuUs / 1e6 / f.seconds);
  const jobsPerCommit = figures.flatMap((f) => (f.commits === undefined ? [] : [f.jobs / f.commits]));
  const clientCpu = figures.map((f) => f.clientCpuUs / (f.edges > 0 ? f.edges : f.jobs));
  const f = figures[0]!;
  return {
    label,
    jobs: f.jobs,
    edges: f.edges,
    rate: median(rates),
    cpu: median(cpu),
    cpuPerJob: median(cpuPerJob),
    enqueuePerJob: enqueuePerJob.length === 0 ? undefined : median(enqueuePerJob),
    busy: median(busy),
    jobsPerCommit: jobsPerCommit.length === 0 ? undefined : median(jobsPerCommit),
    clientCpu: median(clientCpu),
    spread: `${Math.min(...rates).toFixed(0)}–${Math.max(...rates).toFixed(0)}`,
  };
};
const shapeLabel: Record<Shape, string> = {
  collector: `${flows} × (${children} → 1)`,
  'root-collector': `${flows} × (1 → ${children} → 1)`,
  wide: `1 × (${wide} → 1)`,
  plain: `control: ${flows} × ${children + 1} plain jobs`,
  flat: `control: ${flows} flows of ${children + 1} jobs without edges`,
};
const rows = only.flatMap((shape) =>
  systems
    .filter((system) => results.has(`${system.key} ${shape}`))
    .map((system) => row(`${system.key} ${shape}`, `${system.label}: ${shapeLabel[shape]}`)),
);
const lines = [
  `| shape | jobs | edges | jobs/s end to end (median) | runs | server CPU µs per edge (median) | server CPU µs per job | … until the producers were done | client CPU µs per edge | server busy | jobs per commit |`,
  `| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |`,
  ...rows.map(
    (r) =>
      `| ${r.label} | ${r.jobs.toLocaleString('en-US')} | ${r.edges.toLocaleString('en-US')} | ${r.rate.toFixed(0)} | ${r.spread} | ${r.edges > 0 ? r.cpu.toFixed(1) : '–'} | ${r.cpuPerJob.toFixed(1)} | ${r.enqueuePerJob?.toFixed(1) ?? '–'} | ${r.edges > 0 ? r.clientCpu.toFixed(1) : '–'} | ${(r.busy * 100).toFixed(0)} % | ${r.jobsPerCommit?.toFixed(1) ?? '–'} |`,
  ),
  '',
  `Medians of ${runs} runs, systems interleaved, order alternating. Load average during the runs: ` +
    `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}. ${producers} producers, one worker of concurrency ${concurrency} ` +
    `(sepp's prefetch ${prefetches.join(', ')}${args.streams === undefined ? '' : `, Work streams ${args.streams}`}${baseTree === undefined ? '' : `; ${baseTree.label} at ${firstPrefetch}`}); ` +
    (postgres === undefined
      ? `sepp durability full; redis-server ${/v=(\S+)/.exec(commandOutput('redis-server', ['--version']))?.[1] ?? '?'} ` +
        `--appendonly yes --appendfsync always, bullmq ${packageVersion('bullmq')} (a Worker of concurrency ${concurrency}).`
      : 'sepp on PostgreSQL 15 (fsync and synchronous_commit on, a schema per run); server CPU is the sepp process only.'),
];
// Ratios of the medians: each of this checkout's prefetch values against BullMQ (rate, server and
// server + client CPU), against --against, and against the first --prefetch value.
const byKey = new Map([...results.keys()].map((key) => [key, row(key, '')] as const));
const ratios = only.flatMap((shape) =>
  systems
    .filter((ours) => ours.kind === 'sepp')
    .flatMap((ours) => {
      const mine = byKey.get(`${ours.key} ${shape}`);
      if (mine === undefined) return [];
      return systems
        .filter((other) => other.kind !== 'sepp' || (other.prefetch === firstPrefetch && other !== ours))
        .flatMap((other) => {
          const theirs = byKey.get(`${other.key} ${shape}`);
          if (theirs === undefined) return [];
          return [
            `| ${shapeLabel[shape]} | ${ours.label} / ${other.label} | ${(mine.rate / theirs.rate).toFixed(2)}× | ` +
              `${(mine.cpu / theirs.cpu).toFixed(2)}× | ${((mine.cpu + mine.clientCpu) / (theirs.cpu + theirs.clientCpu)).toFixed(2)}× |`,
          ];
        });
    }),
);
if (ratios.length > 0) {
  lines.push(
    '',
    '| shape | systems | jobs/s | server CPU per edge (per job without edges) | server + client CPU per edge |',
    '| --- | --- | ---: | ---: | ---: |',
    ...ratios,
  );
}
console.log(lines.join('\n'));
