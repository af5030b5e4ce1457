/**
 * The throwaway PostgreSQL cluster of tests/helpers/postgres.ts, which the PostgreSQL
 * store's tests and the benchmark's PostgreSQL peers run on (issue 37): it runs as an
 * unprivileged user with password authentication and fsync on, keeps committed rows
 * across a kill -9 of the whole server, and leaves no process and no file behind.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { livingProcesses, postgresSettings, startPostgres, useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('helper');

/** The effective user id of a running process, from /proc. */
function processUid(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Uid:'));
  return Number(line?.split(/\s+/)[2]);
}

test('the server runs as an unprivileged user, on 127.0.0.1 only, with the settings of postgresSettings', async () => {
  const pid = postgres.cluster.pid();
  assert.ok(pid !== undefined);
  const uid = processUid(pid);
  assert.notEqual(uid, 0, 'postgres runs as root');
  if (process.getuid?.() === 0) assert.equal(postgres.cluster.osUser, 'postgres');
  else assert.equal(uid, process.getuid?.());
  for (const [name, value] of Object.entries(postgresSettings)) {
    const { rows } = await postgres.cluster.query<{ value: string }>('SELECT current_setting($1) AS value', [
      name,
    ]);
    assert.equal(rows[0]?.value, value, name);
  }
  const { rows } = await postgres.cluster.query<{ value: string }>(
    "SELECT current_setting('listen_addresses') AS value",
  );
  assert.equal(rows[0]?.value, '127.0.0.1');
});

test('clients authenticate with the generated password, which the password file holds; nothing is trusted', async () => {
  assert.equal(readFileSync(postgres.cluster.passwordFile, 'utf8'), postgres.cluster.password);
  assert.equal(statSync(postgres.cluster.passwordFile).mode & 0o777, 0o600);
  assert.ok(!postgres.cluster.urlWithoutPassword().includes(postgres.cluster.password));
  const byUrl = new pg.Client({ connectionString: postgres.cluster.url() });
  await byUrl.connect();
  await byUrl.end();
  const wrong = new pg.Client({ ...postgres.cluster.connection(), password: 'not-the-password' });
  wrong.on('error', () => {});
  await assert.rejects(
    wrong.connect(),
    (err: unknown) => err instanceof Error && 'code' in err && err.code === '28P01',
  );
  const { rows } = await postgres.cluster.query<{ methods: string[] }>(
    'SELECT array_agg(DISTINCT auth_method) AS methods FROM pg_hba_file_rules',
  );
  assert.deepEqual(rows[0]?.methods, ['scram-sha-256']);
});

test('databases created for tests side by side are separate', async () => {
  const a = await postgres.cluster.createDatabase('side');
  const b = await postgres.cluster.createDatabase('side');
  assert.notEqual(a, b);
  await postgres.cluster.query('CREATE TABLE only_here (id int)', [], a);
  const { rows } = await postgres.cluster.query<{ n: string }>(
    "SELECT count(*) AS n FROM pg_tables WHERE tablename = 'only_here'",
    [],
    b,
  );
  assert.equal(rows[0]?.n, '0');
  await assert.rejects(postgres.cluster.createDatabase('Bad-Name'), /lower-case/);
});

test('kill -9 of the whole server, then restart: committed rows are there, uncommitted ones are not', async () => {
  const db = postgres.database;
  await postgres.cluster.query('CREATE TABLE jobs (id int PRIMARY KEY)', [], db);
  await postgres.cluster.query('INSERT INTO jobs SELECT generate_series(1, 1000)', [], db);
  const open = new pg.Client(postgres.cluster.connection(db));
  open.on('error', () => {});
  await open.connect();
  await open.query('BEGIN');
  await open.query('INSERT INTO jobs VALUES (5000)');
  const portBefore = postgres.cluster.port;
  const processes = postgres.cluster.processes();
  // The postmaster, its background processes and the open client's backend.
  assert.ok(processes.length > 3, `only ${processes.length} server processes`);
  await postgres.cluster.kill9();
  assert.equal(postgres.cluster.pid(), undefined);
  assert.deepEqual(livingProcesses(processes), [], 'a server process outlived kill -9');
  await open.end().catch(() => {});
  await postgres.cluster.restart();
  assert.equal(postgres.cluster.port, portBefore);
  const { rows } = await postgres.cluster.query<{ n: string; max: number }>(
    'SELECT count(*) AS n, max(id) AS max FROM jobs',
    [],
    db,
  );
  assert.deepEqual(rows[0], { n: '1000', max: 1000 });
  assert.match(postgres.cluster.logs(), /database system was interrupted|not properly shut down/);
});

test('stop is a fast shutdown that leaves no process; restart comes back on the same data', async () => {
  const db = postgres.database;
  await postgres.cluster.query('CREATE TABLE kept (id int)', [], db);
  const idle = new pg.Client(postgres.cluster.connection(db));
  idle.on('error', () => {});
  await idle.connect();
  const processes = postgres.cluster.processes();
  assert.ok(processes.length > 3);
  // A connected client does not hold a fast shutdown back.
  await postgres.cluster.stop();
  assert.deepEqual(livingProcesses(processes), []);
  assert.match(postgres.cluster.logs(), /received fast shutdown request/);
  await idle.end().catch(() => {});
  await postgres.cluster.restart();
  await postgres.cluster.query('SELECT * FROM kept', [], db);
});

test('each cluster has a password of its own; close removes every file, its shared memory too; a missing postgresql-15 is one line naming the package', async () => {
  const other = await startPostgres();
  const processes = other.processes();
  assert.ok(processes.length > 1);
  // Both are copies of the run's one initdb (a template), each given its own password at its start.
  assert.notEqual(other.password, postgres.cluster.password);
  const crossed = new pg.Client({ ...postgres.cluster.connection(), password: other.password });
  crossed.on('error', () => {});
  await assert.rejects(
    crossed.connect(),
    (err: unknown) => err instanceof Error && 'code' in err && err.code === '28P01',
  );
  // Its dynamic shared memory is in its data directory, removed with it: in /dev/shm the
  // segments of a cluster stopped at once outlived it (postgresSettings says why).
  const segments = readdirSync(join(other.dataDir, 'pg_dynshmem'));
  await other.close();
  assert.notDeepEqual(segments, [], 'no dynamic shared memory in the data directory');
  assert.deepEqual(livingProcesses(processes), []);
  assert.equal(existsSync(other.dataDir), false);
  assert.equal(existsSync(other.passwordFile), false);
  await assert.rejects(startPostgres({ binDir: '/nonexistent/postgresql/15/bin' }), (err: unknown) => {
    assert.ok(err instanceof Error);
    assert.match(err.message, /^PostgreSQL 15 is not installed .*apt-get install postgresql-15$/);
    assert.ok(!err.message.includes('\n'));
    return true;
  });
});

test('useCluster: the file has its cluster and database from its first test; storeToml names them, not the password', async () => {
  assert.equal(postgres.database, 'helper_1');
  const { rows } = await postgres.cluster.query<{ db: string }>(
    'SELECT current_database() AS db',
    [],
    postgres.database,
  );
  assert.equal(rows[0]?.db, postgres.database);
  const toml = postgres.storeToml('s');
  assert.equal(
    toml,
    `[store]\nkind = "postgres"\nurl = "postgres://sepp@127.0.0.1:${postgres.cluster.port}/helper_1"\npassword_file = "${postgres.cluster.passwordFile}"\nschema = "s"\n`,
  );
  assert.match(postgres.storeToml('s', '/elsewhere'), /\npassword_file = "\/elsewhere"\n/);
  // One client, ended in the file's `after` before the cluster closes (which fails it, and the file, otherwise).
  const client = await postgres.client();
  assert.equal(await postgres.client(), client);
  const { rows: users } = await client.query<{ db: string; user: string }>(
    'SELECT current_database() AS db, current_user AS user',
  );
  assert.deepEqual(users[0], { db: postgres.database, user: postgres.cluster.user });
});
