/**
 * How long an upgrade's migrations take on a database with realistic data, and what they block
 * on PostgreSQL (docs/upgrading.md, "How long an upgrade takes").
 *
 * Builds a database at an older release's schema with the migrations of that release (`--base`,
 * a checkout whose src/store/{sqlite,postgres}/gen/migrations.ts are read; default: this tree's
 * migrations up to `--sqlite-from`/`--pg-from`), filled with `--jobs` jobs over four queues in
 * every state (payloads of 256 bytes), `--members` batch members across `--batches` batches,
 * `--edges` dependency edges from waiting jobs onto `--parents` jobs, one job_dependents row per
 * parent (one in eight counting one edge short, as servers of schema 8 left them). It then applies
 * each newer migration of every `--target` checkout (default: this tree) one at a time, as a
 * newer sepp does at start, on a fresh copy of that database per target and run, targets
 * interleaved, `--runs` times, and prints the median time of each.
 *
 * SQLite: durability `full` (WAL, synchronous=FULL), as `sepp serve`. A migration holds the
 * write lock for its transaction (writers wait; readers of WAL snapshots go on).
 * PostgreSQL (tests/helpers/postgres.ts, fsync on): the migration is also run once in a
 * transaction left open before its commit, and the table locks its backend holds are read from
 * pg_locks; for each such table a reader (`LOCK … IN ACCESS SHARE MODE`, what a SELECT takes)
 * and a writer (`ROW EXCLUSIVE`, what INSERT/UPDATE/DELETE take) try it with lock_timeout 100 ms:
 * `wait` means they wait for the migration's commit. The copy per run is CREATE DATABASE …
 * TEMPLATE of the filled one, vacuumed and analysed (as autovacuum leaves a busy table).
 *
 * Usage: npx tsx bench/upgrade-busy.ts [--store sqlite,postgres] [--runs 3] [--jobs 1000000]
 *   [--members 100000] [--batches 1000] [--edges 200000] [--parents 50000]
 *   [--base DIR] [--sqlite-from 26] [--pg-from 12] [--target DIR,DIR] [--out FILE]
 */
import { copyFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Migration as PgMigration } from '../src/store/postgres/gen/migrations.ts';
import { migrate as migratePostgres } from '../src/store/postgres/migrate.ts';
import type { Migration as SqliteMigration } from '../src/store/sqlite/gen/migrations.ts';
import { migrate as migrateSqlite } from '../src/store/sqlite/migrate.ts';
import { startPostgres } from '../tests/helpers/postgres.ts';
import { median } from './engine-lib.ts';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'sqlite,postgres' },
    runs: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '1000000' },
    members: { type: 'string', default: '100000' },
    batches: { type: 'string', default: '1000' },
    edges: { type: 'string', default: '200000' },
    parents: { type: 'string', default: '50000' },
    base: { type: 'string', default: '' },
    'sqlite-from': { type: 'string', default: '26' },
    'pg-from': { type: 'string', default: '12' },
    target: { type: 'string', default: '.' },
    out: { type: 'string', default: '' },
  },
});
const count = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`--${name} must be a positive integer, not ${values[name]}`);
  return n;
};
const runs = count('runs');
const jobs = count('jobs');
const members = count('members');
const batches = count('batches');
const edges = count('edges');
const parents = count('parents');
const sqliteFrom = count('sqlite-from');
const pgFrom = count('pg-from');
// Jobs i = 1…jobs: state by i % 10; waiting jobs (i % 10 = 7) hold the edges, ready ones (8) are parents.
if (
  members > jobs ||
  edges > 2 * Math.floor(jobs / 10) ||
  parents > Math.floor(jobs / 10) ||
  edges < parents
) {
  throw new Error('need members ≤ jobs, parents ≤ edges, edges ≤ 2 × jobs/10 and parents ≤ jobs/10');
}
const stores = String(values.store).split(',');
const targets = String(values.target)
  .split(',')
  .map((dir) => resolve(dir));

async function migrationsOf<M>(dir: string, store: 'sqlite' | 'postgres'): Promise<readonly M[]> {
  const module = (await import(join(resolve(dir), 'src/store', store, 'gen/migrations.ts'))) as {
    migrations: readonly M[];
  };
  return module.migrations;
}
const ownSqlite = await migrationsOf<SqliteMigration>(resolve('.'), 'sqlite');
const ownPostgres = await migrationsOf<PgMigration>(resolve('.'), 'postgres');
const baseSqlite = (
  values.base === '' ? ownSqlite : await migrationsOf<SqliteMigration>(values.base, 'sqlite')
).slice(0, sqliteFrom);
const basePostgres = (
  values.base === '' ? ownPostgres : await migrationsOf<PgMigration>(values.base, 'postgres')
).slice(0, pgFrom);

const states = `CASE i % 10 WHEN 0 THEN 'dead' WHEN 1 THEN 'scheduled' WHEN 2 THEN 'leased' WHEN 3 THEN 'completed'
  WHEN 4 THEN 'completed' WHEN 5 THEN 'completed' WHEN 6 THEN 'cancelled' WHEN 7 THEN 'waiting' ELSE 'ready' END`;
const memberStates = `CASE i % 10 WHEN 0 THEN 'dead' WHEN 3 THEN 'completed' WHEN 4 THEN 'completed'
  WHEN 5 THEN 'completed' WHEN 6 THEN 'cancelled' ELSE 'pending' END`;
const queues = ['emails', 'reports', 'webhooks', 'billing'];

/** The fill, one statement per table; `series(n)` gives rows `i` = 1…n, `id(e)` a job's id from its number. */
function fillStatements(series: (n: number) => string, id: (e: string) => string, blob: string): string[] {
  // Edge k (0-based): child = waiting job 10·(k mod W) + 7, parent = ready job 10·p + 8 with
  // p = (k + k div W) mod parents, so one child's edges name distinct parents.
  const waiting = Math.floor(jobs / 10);
  return [
    `INSERT INTO jobs (seq, id, queue, type, state, priority, payload, content_type, idempotency_key, attempt,
       max_attempts, enqueued_at_ms, run_at_ms, lease_deadline_ms, dead_reason, failed_at_ms, completed_at_ms,
       cancelled_at_ms, last_error, dependency_flags)
     SELECT i, ${id('i')}, CASE i % 4 WHEN 0 THEN 'emails' WHEN 1 THEN 'reports' WHEN 2 THEN 'webhooks' ELSE 'billing' END,
       'type-' || (i % 7), ${states}, i % 10, ${blob}, 'application/json',
       CASE WHEN i % 10 = 4 THEN 'key-' || i END, CASE WHEN i % 10 IN (0, 2, 3, 4, 5) THEN 1 ELSE 0 END, 5,
       i, i, CASE WHEN i % 10 = 2 THEN i + 30000 END, CASE WHEN i % 10 = 0 THEN 'attempts_exhausted' END,
       CASE WHEN i % 10 = 0 THEN i END, CASE WHEN i % 10 IN (3, 4, 5) THEN i END, CASE WHEN i % 10 = 6 THEN i END,
       CASE WHEN i % 10 = 0 THEN 'boom' END, CASE WHEN i <= ${members} THEN 16 ELSE 0 END
     FROM ${series(jobs)}`,
    `INSERT INTO batches (id, state, created_at_ms, members, pending)
     SELECT 'batch-' || i, CASE WHEN i % 2 = 0 THEN 'sealed' ELSE 'open' END, i, 0, 0 FROM ${series(batches)}`,
    `INSERT INTO batch_members (job_id, batch_id, position, state)
     SELECT ${id('i')}, 'batch-' || ((i - 1) % ${batches} + 1), (i - 1) / ${batches}, ${memberStates}
     FROM ${series(members)}`,
    `INSERT INTO job_dependencies (child_seq, parent_id, state, policy)
     SELECT 10 * ((i - 1) % ${waiting}) + 7, ${id(`(10 * (((i - 1) + (i - 1) / ${waiting}) % ${parents}) + 8)`)}, 'pending', 'cancel'
     FROM ${series(edges)}`,
    `INSERT INTO job_dependents (parent_id, dependents)
     SELECT parent_id, count(*) - CASE WHEN parent_id LIKE '%0' THEN 1 ELSE 0 END
     FROM job_dependencies GROUP BY parent_id`,
  ];
}

interface Row {
  store: string;
  target: string;
  name: string;
  ms: number[];
  locks: string;
}
const rows = new Map<string, Row>();
function record(store: string, target: string, name: string, ms: number, locks = '') {
  const key = `${store}\u0000${target}\u0000${name}`;
  const row = rows.get(key) ?? { store, target, name, ms: [], locks };
  row.ms.push(ms);
  if (locks !== '') row.locks = locks;
  rows.set(key, row);
}
const notes: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'sepp-upgrade-'));

async function benchSqlite(): Promise<void> {
  const filled = join(dir, 'filled.db');
  const db = new Database(filled);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  migrateSqlite(db, baseSqlite);
  const startedMs = performance.now();
  db.transaction(() => {
    for (const name of queues) db.prepare('INSERT INTO queues (name, created_at_ms) VALUES (?, 0)').run(name);
    const series = (n: number) =>
      `(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n}) SELECT i FROM s)`;
    const id = (e: string) => `printf('00000000-0000-7000-8000-%012x', ${e})`;
    for (const sql of fillStatements(series, id, 'randomblob(256)')) db.prepare(sql).run();
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  notes.push(
    `SQLite: filled at schema ${sqliteFrom} in ${((performance.now() - startedMs) / 1000).toFixed(1)} s, ${(statSync(filled).size / 2 ** 20).toFixed(0)} MiB`,
  );
  for (let run = 0; run < runs; run++) {
    for (const target of targets) {
      const available = await migrationsOf<SqliteMigration>(target, 'sqlite');
      const path = join(dir, 'run.db');
      copyFileSync(filled, path);
      const copy = new Database(path);
      copy.pragma('journal_mode = WAL');
      copy.pragma('synchronous = FULL');
      copy.pragma('foreign_keys = ON');
      let total = 0;
      for (const migration of available.filter((m) => m.version > sqliteFrom)) {
        const [applied] = migrateSqlite(copy, available.slice(0, available.indexOf(migration) + 1));
        total += applied?.durationMs ?? 0;
        record('sqlite', target, migration.name, applied?.durationMs ?? 0, 'write lock (readers go on)');
      }
      record('sqlite', target, `all after ${sqliteFrom}`, total);
      copy.close();
      rmSync(path, { force: true });
      rmSync(`${path}-wal`, { force: true });
      rmSync(`${path}-shm`, { force: true });
    }
  }
}

async function benchPostgres(): Promise<void> {
  const cluster = await startPostgres();
  try {
    const filled = await cluster.createDatabase('upgrade_filled');
    const client = new pg.Client(cluster.connection(filled));
    client.on('error', () => {}); // the error of its query says it
    await client.connect();
    const startedMs = performance.now();
    await migratePostgres(client, 'sepp', basePostgres as PgMigration[]);
    await client.query('SET search_path = sepp');
    await client.query('BEGIN');
    for (const name of queues)
      await client.query('INSERT INTO queues (name, created_at_ms) VALUES ($1, 0)', [name]);
    const series = (n: number) => `generate_series(1, ${n}) AS s(i)`;
    const id = (e: string) => `'00000000-0000-7000-8000-' || lpad(to_hex(${e}), 12, '0')`;
    for (const sql of fillStatements(series, id, `decode(repeat(md5(i::text), 8), 'hex')`)) {
      await client.query(sql.replace('SELECT i, ', 'OVERRIDING SYSTEM VALUE SELECT i, '));
    }
    await client.query('COMMIT');
    await client.query('VACUUM ANALYZE');
    await client.query('CHECKPOINT');
    const size = await client.query<{ bytes: string }>(
      'SELECT pg_database_size(current_database()) AS bytes',
    );
    await client.end();
    notes.push(
      `PostgreSQL: filled at schema ${pgFrom} in ${((performance.now() - startedMs) / 1000).toFixed(1)} s, ${(Number(size.rows[0]?.bytes) / 2 ** 20).toFixed(0)} MiB`,
    );
    for (let run = 0; run < runs; run++) {
      for (const target of targets) {
        const available = await migrationsOf<PgMigration>(target, 'postgres');
        const database = `upgrade_run_${run}`;
        await cluster.query(`CREATE DATABASE ${database} TEMPLATE ${filled} STRATEGY FILE_COPY`);
        const migrating = new pg.Client(cluster.connection(database));
        const probe = new pg.Client(cluster.connection(database));
        for (const c of [migrating, probe]) c.on('error', () => {});
        await migrating.connect();
        await probe.connect();
        let total = 0;
        for (const migration of available.filter((m) => m.version > pgFrom)) {
          const locks = run === 0 ? await locksHeld(migrating, probe, migration) : '';
          const [applied] = await migratePostgres(
            migrating,
            'sepp',
            available.slice(0, available.indexOf(migration) + 1),
          );
          total += applied?.durationMs ?? 0;
          record('postgres', target, migration.name, applied?.durationMs ?? 0, locks);
        }
        record('postgres', target, `all after ${pgFrom}`, total);
        await migrating.end();
        await probe.end();
        await cluster.query(`DROP DATABASE ${database}`);
      }
    }
  } catch (error) {
    console.error(error);
    throw error;
  } finally {
    await cluster.close();
  }
}

/** The table locks `migration` holds until its commit, and whether a reader and a writer of each get past them. */
async function locksHeld(migrating: pg.Client, probe: pg.Client, migration: PgMigration): Promise<string> {
  const pid = (await migrating.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
  await migrating.query('BEGIN');
  try {
    await migrating.query('SET LOCAL search_path = sepp');
    await migrating.query(migration.sql);
    const held = await probe.query<{ relname: string; mode: string }>(
      `SELECT c.relname, l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE l.pid = $1 AND l.granted AND l.locktype = 'relation' AND c.relkind = 'r' AND n.nspname = 'sepp'
        ORDER BY c.relname, l.mode`,
      [pid],
    );
    const strongest = new Map<string, string[]>();
    for (const { relname, mode } of held.rows)
      strongest.set(relname, [...(strongest.get(relname) ?? []), mode]);
    const parts: string[] = [];
    for (const [relname, modes] of strongest) {
      const reader = await passes(probe, relname, 'ACCESS SHARE');
      const writer = await passes(probe, relname, 'ROW EXCLUSIVE');
      const mode = modes.includes('AccessExclusiveLock') ? 'AccessExclusiveLock' : (modes.at(-1) ?? '');
      parts.push(`${relname}: ${mode} (reader ${reader}, writer ${writer})`);
    }
    return parts.join('; ') || 'none';
  } finally {
    await migrating.query('ROLLBACK');
  }
}

async function passes(probe: pg.Client, table: string, mode: string): Promise<'goes on' | 'waits'> {
  await probe.query('BEGIN');
  try {
    await probe.query(`SET LOCAL lock_timeout = '100ms'`);
    await probe.query(`LOCK TABLE sepp.${table} IN ${mode} MODE`);
    return 'goes on';
  } catch {
    return 'waits';
  } finally {
    await probe.query('ROLLBACK');
  }
}

try {
  if (stores.includes('sqlite')) await benchSqlite();
  if (stores.includes('postgres')) await benchPostgres();
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const lines = [
  `# npx tsx bench/upgrade-busy.ts ${process.argv.slice(2).join(' ')}`,
  `# ${new Date().toISOString()} · ${cpus().length} × ${cpus()[0]?.model ?? '?'} · load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} (at the end; the machine was shared) · node ${process.version}`,
  `# ${jobs} jobs, ${members} batch members in ${batches} batches, ${edges} dependency edges onto ${parents} jobs (job_dependents rows); median of ${runs} runs, targets interleaved`,
  ...notes.map((note) => `# ${note}`),
  '',
  '| store | target | migration | ms (median) | runs (ms) | table locks held to commit (PostgreSQL: probed) |',
  '| --- | --- | --- | ---: | --- | --- |',
  ...[...rows.values()].map(
    (r) =>
      `| ${r.store} | ${r.target === resolve('.') ? 'this tree' : r.target} | ${r.name} | ${Math.round(median(r.ms))} | ${r.ms.join(', ')} | ${r.locks} |`,
  ),
];
console.log(lines.join('\n'));
if (values.out !== '') writeFileSync(values.out, `${lines.join('\n')}\n`);
