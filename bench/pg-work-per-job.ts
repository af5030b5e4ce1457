/**
 * What PostgreSQL does per drained job (issue 37): sepp's W1 drain and graphile-worker's, each
 * in its own database of ONE fresh PostgreSQL 15 cluster (pg_stat_statements, track = top), one
 * after the other, and per drained job: PostgreSQL's CPU, commits, WAL bytes and records, rows
 * read/inserted/updated/deleted, per table (heap updates, HOT updates, deletes, scans), per index
 * (scans, tuples read, size growth) and per statement (calls, rows, time, WAL bytes).
 *
 *   npx tsx bench/pg-work-per-job.ts --jobs 20000 [--concurrency 50] [--order sepp,graphile,sepp-x]
 *     [--experiment SQL]
 *
 * `--order` names the drains in the order they run: `sepp` (sepp as it ships), `graphile`
 * (graphile-worker 0.18 with the harness's runner settings: localQueue 500, completeJobBatchDelay
 * 0, concurrency `--concurrency`) and `sepp-x` (sepp with `--experiment SQL` run on its fresh
 * schema before the enqueue, e.g. `DROP INDEX sepp.jobs_by_state_type`), and `overhead`
 * (`overheadRun`: a round trip's and a durable commit's own cost to PostgreSQL). Table and index counters
 * are PostgreSQL's cumulative statistics, which a backend flushes at most once a second and an
 * idle one within 10 s: the script waits 11 s before each snapshot, so they hold the drain only.
 * WAL bytes are pg_current_wal_lsn's advance over the drain (the whole cluster: autovacuum's and
 * the checkpointer's included); the per-statement WAL is pg_stat_statements'.
 */

import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { SeppClient } from '../clients/typescript/src/index.ts';
import { type PostgresCluster, startPostgres } from '../tests/helpers/postgres.ts';
import { startTestServer } from '../tests/helpers/server.ts';
import { cpuMicros, readStat } from './lib/proc-stats.ts';
import { drainJobs, enqueueJobs } from './lib/sdk-phases.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '50' },
    order: { type: 'string', default: 'sepp,graphile' },
    experiment: { type: 'string' },
    top: { type: 'string', default: '8' },
  },
});
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);
const marker = '/*bench*/';
const flushWaitMs = 11_000;

interface Snapshot {
  lsn: string;
  database: Record<string, number>;
  tables: Map<string, Record<string, number>>;
  indexes: Map<string, Record<string, number>>;
}

async function snapshot(client: pg.Client): Promise<Snapshot> {
  const lsn =
    (await client.query<{ l: string }>(`${marker} SELECT pg_current_wal_lsn()::text AS l`)).rows[0]?.l ??
    '0/0';
  const numbers = (row: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)]));
  const db = await client.query(
    `${marker} SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated,
       tup_deleted, blks_hit, blks_read FROM pg_stat_database WHERE datname = current_database()`,
  );
  const tables = await client.query(
    `${marker} SELECT schemaname || '.' || relname AS name, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del,
       seq_scan, seq_tup_read, coalesce(idx_scan, 0) AS idx_scan, coalesce(idx_tup_fetch, 0) AS idx_tup_fetch,
       autovacuum_count, autoanalyze_count, pg_relation_size(relid) AS bytes
       FROM pg_stat_user_tables`,
  );
  const indexes = await client.query(
    `${marker} SELECT schemaname || '.' || indexrelname AS name, idx_scan, idx_tup_read, idx_tup_fetch,
       pg_relation_size(indexrelid) AS bytes FROM pg_stat_user_indexes`,
  );
  const byName = (rows: Record<string, unknown>[]) =>
    new Map(rows.map((r) => [String(r.name), numbers({ ...r, name: 0 })]));
  return {
    lsn,
    database: numbers(db.rows[0] ?? {}),
    tables: byName(tables.rows),
    indexes: byName(indexes.rows),
  };
}

function lsnBytes(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

const per = (n: number, digits = 2) => (n / jobs).toFixed(digits);

function report(
  label: string,
  before: Snapshot,
  after: Snapshot,
  walEnd: string,
  pgUs: number,
  seconds: number,
  statements: pg.QueryResult,
): void {
  const d = (k: string) => (after.database[k] ?? 0) - (before.database[k] ?? 0);
  const wal = Number(lsnBytes(walEnd) - lsnBytes(before.lsn));
  console.log(
    `\n## ${label}: ${jobs} jobs drained in ${seconds.toFixed(2)} s = ${Math.round(jobs / seconds)} jobs/s, load ${loadavg()[0]?.toFixed(1)}`,
  );
  console.log(
    `per job: PostgreSQL ${Math.round(pgUs / jobs)} µs CPU; ${per(d('xact_commit'), 3)} commits; WAL ${Math.round(wal / jobs)} bytes; ` +
      `tuples inserted ${per(d('tup_inserted'))}, updated ${per(d('tup_updated'))}, deleted ${per(d('tup_deleted'))}, ` +
      `fetched ${per(d('tup_fetched'))}, returned ${per(d('tup_returned'))}; buffer hits ${per(d('blks_hit'), 1)}, reads ${per(d('blks_read'), 2)}`,
  );
  console.log(
    '\n| table | ins/job | upd/job | HOT upd/job | del/job | seq scans | idx scans/job | idx fetch/job | autovac/analyze | size growth KiB |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |');
  for (const [name, t] of after.tables) {
    const t0 = before.tables.get(name) ?? {};
    const x = (k: string) => (t[k] ?? 0) - (t0[k] ?? 0);
    if (x('n_tup_ins') + x('n_tup_upd') + x('n_tup_del') + x('idx_scan') + x('seq_scan') === 0) continue;
    console.log(
      `| ${name} | ${per(x('n_tup_ins'))} | ${per(x('n_tup_upd'))} | ${per(x('n_tup_hot_upd'))} | ${per(x('n_tup_del'))} | ${x('seq_scan')} | ${per(x('idx_scan'), 3)} | ${per(x('idx_tup_fetch'))} | ${x('autovacuum_count')}/${x('autoanalyze_count')} | ${Math.round(x('bytes') / 1024)} |`,
    );
  }
  console.log(
    '\n| index | scans/job | tuples read/job | fetched/job | size before KiB | growth KiB | growth bytes/job |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [name, i] of after.indexes) {
    const i0 = before.indexes.get(name) ?? {};
    const x = (k: string) => (i[k] ?? 0) - (i0[k] ?? 0);
    if (x('idx_scan') + x('idx_tup_read') + x('bytes') === 0) continue;
    console.log(
      `| ${name} | ${per(x('idx_scan'), 3)} | ${per(x('idx_tup_read'))} | ${per(x('idx_tup_fetch'))} | ${Math.round((i0.bytes ?? 0) / 1024)} | ${Math.round(x('bytes') / 1024)} | ${per(x('bytes'), 1)} |`,
    );
  }
  let total = { calls: 0, rows: 0, ms: 0, planMs: 0, wal: 0, records: 0, fpi: 0 };
  for (const r of statements.rows) {
    total = {
      calls: total.calls + Number(r.calls),
      rows: total.rows + Number(r.rows),
      ms: total.ms + Number(r.ms),
      planMs: total.planMs + Number(r.plan_ms),
      wal: total.wal + Number(r.wal_bytes),
      records: total.records + Number(r.wal_records),
      fpi: total.fpi + Number(r.wal_fpi),
    };
  }
  console.log(
    `\nstatements (pg_stat_statements, this database, top level): ${per(total.calls, 3)} calls/job, ${per(total.rows)} rows/job, ` +
      `exec ${((total.ms * 1000) / jobs).toFixed(1)} µs/job, planning ${((total.planMs * 1000) / jobs).toFixed(1)} µs/job, WAL ${Math.round(total.wal / jobs)} bytes in ${per(total.records)} records/job (${per(total.fpi, 3)} full pages)`,
  );
  console.log(
    '\n| statement | calls/job | rows/call | exec µs/job | plans/call | planning µs/job | WAL bytes/job | WAL records/job |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of statements.rows.slice(0, Number(values.top))) {
    const text = String(r.query).replace(/\s+/g, ' ').slice(0, 110);
    console.log(
      `| ${text} | ${per(Number(r.calls), 3)} | ${(Number(r.rows) / Math.max(1, Number(r.calls))).toFixed(1)} | ${((Number(r.ms) * 1000) / jobs).toFixed(1)} | ${(Number(r.plans) / Math.max(1, Number(r.calls))).toFixed(2)} | ${((Number(r.plan_ms) * 1000) / jobs).toFixed(1)} | ${Math.round(Number(r.wal_bytes) / jobs)} | ${per(Number(r.wal_records))} |`,
    );
  }
}

async function statementsOf(client: pg.Client): Promise<pg.QueryResult> {
  return client.query(
    `${marker} SELECT query, calls, rows, total_exec_time AS ms, plans, total_plan_time AS plan_ms, wal_bytes, wal_records, wal_fpi
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = current_database() AND query NOT LIKE '%/*bench*/%'
      ORDER BY total_exec_time DESC`,
  );
}

/** CPU ticks of each living PostgreSQL process, by pid, with its kind (its process title). */
function processTicks(
  cluster: PostgresCluster,
): Map<number, { kind: string; ticks: number; system: number }> {
  const ticks = new Map<number, { kind: string; ticks: number; system: number }>();
  for (const pid of cluster.processes()) {
    const stat = readStat(pid);
    if (stat === undefined) continue;
    let title = '';
    try {
      title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue;
    }
    const kind = !title.startsWith('postgres: ')
      ? 'postmaster'
      : (/^postgres: (walwriter|checkpointer|background writer|autovacuum launcher|autovacuum worker|logical replication launcher)/.exec(
          title,
        )?.[1] ?? 'backends');
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    ticks.set(pid, { kind, ticks: stat.ownTicks, system: Number(fields[12] ?? 0) });
  }
  return ticks;
}

/** PostgreSQL's CPU per job by process kind; `exited` is what processes that ended meanwhile used (autovacuum workers). */
function cpuByKind(
  before: Map<number, { kind: string; ticks: number; system: number }>,
  after: Map<number, { kind: string; ticks: number; system: number }>,
  totalUs: number,
): string {
  const kinds = new Map<string, number>();
  let living = 0;
  let system = 0;
  for (const [pid, p] of after) {
    const us = (p.ticks - (before.get(pid)?.ticks ?? 0)) * 10_000;
    system += (p.system - (before.get(pid)?.system ?? 0)) * 10_000;
    living += us;
    kinds.set(p.kind, (kinds.get(p.kind) ?? 0) + us);
  }
  kinds.set('exited', totalUs - living);
  return [...kinds]
    .filter(([, us]) => us !== 0)
    .map(([kind, us]) => `${kind} ${(us / jobs).toFixed(1)}`)
    .join(', ')
    .concat(`; of the living processes' CPU, system (kernel) ${(system / jobs).toFixed(1)}`);
}

/** Measures `drain` on `database`: snapshots around it, statements reset at its start. */
async function measure(
  cluster: PostgresCluster,
  admin: pg.Client,
  label: string,
  drain: () => Promise<void>,
): Promise<void> {
  await sleep(flushWaitMs);
  const before = await snapshot(admin);
  await admin.query(`${marker} SELECT pg_stat_statements_reset()`);
  const postmaster = cluster.pid();
  const pgCpu = () => (postmaster === undefined ? 0 : cpuMicros([postmaster]));
  const cpu0 = pgCpu();
  const kinds0 = processTicks(cluster);
  const started = performance.now();
  await drain();
  const seconds = (performance.now() - started) / 1000;
  const pgUs = pgCpu() - cpu0;
  const kinds = cpuByKind(kinds0, processTicks(cluster), pgUs);
  const walEnd =
    (await admin.query<{ l: string }>(`${marker} SELECT pg_current_wal_lsn()::text AS l`)).rows[0]?.l ??
    '0/0';
  const statements = await statementsOf(admin);
  await sleep(flushWaitMs);
  const after = await snapshot(admin);
  report(label, before, after, walEnd, pgUs, seconds, statements);
  console.log(`\nPostgreSQL µs CPU per job by process: ${kinds}`);
  const layout = await admin.query<{ def: string }>(
    `${marker} SELECT indexdef AS def FROM pg_indexes WHERE tablename IN ('jobs', '_private_jobs') ORDER BY indexname`,
  );
  console.log(`\nindexes of the jobs table:\n${layout.rows.map((r) => `    ${r.def}`).join('\n')}`);
}

async function adminOn(cluster: PostgresCluster, database: string): Promise<pg.Client> {
  const client = new pg.Client(cluster.connection(database));
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  return client;
}

async function seppRun(cluster: PostgresCluster, experiment: string | undefined): Promise<void> {
  const database = await cluster.createDatabase('sepp');
  const admin = await adminOn(cluster, database);
  const server = await startTestServer({
    toml: `[queues.w1]\n[store]\nkind = "postgres"\nurl = "${cluster.urlWithoutPassword(database)}"\npassword_file = "${cluster.passwordFile}"\nschema = "sepp"\n`,
  });
  const client = SeppClient.connect(server.address);
  try {
    if (experiment !== undefined) await admin.query(experiment);
    await enqueueJobs(client, 'w1', jobs, 10, 500);
    const label = experiment === undefined ? 'sepp' : `sepp with \`${experiment}\``;
    await measure(cluster, admin, label, () =>
      drainJobs(client, 'w1', jobs, { concurrency, transport: 'stream' }),
    );
  } finally {
    client.close();
    await server.dispose();
    await admin.end();
  }
}

async function graphileRun(cluster: PostgresCluster): Promise<void> {
  process.env.NO_LOG_SUCCESS ??= '1';
  const graphile = await import('graphile-worker');
  const logger = new graphile.Logger(() => () => {});
  const database = await cluster.createDatabase('graphile');
  const admin = await adminOn(cluster, database);
  const utils = await graphile.makeWorkerUtils({
    connectionString: cluster.url(database),
    maxPoolSize: 10,
    logger,
  });
  const pool = new pg.Pool({ ...cluster.connection(database), max: 10 });
  pool.on('error', (error) => console.error(`graphile-worker pool: ${error.message}`));
  try {
    await utils.migrate();
    const payload = { p: 'x'.repeat(256) };
    for (let done = 0; done < jobs; done += 500) {
      const n = Math.min(500, jobs - done);
      await utils.addJobs(Array.from({ length: n }, () => ({ identifier: 'w1', payload })));
    }
    await measure(cluster, admin, 'graphile-worker', async () => {
      let handled = 0;
      let allHandled: () => void = () => {};
      const handledAll = new Promise<void>((resolve) => (allHandled = resolve));
      const runner = await graphile.run({
        pgPool: pool,
        concurrency,
        noHandleSignals: true,
        logger,
        preset: { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
        taskList: {
          w1: async () => {
            if (++handled === jobs) allHandled();
          },
        },
      });
      await handledAll;
      // Done once the completions' DELETEs have committed (as the harness's ack waits for them).
      for (;;) {
        const left = await admin.query<{ n: string }>(
          `${marker} SELECT count(*)::text AS n FROM graphile_worker._private_jobs`,
        );
        if (Number(left.rows[0]?.n) === 0) break;
        await sleep(5);
      }
      await runner.stop();
    });
  } finally {
    await utils.release();
    await pool.end();
    await admin.end();
  }
}

/**
 * `overhead`: what PostgreSQL's backend spends on a statement round trip and on a commit by
 * themselves, one connection, `jobs` / 10 times each: a prepared `SELECT 1` (a round trip), a
 * `SAVEPOINT u` + `RELEASE SAVEPOINT u` sent as one message, and a committed one-row HOT update
 * (BEGIN, UPDATE, COMMIT: its WAL flushed and fsynced), less three round trips.
 */
async function overheadRun(cluster: PostgresCluster): Promise<void> {
  const database = await cluster.createDatabase('overhead');
  const client = await adminOn(cluster, database);
  const n = Math.max(100, Math.round(jobs / 10));
  try {
    await client.query('CREATE TABLE t (id int PRIMARY KEY, n bigint NOT NULL) WITH (fillfactor = 50)');
    await client.query('INSERT INTO t VALUES (1, 0)');
    const postmaster = cluster.pid();
    const cpu = () => (postmaster === undefined ? 0 : cpuMicros([postmaster]));
    const time = async (label: string, body: () => Promise<void>) => {
      const c0 = cpu();
      const started = performance.now();
      for (let i = 0; i < n; i++) await body();
      const us = (cpu() - c0) / n;
      console.log(
        `overhead: ${label}: PostgreSQL ${us.toFixed(1)} µs CPU, ${((1000 * (performance.now() - started)) / n).toFixed(0)} µs wall each`,
      );
      return us;
    };
    const select = { name: 'one', text: 'SELECT 1' };
    const update = { name: 'bump', text: 'UPDATE t SET n = n + 1 WHERE id = 1' };
    const trip = await time('round trip (prepared SELECT 1)', async () => {
      await client.query(select);
    });
    await client.query('BEGIN');
    await time('SAVEPOINT u; RELEASE SAVEPOINT u (one message, in a transaction)', async () => {
      await client.query('SAVEPOINT u; RELEASE SAVEPOINT u');
    });
    await client.query('COMMIT');
    const commit = await time('BEGIN; prepared one-row UPDATE; COMMIT (three round trips)', async () => {
      await client.query('BEGIN');
      await client.query(update);
      await client.query('COMMIT');
    });
    console.log(
      `overhead: a durable commit by itself ≈ ${(commit - 3 * trip).toFixed(1)} µs of PostgreSQL CPU (the update's own work included); load ${loadavg()[0]?.toFixed(1)}`,
    );
  } finally {
    await client.end();
  }
}

const cluster = await startPostgres({
  settings: {
    shared_preload_libraries: 'pg_stat_statements',
    'pg_stat_statements.track': 'top',
    'pg_stat_statements.track_planning': 'on',
  },
});
try {
  console.log(`${cluster.serverVersion}; ${jobs} jobs, concurrency ${concurrency}; order ${values.order}`);
  for (const name of String(values.order).split(',')) {
    if (name === 'sepp') await seppRun(cluster, undefined);
    else if (name === 'sepp-x') await seppRun(cluster, values.experiment ?? 'SELECT 1');
    else if (name === 'graphile') await graphileRun(cluster);
    else if (name === 'overhead') await overheadRun(cluster);
    else throw new Error(`--order: unknown drain ${name}`);
  }
} finally {
  await cluster.close();
}
