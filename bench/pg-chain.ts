/**
 * The chain of one PostgreSQL writer batch in the peer harness's W1 shape (issue 37, task
 * pgcpu-37): `sepp serve` from a checkout's sources in a process of its own on a fresh
 * PostgreSQL 15 cluster (fsync on, pg_stat_statements), `--jobs` jobs enqueued by 50 producers
 * awaiting one `enqueue` each, then drained as the harness drains (bench/systems/sepp-worker-pool.ts:
 * 50 bench workers each reserving one job and awaiting its durable ack, through one SDK Worker
 * with `--prefetch`). Prints, per run, both phases' jobs/s and CPU per job (the sepp server's
 * process and PostgreSQL's), and for the drain what a writer batch was: jobs, units, queries
 * sent, statements awaited, and where its wall time went (writer.ts `writerTrace`, heard in the
 * server by bench/lib/pg-chain-trace.ts), with the drain's statements (pg_stat_statements).
 *
 *   npx tsx bench/pg-chain.ts --jobs 20000 [--runs 3] [--prefetch 500] [--against /work/wt/base4]
 *     [--experiment SQL] [--explain] [--top N] [--streams N] [--warmup N]
 *
 * `--warmup N` first enqueues and drains N jobs the same way, untimed, so the measured phases
 * (and `--profile`'s) run on a warm server: V8's optimizing compiler of a fresh process is out.
 *
 * `--profile PREFIX` writes the server's CPU profile of each drain to PREFIX.RUN.TREE.cpuprofile
 * (bench/pg-profile-areas.ts sums it by area). `--heap-profile PREFIX` writes the server's sampling heap
 * profile of each drain, freed objects included, to PREFIX.RUN.TREE.heapprofile (bench/pg-heap-areas.ts
 * sums the bytes allocated per job by area). `--heap-keep old` keeps only the objects freed once promoted to the
 * old generation (and those still alive), `--heap-keep live` only those alive at the drain's end. `--streams N` gives the drain's SDK Worker N Work streams (the SDK's default is one per 1,000 slots).
 *
 * `--node-options STR` is the server's NODE_OPTIONS (`--max-semi-space-size=64`, `--trace-gc`), and
 * `--server-log PREFIX` keeps the server's output in PREFIX.RUN.TREE.log; with `--trace-gc` it holds V8's
 * trace of every garbage collection during the drain (`--trace-gc-nvp`). The drain's line gives
 * the server's CPU per job, then split: the process's user and system time, and its main thread's
 * (the rest is V8's helper threads: its garbage collector's and its optimizing compiler's).
 *
 * The drain's line also splits PostgreSQL's CPU per job by process (`pgCpuByKind`): the backends
 * (sepp's connections), the autovacuum workers (their own CPU while they run; an exited one's is
 * counted with the exited processes), the other background processes by name (walwriter,
 * checkpointer…), and the processes that exited during the drain; with the autovacuum runs on
 * `jobs` it finished.
 *
 * `--config-extra TOML` is appended to the server's sepp.toml (`\n` for a new line: `'[limits]\nfinished_outcome_ms = 0'`).
 * `--experiment SQL` runs SQL on each run's migrated schema before the enqueue (`DROP INDEX sepp.x`).
 * `--against DIR` runs DIR's sources too, alternating with this checkout's in every run (the
 * order swapped each run), so a change is measured against its base in the same run.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { cpuMicros, descendants, readStat } from './lib/proc-stats.ts';
import { enqueueJobs } from './lib/sdk-phases.ts';
import { startSeppServe } from './lib/sepp-serve.ts';
import { drainThroughPool } from './systems/sepp-worker-pool.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    runs: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '50' },
    prefetch: { type: 'string', default: '500' },
    against: { type: 'string' },
    top: { type: 'string', default: '8' },
    explain: { type: 'boolean', default: false },
    experiment: { type: 'string' },
    streams: { type: 'string' },
    profile: { type: 'string' },
    'heap-profile': { type: 'string' },
    'server-log': { type: 'string' },
    'trace-gc': { type: 'boolean', default: false },
    'heap-keep': { type: 'string', default: 'all' },
    'config-extra': { type: 'string' },
    'node-options': { type: 'string' },
    warmup: { type: 'string', default: '0' },
  },
});
const jobs = Number(values.jobs);
const runs = Number(values.runs);
const concurrency = Number(values.concurrency);
const prefetch = Number(values.prefetch);
const warmup = Number(values.warmup);
const here = new URL('..', import.meta.url).pathname;
const trees = values.against === undefined ? [here] : [here, values.against];
const traceModule = new URL('./lib/pg-chain-trace.ts', import.meta.url).href;

/** One batch as writer.ts reports it (a base checkout may lack the newer fields). */
interface Batch {
  units: number;
  statements: number;
  commands?: number;
  awaited?: number;
  awaitedMs?: number;
  idleBeforeMs: number;
  queuedAtCommit?: number;
  unitsMs: number;
  commitMs: number;
}

/**
 * `--explain`: auto_explain logs the plan, with its actual times and buffers, of every statement
 * that took 1 ms or more (the lease, in a W1 drain); the end of the run prints the last two.
 */
const explain: Record<string, string> = values.explain
  ? {
      shared_preload_libraries: 'pg_stat_statements,auto_explain',
      'auto_explain.log_min_duration': '1',
      'auto_explain.log_analyze': 'on',
      'auto_explain.log_buffers': 'on',
      'auto_explain.log_timing': 'on',
    }
  : {};
const cluster = await startPostgres({
  settings: {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track': 'top',
    // Plans per call: 0 for a statement whose cached plan is reused, 1 for one planned at every call.
    'pg_stat_statements.track_planning': 'on',
    ...explain,
  },
});
const postmaster = cluster.pid();
const pgCpu = () => (postmaster === undefined ? 0 : cpuMicros([postmaster]));

/**
 * PostgreSQL's CPU so far in µs by kind of process, from /proc: each live child of the postmaster
 * by its title (`postgres: walwriter`; a backend's title names its user and client address, so all
 * backends are one kind), and the postmaster's own plus its exited children's (`exited`: mostly
 * autovacuum workers that finished). A process that exits between two readings moves its CPU from
 * its kind to `exited`, so a drain's split is exact only in its sum.
 */
function pgCpuByKind(): Map<string, number> {
  const byKind = new Map<string, number>();
  if (postmaster === undefined) return byKind;
  const add = (kind: string, ticks: number) => byKind.set(kind, (byKind.get(kind) ?? 0) + ticks * 1e4);
  const root = readStat(postmaster);
  if (root !== undefined) add('postmaster and exited', root.ownTicks + root.reapedChildTicks);
  for (const pid of descendants([postmaster])) {
    const stat = readStat(pid);
    if (stat === undefined) continue;
    let title = '';
    try {
      title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch {}
    const kind = /\(\d+\)|\[local\]/.test(title)
      ? 'backends'
      : title.replace(/^postgres: /, '').replace(/^autovacuum worker.*/, 'autovacuum workers');
    add(kind, stat.ownTicks);
  }
  return byKind;
}

/** The autovacuum and autoanalyze runs on `jobs` so far (pg_stat_user_tables). */
async function jobsAutovacuums(database: string): Promise<[number, number]> {
  const db = new (await import('pg')).default.Client(cluster.connection(database));
  await db.connect();
  try {
    const { rows } = await db.query<{ v: string; a: string }>(
      `SELECT autovacuum_count::text AS v, autoanalyze_count::text AS a FROM pg_stat_user_tables WHERE relname = 'jobs'`,
    );
    return [Number(rows[0]?.v ?? 0), Number(rows[0]?.a ?? 0)];
  } finally {
    await db.end();
  }
}
const admin = new (await import('pg')).default.Client(cluster.connection());
await admin.connect();
await admin.query('CREATE EXTENSION pg_stat_statements');

async function runOnce(tree: string, run: number): Promise<string> {
  const database = await cluster.createDatabase('chain');
  const dir = mkdtempSync(join(tmpdir(), 'sepp-pg-chain-'));
  const out = join(dir, 'batches.json');
  const config = join(dir, 'sepp.toml');
  writeFileSync(
    config,
    `[queues.w1]\n[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "sepp"\n${values['config-extra'] === undefined ? '' : `${values['config-extra'].replaceAll('\\n', '\n')}\n`}`,
  );
  mkdirSync(join(dir, 'data'));
  const serve = await startSeppServe({
    srcDir: tree,
    config,
    dir,
    preload: [traceModule],
    env: {
      SEPP_PG_CHAIN_SRC: tree,
      ...(values['node-options'] === undefined ? {} : { NODE_OPTIONS: values['node-options'] }),
      SEPP_PG_CHAIN_OUT: out,
      ...(values.profile === undefined
        ? {}
        : { SEPP_PG_CHAIN_PROFILE: `${values.profile}.${run}.${trees.indexOf(tree)}.cpuprofile` }),
      ...(values['trace-gc'] ? { SEPP_PG_CHAIN_TRACE_GC: '1' } : {}),
      SEPP_PG_CHAIN_HEAP_KEEP: values['heap-keep'],
      ...(values['heap-profile'] === undefined
        ? {}
        : { SEPP_PG_CHAIN_HEAP: `${values['heap-profile']}.${run}.${trees.indexOf(tree)}.heapprofile` }),
    },
  });
  const client = SeppClient.connect(`127.0.0.1:${serve.grpcPort}`);
  const batches = async (): Promise<Batch[]> => {
    if (existsSync(out)) unlinkSync(out);
    process.kill(serve.pid, 'SIGUSR2');
    for (let i = 0; i < 200 && !existsSync(out); i++) await sleep(10);
    return JSON.parse(readFileSync(out, 'utf8')) as Batch[];
  };
  try {
    await client.ready(15_000);
    if (values.experiment !== undefined) {
      // A layout change tried before it is written as a migration (`DROP INDEX sepp.x`), on the migrated schema.
      const db = new (await import('pg')).default.Client(cluster.connection(database));
      await db.connect();
      await db.query(values.experiment).finally(() => db.end());
    }
    const measure = async (work: () => Promise<void>) => {
      const kinds0 = pgCpuByKind();
      const split0 = cpuSplit(serve.pid);
      const s0 = cpuMicros([serve.pid]);
      const p0 = pgCpu();
      const t0 = performance.now();
      await work();
      const seconds = (performance.now() - t0) / 1000;
      return {
        perSecond: Math.round(jobs / seconds),
        seppUs: Math.round((cpuMicros([serve.pid]) - s0) / jobs),
        pgUs: Math.round((pgCpu() - p0) / jobs),
        split: cpuSplit(serve.pid)
          .map((us, i) => Math.round((us - (split0[i] ?? 0)) / jobs))
          .join(' / '),
        pgKinds: [...pgCpuByKind()]
          .map(([kind, us]) => [kind, (us - (kinds0.get(kind) ?? 0)) / jobs] as const)
          .filter(([, us]) => us >= 0.5)
          .sort((a, b) => b[1] - a[1])
          .map(([kind, us]) => `${kind} ${us.toFixed(1)}`)
          .join(', '),
      };
    };
    if (warmup > 0) {
      await enqueueJobs(client, 'w1', warmup, concurrency);
      await drainThroughPool(client, 'w1', warmup, { workers: concurrency, prefetch });
    }
    const load0 = loadavg()[0]?.toFixed(1);
    const enqueue = await measure(() => enqueueJobs(client, 'w1', jobs, concurrency));
    await batches();
    await admin.query('SELECT pg_stat_statements_reset()');
    const vacuums0 = await jobsAutovacuums(database);
    const drain = await measure(() =>
      drainThroughPool(client, 'w1', jobs, {
        workers: concurrency,
        prefetch,
        ...(values.streams === undefined ? {} : { streams: Number(values.streams) }),
      }),
    );
    const drained = await batches();
    const vacuums = (await jobsAutovacuums(database)).map((n, i) => n - (vacuums0[i] ?? 0));
    const statements = await admin.query<{
      query: string;
      calls: string;
      rows: string;
      ms: string;
      hit: string;
      wal_records: string;
      wal_bytes: string;
      wal_fpi: string;
      plans: string;
      plan_ms: string;
    }>(
      `SELECT s.query, s.calls::text, s.rows::text, s.total_exec_time::text AS ms, s.plans::text, s.total_plan_time::text AS plan_ms, s.shared_blks_hit::text AS hit,
              s.wal_records::text AS wal_records, s.wal_bytes::text AS wal_bytes, s.wal_fpi::text AS wal_fpi
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = $1 ORDER BY s.total_exec_time DESC LIMIT $2`,
      [database, Number(values.top)],
    );
    const name = tree === here ? 'this' : tree;
    return [
      `run ${run} ${name} (load ${load0}–${loadavg()[0]?.toFixed(1)}): enqueue ${enqueue.perSecond} jobs/s, ` +
        `sepp ${enqueue.seppUs} / PostgreSQL ${enqueue.pgUs} µs CPU/job; drain ${drain.perSecond} jobs/s, ` +
        `sepp ${drain.seppUs} / PostgreSQL ${drain.pgUs} µs CPU/job (sepp user / system, main thread user / system: ${drain.split})`,
      `drain PostgreSQL µs CPU/job by process: ${drain.pgKinds}; autovacuum / autoanalyze runs on jobs: ${vacuums.join(' / ')}`,
      chainFigures(drained),
      '| statement | calls/batch | rows/call | exec µs/call | exec µs/job | plans/call, plan µs/job | buffers hit/call | WAL records / bytes / full pages per call |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...statements.rows.map((r) => {
        const calls = Number(r.calls);
        const ms = Number(r.ms);
        return `| ${r.query.replace(/\s+/g, ' ').slice(0, 70)} | ${(calls / Math.max(1, drained.length)).toFixed(2)} | ${(Number(r.rows) / Math.max(1, calls)).toFixed(1)} | ${((ms * 1000) / Math.max(1, calls)).toFixed(0)} | ${((ms * 1000) / jobs).toFixed(1)} | ${(Number(r.plans) / Math.max(1, calls)).toFixed(2)}, ${((Number(r.plan_ms) * 1000) / jobs).toFixed(1)} | ${(Number(r.hit) / Math.max(1, calls)).toFixed(0)} | ${[r.wal_records, r.wal_bytes, r.wal_fpi].map((v) => (Number(v) / Math.max(1, calls)).toFixed(0)).join(' / ')} |`;
      }),
    ].join('\n');
  } finally {
    client.close();
    await serve.stop();
    if (values['server-log'] !== undefined)
      copyFileSync(serve.logFile, `${values['server-log']}.${run}.${trees.indexOf(tree)}.log`);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The sepp server's CPU in µs, split: the process's user and system time, then its main
 * thread's (the JavaScript; the rest is V8's and libuv's helper threads), from /proc in ticks.
 */
function cpuSplit(pid: number): number[] {
  const times = (path: string) => {
    try {
      const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return [Number(fields[11]) * 1e4, Number(fields[12]) * 1e4];
    } catch {
      return [0, 0];
    }
  };
  return [...times(`/proc/${pid}/stat`), ...times(`/proc/${pid}/task/${pid}/stat`)];
}

/** Per drain batch: its size, its queries, and where its wall time went (medians and means). */
function chainFigures(batches: readonly Batch[]): string {
  const n = Math.max(1, batches.length);
  const mean = (f: (b: Batch) => number) => batches.reduce((a, b) => a + f(b), 0) / n;
  const median = (f: (b: Batch) => number) => {
    const sorted = batches.map(f).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? 0;
  };
  const both = (f: (b: Batch) => number, digits = 2) =>
    `${mean(f).toFixed(digits)} (p50 ${median(f).toFixed(digits)})`;
  const wall = mean((b) => b.idleBeforeMs + b.unitsMs + b.commitMs);
  const pct = (ms: number) => `${Math.round((100 * ms) / wall)} %`;
  const awaitedMs = mean((b) => b.awaitedMs ?? 0);
  return [
    `drain batches: ${batches.length} = ${(jobs / n).toFixed(1)} jobs, ${mean((b) => b.units).toFixed(2)} units, ` +
      `${mean((b) => b.statements + (b.commands ?? 0)).toFixed(2)} queries sent (${mean((b) => b.commands ?? 0).toFixed(2)} BEGIN/savepoint/COMMIT), ` +
      `${mean((b) => b.awaited ?? 0).toFixed(2)} statements awaited + the COMMIT per batch`,
    `batch wall ms, mean (p50): ${wall.toFixed(2)} = idle before ${both((b) => b.idleBeforeMs)} [${pct(mean((b) => b.idleBeforeMs))}] + ` +
      `units ${both((b) => b.unitsMs)} [${pct(mean((b) => b.unitsMs))}: awaiting answers ${both((b) => b.awaitedMs ?? 0)} ${pct(awaitedMs)}, ` +
      `the rest ${pct(mean((b) => b.unitsMs) - awaitedMs)}] + COMMIT ${both((b) => b.commitMs)} [${pct(mean((b) => b.commitMs))}]`,
    idleSplit(batches),
  ].join('\n');
}

/**
 * The idle time before a batch, split by whether units were already queued when the batch
 * before it committed (then the wait was the answering of that batch and the event loop's
 * other work) or not (the writer waited for units to come).
 */
function idleSplit(batches: readonly Batch[]): string {
  let queued = 0;
  let queuedMs = 0;
  let emptyMs = 0;
  for (let i = 1; i < batches.length; i++) {
    const before = batches[i - 1]?.queuedAtCommit ?? 0;
    const idle = batches[i]?.idleBeforeMs ?? 0;
    if (before > 0) {
      queued++;
      queuedMs += idle;
    } else emptyMs += idle;
  }
  const n = Math.max(1, batches.length - 1);
  return (
    `idle before a batch: ${queued} of ${n} batches had units queued at the previous COMMIT ` +
    `(idle ${(queuedMs / Math.max(1, queued)).toFixed(2)} ms each: answering and the event loop's other work), ` +
    `the rest waited for units (${(emptyMs / Math.max(1, n - queued)).toFixed(2)} ms each); ` +
    `units queued at a COMMIT: ${(batches.reduce((a, b) => a + (b.queuedAtCommit ?? 0), 0) / n).toFixed(2)}`
  );
}

try {
  for (let r = 0; r < runs; r++) {
    const order = r % 2 === 0 ? trees : [...trees].reverse();
    for (const tree of order) console.log(`${await runOnce(tree, r + 1)}\n`);
  }
  if (values.explain) {
    const plans = cluster.logs().split(/\n(?=\S.*LOG: {2}duration)/);
    // The lease's pick along the drain: its index scan's time to the first row and its buffers.
    const picks = plans
      .filter((p) => p.includes('picked'))
      .map((p) =>
        /Index Scan using jobs_ready[^\n]*actual time=([\d.]+)\.\.([\d.]+)[^\n]*\n[^\n]*\n[^\n]*\n\s*Buffers: shared hit=(\d+)/.exec(
          p,
        ),
      )
      .filter((m) => m !== null)
      .map((m) => `${m[1]}/${m[2]} ms ${m[3]} buffers`);
    console.log(`lease picks along the drain (first row / all rows, buffers):\n${picks.join('\n')}`);
    console.log(
      plans
        .filter((p) => p.includes('picked'))
        .slice(-2)
        .join('\n'),
    );
  }
} finally {
  await admin.end();
  await cluster.close();
}
