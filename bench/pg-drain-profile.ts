/**
 * Where a W1 drain on the PostgreSQL store goes (issue 37): one sepp server (in this
 * process) on a fresh PostgreSQL 15 cluster with pg_stat_statements, `--jobs` jobs
 * enqueued in batches, then one SDK Worker of concurrency `--concurrency` acks them all.
 * Prints the drain's jobs/s, PostgreSQL's commits per job (pg_stat_database) and, per
 * statement of the drain, its calls, rows and time per job (pg_stat_statements).
 *
 *   npx tsx bench/pg-drain-profile.ts --jobs 20000 --concurrency 50 [--streams N] [--prefetch N]
 *     [--profile FILE.cpuprofile] [--experiment SQL] [--analyze] [--store sqlite] [--warmup N] [--pool]
 *
 * It also prints where the writer's wall time went (writer.ts `writerTrace`: its statements'
 * round trips, its COMMITs, and its idle time between batches), WAL syncs and how busy the
 * event loop was; `--experiment SQL` runs SQL on the fresh schema before the enqueue (a layout
 * change tried before it is written as a migration); `--analyze` runs ANALYZE on the jobs table
 * once they are enqueued, as autovacuum would have in a deployment (plans with statistics).
 *
 * `--profile` writes this process's CPU profile of the drain (server and client: the
 * server's frames are under src/ and node_modules/pg*, the client's under clients/;
 * bench/pg-profile-areas.ts sums them by area). It prints this process's CPU per job by
 * thread: the main thread, and V8's helper threads (its optimizing compiler, mostly).
 * `--store sqlite` drains the same jobs on a SQLite store (the same engine), for comparison.
 * `--prefetch N` gives the Worker that `prefetch` (jobs leased beyond its slots, refilled in
 * chunks), as the harness's `--set sepp.prefetch=N`; the warm-up drain uses it too. `--pool` drains
 * as the peer harness does (bench/systems/sepp-worker-pool.ts: `--concurrency` bench workers, each
 * awaiting its job's durable ack); in this process the client shares the server's event loop, so
 * for the harness's batches use bench/pg-chain.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { connectPostgres } from '../src/store/postgres/connect.ts';
import { type BatchTrace, writerTrace } from '../src/store/postgres/writer.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { startTestServer } from '../tests/helpers/server.ts';
import { cpuMicros } from './lib/proc-stats.ts';
import { Profiler } from './lib/profiler.ts';
import { drainJobs, enqueueJobs } from './lib/sdk-phases.ts';
import { drainThroughPool } from './systems/sepp-worker-pool.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    streams: { type: 'string' },
    prefetch: { type: 'string', default: '0' },
    top: { type: 'string', default: '12' },
    profile: { type: 'string' },
    experiment: { type: 'string' },
    store: { type: 'string', default: 'postgres' },
    warmup: { type: 'string', default: '0' },
    analyze: { type: 'boolean', default: false },
    pool: { type: 'boolean', default: false },
  },
});
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);
const warmup = Number(values.warmup);
const prefetch = Number(values.prefetch);
if (!Number.isInteger(prefetch) || prefetch < 0)
  throw new Error(`--prefetch ${values.prefetch}: a whole number ≥ 0`);

/**
 * `--warmup N`: N jobs enqueued and drained first, unmeasured, so the measured drain runs on
 * code V8 already optimized (a short drain in a new process pays its optimizing compiler).
 */
async function warmUp(client: SeppClient): Promise<void> {
  if (warmup <= 0) return;
  await enqueueJobs(client, 'w1', warmup, 10, 500);
  await drainJobs(client, 'w1', warmup, { concurrency, transport: 'stream', prefetch });
}

if (values.store === 'sqlite') {
  // The same drain on the SQLite store (same engine, other store): this process's figures only.
  await sqliteDrain();
  process.exit(0);
}
const cluster = await startPostgres({
  settings: {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track': 'all',
    track_wal_io_timing: 'on',
  },
});
const database = await cluster.createDatabase('bench');
// Made as sepp's own connections are (connect.ts): a client of another shape, in this process,
// made V8 deoptimize the store's code that had seen only sepp's clients (the writer's batch
// among it) and optimize it again during the measured drain.
const admin = await connectPostgres(
  {
    url: cluster.urlWithoutPassword(database),
    password: cluster.password,
    schema: 'public',
    statementTimeoutMs: 60_000,
  },
  () => {},
);
await admin.query('CREATE EXTENSION pg_stat_statements');
const server = await startTestServer({
  toml: `[queues.w1]\n[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "sepp"\n`,
});
const client = SeppClient.connect(server.address);
try {
  if (values.experiment !== undefined) {
    // A layout change tried before it is written as a migration (say `DROP INDEX sepp.x`).
    await admin.query(values.experiment);
    console.log(`experiment: ${values.experiment}`);
  }
  await warmUp(client);
  await enqueueJobs(client, 'w1', jobs, 10, 500);
  if (values.analyze) {
    // As a deployment whose autovacuum has analyzed the table (the harness's runs are too short).
    await admin.query('ANALYZE sepp.jobs');
    console.log('analyzed sepp.jobs before the drain');
  }
  await admin.query('SELECT pg_stat_statements_reset()');
  const commits = async () =>
    Number(
      (
        await admin.query<{ c: string }>(
          'SELECT xact_commit::text AS c FROM pg_stat_database WHERE datname = $1',
          [database],
        )
      ).rows[0]?.c,
    );
  const c0 = await commits();
  const walSync = async () =>
    (
      await admin.query<{ n: string; ms: string }>(
        'SELECT wal_sync::text AS n, wal_sync_time::text AS ms FROM pg_stat_wal',
      )
    ).rows[0];
  const w0 = await walSync();
  const batches: BatchTrace[] = [];
  writerTrace.sink = (trace) => batches.push(trace);
  const elu0 = performance.eventLoopUtilization();
  const postmaster = cluster.pid();
  const pgCpu = () => (postmaster === undefined ? 0 : cpuMicros([postmaster]));
  const pg0 = pgCpu();
  const cpu0 = process.cpuUsage();
  const threads0 = threadTicks();
  const switches0 = mainSwitches();
  const profiler = values.profile === undefined ? undefined : new Profiler();
  await profiler?.start();
  console.error(`draining (pid ${process.pid}, PostgreSQL ${postmaster})`);
  const started = performance.now();
  // --pool: the peer harness's drain (~50 acks and ~2.4 units per commit at prefetch 500, as in
  // the harness), which the plain SDK drain's batches (hundreds of acks) have not.
  if (values.pool) await drainThroughPool(client, 'w1', jobs, { workers: concurrency, prefetch });
  else
    await drainJobs(client, 'w1', jobs, {
      concurrency,
      transport: 'stream',
      prefetch,
      ...(values.streams === undefined ? {} : { streams: Number(values.streams) }),
    });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const threads1 = threadTicks();
  const switches1 = mainSwitches();
  const elu = performance.eventLoopUtilization(elu0);
  writerTrace.sink = undefined;
  const w1 = await walSync();
  if (values.profile !== undefined) await profiler?.stop(values.profile);
  const pgUs = pgCpu() - pg0;
  const c1 = await commits();
  console.log(
    `drain: ${jobs} jobs in ${seconds.toFixed(2)} s = ${Math.round(jobs / seconds)} jobs/s; ` +
      `${((c1 - c0) / jobs).toFixed(3)} commits/job; this process (server + client) ` +
      `${Math.round((cpu.user + cpu.system) / jobs)} µs CPU/job (user ${Math.round(cpu.user / jobs)}, system ${Math.round(cpu.system / jobs)}), PostgreSQL ${Math.round(pgUs / jobs)} µs/job; ` +
      `load ${loadavg()[0]?.toFixed(1)}`,
  );
  console.log(threadFigures(threads0, threads1, jobs));
  console.log(
    `main thread context switches per batch: ${((switches1.voluntary - switches0.voluntary) / Math.max(1, batches.length)).toFixed(1)} voluntary (it waited for I/O), ` +
      `${((switches1.preempted - switches0.preempted) / Math.max(1, batches.length)).toFixed(1)} preempted`,
  );
  console.log(
    writerFigures(batches, seconds, jobs, elu.utilization, {
      syncs: Number(w1?.n) - Number(w0?.n),
      ms: Number(w1?.ms) - Number(w0?.ms),
    }),
  );
  const { rows } = await admin.query<{ query: string; calls: string; rows: string; ms: string }>(
    `SELECT query, calls::text, rows::text, total_exec_time::text AS ms FROM pg_stat_statements
      ORDER BY total_exec_time DESC LIMIT $1`,
    [Number(values.top)],
  );
  console.log('| statement | calls/job | rows/call | exec µs/job |\n| --- | ---: | ---: | ---: |');
  for (const r of rows) {
    const text = r.query.replace(/\s+/g, ' ').slice(0, 90);
    console.log(
      `| ${text} | ${(Number(r.calls) / jobs).toFixed(3)} | ${(Number(r.rows) / Math.max(1, Number(r.calls))).toFixed(1)} | ${((Number(r.ms) * 1000) / jobs).toFixed(1)} |`,
    );
  }
} finally {
  client.close();
  await server.dispose();
  await admin.end();
  await cluster.close();
}

/** `--store sqlite`: the drain on a SQLite store in a temporary directory, this process's CPU by thread. */
async function sqliteDrain(): Promise<void> {
  const server = await startTestServer({ toml: '[queues.w1]\n' });
  const client = SeppClient.connect(server.address);
  try {
    await warmUp(client);
    await enqueueJobs(client, 'w1', jobs, 10, 500);
    const threads0 = threadTicks();
    const cpu0 = process.cpuUsage();
    const profiler = values.profile === undefined ? undefined : new Profiler();
    await profiler?.start();
    console.error(`draining (pid ${process.pid}, SQLite)`);
    const started = performance.now();
    await drainJobs(client, 'w1', jobs, { concurrency, transport: 'stream', prefetch });
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const threads1 = threadTicks();
    if (values.profile !== undefined) await profiler?.stop(values.profile);
    console.log(
      `drain (SQLite): ${jobs} jobs in ${seconds.toFixed(2)} s = ${Math.round(jobs / seconds)} jobs/s; this process (server + client) ` +
        `${Math.round((cpu.user + cpu.system) / jobs)} µs CPU/job (user ${Math.round(cpu.user / jobs)}, system ${Math.round(cpu.system / jobs)}); load ${loadavg()[0]?.toFixed(1)}`,
    );
    console.log(threadFigures(threads0, threads1, jobs));
  } finally {
    client.close();
    await server.dispose();
  }
}

/** The main thread's context switches so far: voluntary (it waited) and not (it was preempted). */
function mainSwitches(): { voluntary: number; preempted: number } {
  const status = readFileSync(`/proc/self/task/${process.pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { voluntary: field('voluntary_ctxt_switches'), preempted: field('nonvoluntary_ctxt_switches') };
}

/** CPU ticks (1/100 s, user and system) of each thread of this process, by thread id and name. */
function threadTicks(): Map<string, { user: number; system: number }> {
  const ticks = new Map<string, { user: number; system: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const text = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
      const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
      ticks.set(`${tid} ${name}`, { user: Number(rest[11]), system: Number(rest[12]) });
    } catch {
      // The thread ended meanwhile.
    }
  }
  return ticks;
}

/**
 * This process's CPU per job by thread: the main thread (JavaScript, the sockets' system calls)
 * and the rest (the garbage collector's helpers, libuv's pool, the profiler's sampler), from
 * /proc/self/task: a profile samples the main thread's wall time, not its CPU.
 */
function threadFigures(
  before: Map<string, { user: number; system: number }>,
  after: Map<string, { user: number; system: number }>,
  jobs: number,
): string {
  const main = `${process.pid} `;
  let mainUser = 0;
  let mainSystem = 0;
  const others = new Map<string, number>();
  for (const [key, t] of after) {
    const t0 = before.get(key) ?? { user: 0, system: 0 };
    const user = (t.user - t0.user) * 10_000;
    const system = (t.system - t0.system) * 10_000;
    if (key.startsWith(main)) {
      mainUser = user;
      mainSystem = system;
    } else {
      const name = key.slice(key.indexOf(' ') + 1);
      others.set(name, (others.get(name) ?? 0) + user + system);
    }
  }
  const per = (us: number) => Math.round(us / jobs);
  const rest = [...others]
    .filter(([, us]) => us > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([name, us]) => `${name} ${per(us)}`)
    .join(', ');
  return `threads µs CPU/job: main ${per(mainUser + mainSystem)} (user ${per(mainUser)}, system ${per(mainSystem)}); others: ${rest || 'none'}`;
}

/** Where the writer's wall time went during the drain (writer.ts `writerTrace`). */
function writerFigures(
  batches: readonly BatchTrace[],
  seconds: number,
  jobs: number,
  eventLoopBusy: number,
  wal: { syncs: number; ms: number },
): string {
  const sum = (f: (b: BatchTrace) => number) => batches.reduce((a, b) => a + f(b), 0);
  const quantile = (f: (b: BatchTrace) => number, q: number) => {
    const sorted = batches.map(f).sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  };
  const wallMs = seconds * 1000;
  const unitsMs = sum((b) => b.unitsMs);
  const commitMs = sum((b) => b.commitMs);
  const idleMs = sum((b) => b.idleBeforeMs);
  const statements = sum((b) => b.statements);
  const pct = (ms: number) => `${((100 * ms) / wallMs).toFixed(0)} %`;
  const ms = (f: (b: BatchTrace) => number) =>
    `${quantile(f, 0.5).toFixed(2)} / ${quantile(f, 0.9).toFixed(2)}`;
  return [
    `writer: ${batches.length} batches = ${(batches.length / seconds).toFixed(0)} commits/s, ` +
      `${(jobs / batches.length).toFixed(1)} jobs and ${(sum((b) => b.units) / batches.length).toFixed(1)} units per batch, ` +
      `${(statements / batches.length).toFixed(1)} statements per batch`,
    `writer wall: units (statements' round trips) ${pct(unitsMs)}, COMMIT ${pct(commitMs)}, ` +
      `idle between batches ${pct(idleMs)}; per batch p50 / p90 ms: units ${ms((b) => b.unitsMs)}, ` +
      `COMMIT ${ms((b) => b.commitMs)}, idle before ${ms((b) => b.idleBeforeMs)}`,
    `writer round trips per batch: ${(sum((b) => b.statements + b.commands) / batches.length).toFixed(1)} queries sent ` +
      `(${(sum((b) => b.commands) / batches.length).toFixed(1)} BEGIN/savepoint/COMMIT), ` +
      `${(sum((b) => b.awaited) / batches.length).toFixed(1)} statements awaited + the COMMIT; ` +
      `units' wall: waiting for answers ${pct(sum((b) => b.awaitedMs))}, the rest (sepp's code and whatever the ` +
      `event loop ran meanwhile) ${pct(unitsMs - sum((b) => b.awaitedMs))}; per batch p50 ms: awaited ${ms((b) => b.awaitedMs)}, ` +
      `rest ${ms((b) => b.unitsMs - b.awaitedMs)}`,
    `WAL: ${wal.syncs} syncs (${(wal.syncs / batches.length).toFixed(2)} per batch), ${(wal.ms / Math.max(1, wal.syncs)).toFixed(2)} ms each; ` +
      `event loop busy ${(eventLoopBusy * 100).toFixed(0)} % (server and client: one process)`,
  ].join('\n');
}
