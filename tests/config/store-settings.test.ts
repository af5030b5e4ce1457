/**
 * `[store]`: SQLite by default, PostgreSQL with a URL; the password from a file or a
 * variable, never in the URL and never shown; PostgreSQL settings refused on the SQLite
 * store; every setting needs a restart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { configWarnings, describeConfig, planReload, redactConfig } from '../../src/config/index.ts';
import { redactSecretAssignments } from '../../src/config/load.ts';
import { redactUrl } from '../../src/config/redact.ts';
import { parsePostgresUrl } from '../../src/store/postgres-url.ts';
import { assertProblem, load, loadToml, problemsOf } from './helpers.ts';

const password = 'pg-Pass-0123456789';
const files: Record<string, Buffer> = { '/etc/sepp/pg-password': Buffer.from(`${password}\n`) };
const readSecretFile = (path: string) => {
  const found = files[path];
  if (found === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
  return found;
};
const pgToml = (extra = '') =>
  `[store]\nkind = "postgres"\nurl = "postgres://sepp@db.example:5432/queue"\n${extra}`;

test('the store is SQLite by default, with the PostgreSQL settings at their defaults', () => {
  const { store } = load();
  assert.deepEqual(
    { ...store },
    {
      kind: 'sqlite',
      url: null,
      passwordFile: null,
      passwordEnv: null,
      password: null,
      poolSize: 10,
      maxWaitingReads: 1000,
      maxWaitingReadsPerKey: 100,
      statementTimeoutMs: 30_000,
      schema: 'sepp',
    },
  );
});

test('kind = "postgres" takes the URL, pool size, statement timeout and schema; also from the environment', () => {
  const config = loadToml(
    pgToml(
      'pool_size = 4\nmax_waiting_reads = 50\nmax_waiting_reads_per_key = 50\nstatement_timeout_ms = "5s"\nschema = "jobs_1"\npassword_file = "/etc/sepp/pg-password"\n',
    ),
    { readSecretFile },
  );
  assert.equal(config.store.kind, 'postgres');
  assert.equal(config.store.url, 'postgres://sepp@db.example:5432/queue');
  assert.equal(config.store.poolSize, 4);
  assert.equal(config.store.maxWaitingReads, 50);
  assert.equal(config.store.maxWaitingReadsPerKey, 50);
  assert.equal(config.store.statementTimeoutMs, 5000);
  assert.equal(config.store.schema, 'jobs_1');
  assert.equal(
    config.store.password?.reveal().toString(),
    password,
    'the trailing newline is not part of it',
  );
  const fromEnv = load({
    env: { SEPP_STORE_KIND: 'postgres', SEPP_STORE_URL: 'postgresql://db/sepp', PGPASS_VAR: password },
  });
  assert.equal(fromEnv.store.kind, 'postgres');
  assert.equal(fromEnv.sources['store.url'], 'SEPP_STORE_URL');
  assert.equal(fromEnv.store.password, null, 'no password: the server may ask for none');
  const byVariable = loadToml(pgToml('password_env = "PGPASS_VAR"\n'), { env: { PGPASS_VAR: password } });
  assert.equal(byVariable.store.password?.reveal().toString(), password);
});

test('a PostgreSQL store needs a URL naming host and database, without a password', () => {
  assertProblem(problemsOf('[store]\nkind = "postgres"\n'), 'store.url', /is missing/);
  assertProblem(problemsOf('[store]\nkind = "mysql"\n'), 'store.kind', /"sqlite"/);
  assertProblem(
    problemsOf('[store]\nkind = "postgres"\nurl = "mysql://db/sepp"\n'),
    'store.url',
    /must start with postgres:\/\/ or postgresql:\/\//,
  );
  assertProblem(
    problemsOf('[store]\nkind = "postgres"\nurl = "postgres://db.example"\n'),
    'store.url',
    /must name the host and the database/,
  );
  const withPassword = assertProblem(
    problemsOf(`[store]\nkind = "postgres"\nurl = "postgres://sepp:${password}@db/sepp"\n`),
    'store.url',
    /holds a password; .*store\.password_file.*store\.password_env/,
  );
  assert.ok(!withPassword.message.includes(password), 'the message does not repeat the password');
  // The driver takes libpq's `?password=` (and a client key's `?sslpassword=`) as well: refused the same way.
  for (const param of ['password', 'sslpassword']) {
    const inQuery = assertProblem(
      problemsOf(
        `[store]\nkind = "postgres"\nurl = "postgres://sepp@db/sepp?sslmode=verify-full&${param}=${password}"\n`,
      ),
      'store.url',
      /holds a password; /,
    );
    assert.ok(!inQuery.message.includes(password), 'the message does not repeat the password');
  }
  // libpq's weaker modes are verify-full to the driver: the config says so instead of it.
  assertProblem(
    problemsOf('[store]\nkind = "postgres"\nurl = "postgres://sepp@db/sepp?sslmode=require"\n'),
    'store.url',
    /sslmode=require, which .* checks as verify-full .*; write sslmode=verify-full \(with sslrootcert=FILE for a private CA\) or sslmode=disable/,
  );
  assert.doesNotThrow(() =>
    loadToml(
      '[store]\nkind = "postgres"\nurl = "postgres://sepp@db/sepp?sslmode=verify-full&sslrootcert=/etc/ca.pem"\n',
    ),
  );
  // TLS without the certificate check, or a word the driver reads as neither on nor off, is refused.
  for (const [query, said] of [
    ['sslmode=no-verify', /sslmode=no-verify, which turns TLS on without checking the server's certificate/],
    ['ssl=no-verify', /ssl=no-verify, which turns TLS on without checking/],
    ['sslmode=allow', /sslmode=allow, which is not a mode sepp reads/],
    ['ssl=false', /ssl=false, which the driver reads as neither on nor off/],
  ] as const) {
    assertProblem(
      problemsOf(`[store]\nkind = "postgres"\nurl = "postgres://sepp@db/sepp?${query}"\n`),
      'store.url',
      said,
    );
  }
  assertProblem(problemsOf(pgToml('schema = "Sepp-1"\n')), 'store.schema', /lower-case letters/);
  assertProblem(problemsOf(pgToml('pool_size = 1\n')), 'store.pool_size', /2/);
  assertProblem(problemsOf(pgToml('max_waiting_reads = 0\n')), 'store.max_waiting_reads', /1/);
  assertProblem(
    problemsOf(pgToml('max_waiting_reads = 50\nmax_waiting_reads_per_key = 51\n')),
    'store.max_waiting_reads_per_key',
    /51 is above store\.max_waiting_reads \(50\), so one key could fill the whole queue/,
  );
});

test('the password comes from exactly one place, and a missing one is a problem of the file', () => {
  assertProblem(
    problemsOf(pgToml('password_file = "/etc/sepp/pg-password"\npassword_env = "X"\n'), { readSecretFile }),
    'store.password_file',
    /both password_file and password_env are set/,
  );
  assertProblem(
    problemsOf(pgToml('password_file = "/nope"\n'), { readSecretFile }),
    'store.password_file',
    /cannot read \/nope \(ENOENT\); it must hold the PostgreSQL password/,
  );
  assertProblem(
    problemsOf(pgToml('password_env = "UNSET_VAR"\n')),
    'store.password_env',
    /UNSET_VAR is not set/,
  );
});

test('a password written where the name of its variable goes is not repeated (attack8)', () => {
  const cases = [
    { toml: pgToml(`password_env = "${password}"\n`), key: 'store.password_env' },
    {
      toml: `[queues.q.push]\nurl = "https://h.example/"\nsecret_env = "${password}"\n`,
      key: 'queues.q.push.secret_env',
    },
  ];
  for (const { toml, key } of cases) {
    const problems = problemsOf(toml);
    assertProblem(problems, key, /not repeated here.*the name of an environment variable/);
    assert.ok(!JSON.stringify(problems).includes(password), JSON.stringify(problems));
  }
});

test('PostgreSQL settings on the SQLite store are refused, not ignored', () => {
  const problems = problemsOf('[store]\nurl = "postgres://db/sepp"\npool_size = 3\nmax_waiting_reads = 9\n');
  assertProblem(problems, 'store.url', /store\.kind is "sqlite"; set kind = "postgres"/);
  assertProblem(problems, 'store.pool_size', /store\.kind is "sqlite"/);
  assertProblem(problems, 'store.max_waiting_reads', /store\.kind is "sqlite"/);
  assertProblem(
    problemsOf('', { env: { SEPP_STORE_URL: 'postgres://db/sepp' } }),
    'store.url',
    /store\.kind is "sqlite"/,
  );
});

test('the password is never shown; the URL is shown; changing the store needs a restart', () => {
  const config = loadToml(pgToml('password_file = "/etc/sepp/pg-password"\n'), { readSecretFile });
  for (const rendering of [
    JSON.stringify(config),
    JSON.stringify(redactConfig(config)),
    inspect(config, { depth: 10 }),
    JSON.stringify(describeConfig(config)),
  ]) {
    assert.ok(!rendering.includes(password), 'the password appears in a rendering of the config');
  }
  const shown = describeConfig(config).find((entry) => entry.key === 'store.url');
  assert.equal(shown?.value, 'postgres://<redacted>@db.example:5432/queue', 'credentials in it are hidden');
  const running = load();
  const plan = planReload(running, config);
  assert.ok(plan.restartRequired.includes('store.kind'));
  assert.ok(plan.restartRequired.includes('store.url'));
  assert.equal(plan.config.store.kind, 'sqlite', 'the running store stays until a restart');
  const other = loadToml(pgToml('password_file = "/etc/sepp/other"\n'), {
    readSecretFile: () => Buffer.from('another-password'),
  });
  assert.ok(planReload(config, other).restartRequired.includes('store.password_sha256'));
  // A file cut short quotes its lines in the syntax error: the URL's credentials are hidden.
  assert.ok(!redactSecretAssignments(`url = "postgres://u:${password}@db/x`).includes(password));
});

test('a multi-host URL with target_session_attrs (failover) is read; other session attributes are refused', () => {
  const multi = 'postgres://sepp@db-a:5432,db-b:5433/queue?target_session_attrs=read-write';
  const config = loadToml(`[store]\nkind = "postgres"\nurl = "${multi}"\n`);
  assert.equal(config.store.url, multi);
  const target = parsePostgresUrl(multi);
  assert.ok(!(target instanceof Error));
  assert.deepEqual(target, {
    hosts: [
      { host: 'db-a:5432', url: 'postgres://sepp@db-a:5432/queue' },
      { host: 'db-b:5433', url: 'postgres://sepp@db-b:5433/queue' },
    ],
    targetSessionAttrs: 'read-write',
  });
  // Other parameters stay on each host's URL; one host is the plain case.
  assert.deepEqual(parsePostgresUrl('postgresql://db/x?sslmode=require'), {
    hosts: [{ host: 'db', url: 'postgresql://db/x?sslmode=require' }],
    targetSessionAttrs: 'any',
  });
  assertProblem(
    problemsOf(`[store]\nkind = "postgres"\nurl = "postgres://db-a,db-b/q?target_session_attrs=standby"\n`),
    'store.url',
    /target_session_attrs is "standby"; sepp reads "any" and "read-write"/,
  );
  assertProblem(
    problemsOf('[store]\nkind = "postgres"\nurl = "postgres://db-a,,db-b/q"\n'),
    'store.url',
    /must name the host/,
  );
  assertProblem(
    problemsOf(`[store]\nkind = "postgres"\nurl = "postgres://sepp:${password}@db-a,db-b/q"\n`),
    'store.url',
    /holds a password/,
  );
  // Shown (startup errors, config show) with its hosts, credentials redacted.
  assert.equal(redactUrl(multi), 'postgres://<redacted>@db-a:5432,db-b:5433/queue');
  assert.equal(
    redactUrl(`postgres://u:${password}@a,b/q?sslmode=x`),
    'postgres://<redacted>@a,b/q?<redacted>',
  );
});

test('a PostgreSQL host reached over the network without sslmode=verify-full is warned about', () => {
  const warned = (url: string) =>
    configWarnings(loadToml(`[store]\nkind = "postgres"\nurl = "${url}"\n`))
      .filter((w) => w.key === 'store.url')
      .map((w) => w.message);
  assert.deepEqual(warned('postgres://sepp@db.example:5432/sepp'), [
    'has no sslmode=verify-full: the jobs cross the network to db.example:5432 in clear text (and the password, if pg_hba.conf asks for it by "password" rather than "scram-sha-256"); add sslmode=verify-full, with sslrootcert=FILE for a private CA (docs/postgres.md)',
  ]);
  assert.match(
    warned('postgres://sepp@db-a:5432,db-b:5432/sepp?sslmode=disable&target_session_attrs=read-write')[0] ??
      '',
    /to db-a:5432, db-b:5432 in clear text/,
    'sslmode=disable too, every host named',
  );
  assert.equal(warned('postgres://sepp@db.example:5432/sepp?ssl=0').length, 1, 'ssl=0 is no TLS');

  for (const quiet of [
    'postgres://sepp@db.example:5432/sepp?sslmode=verify-full',
    'postgres://sepp@127.0.0.1:5432/sepp',
    'postgres://sepp@[::1]:5432/sepp',
    'postgres://sepp@localhost/sepp',
    'postgres://sepp@db.example/sepp?host=/var/run/postgresql',
    // The driver takes these as verified TLS (pg-connection-string), as verify-full is.
    'postgres://sepp@db.example:5432/sepp?ssl=true',
    'postgres://sepp@db.example:5432/sepp?ssl=1',
    'postgres://sepp@db.example:5432/sepp?sslrootcert=/etc/ca.pem',
    'postgres://sepp@db.example:5432/sepp?ssl=0&sslrootcert=/etc/ca.pem',
    'postgres://sepp@db.example:5432/sepp?sslnegotiation=direct',
  ]) {
    assert.deepEqual(warned(quiet), [], quiet);
  }
});

test("the environment's PGSSLMODE and certificate variables are refused where the driver would read them otherwise", () => {
  const toml = (query: string) =>
    `[store]\nkind = "postgres"\nurl = "postgres://sepp@db.example:5432/sepp${query}"\n`;
  const withEnv = (query: string, env: Record<string, string>) => problemsOf(toml(query), { env });
  // A URL without TLS parameters: the driver reads PGSSLMODE, and would not run as the file says.
  assertProblem(
    withEnv('', { PGSSLMODE: 'no-verify' }),
    'store.url',
    /^has no sslmode, so the driver reads the environment's PGSSLMODE=no-verify as TLS without checking the server's certificate, .*; write sslmode=verify-full .* in store\.url, or unset PGSSLMODE$/,
  );
  for (const mode of ['require', 'prefer', 'verify-ca', 'verify-full']) {
    assertProblem(
      withEnv('', { PGSSLMODE: mode }),
      'store.url',
      new RegExp(`PGSSLMODE=${mode} as TLS checking .* against the system CAs only`),
    );
  }
  assertProblem(
    withEnv('', { PGSSLMODE: 'allow' }),
    'store.url',
    /PGSSLMODE=allow is not a mode sepp's PostgreSQL driver reads/,
  );
  // libpq's certificate variables the driver never reads: the URL's parameter is what it reads.
  assertProblem(
    withEnv('?sslmode=verify-full', { PGSSLROOTCERT: '/etc/ca.pem' }),
    'store.url',
    /^is read with PGSSLROOTCERT set in the environment, which sepp's PostgreSQL driver does not read \(libpq does\); write sslrootcert=FILE in store\.url, or unset PGSSLROOTCERT$/,
  );
  assertProblem(withEnv('', { PGSSLKEY: '/etc/client.key' }), 'store.url', /PGSSLKEY .*write sslkey=FILE/);
  // A PGSSLNEGOTIATION the driver would refuse to connect with.
  assertProblem(
    withEnv('?sslmode=verify-full', { PGSSLNEGOTIATION: 'tls' }),
    'store.url',
    /PGSSLNEGOTIATION=tls .* refuses/,
  );
  assertProblem(
    withEnv('', { PGSSLNEGOTIATION: 'direct' }),
    'store.url',
    /PGSSLNEGOTIATION=direct .* needs TLS/,
  );

  // What agrees with the file, or what the driver does not read because the URL settles TLS, is fine.
  const loads = (query: string, env: Record<string, string>) =>
    assert.doesNotThrow(() => loadToml(toml(query), { env }), `${query} ${JSON.stringify(env)}`);
  loads('', { PGSSLMODE: 'disable' });
  loads('', { PGSSLMODE: '' });
  loads('?sslmode=verify-full', { PGSSLMODE: 'no-verify' });
  loads('?sslmode=disable', { PGSSLMODE: 'require' });
  loads('?ssl=true', { PGSSLMODE: 'no-verify' });
  loads('?sslnegotiation=direct', { PGSSLMODE: 'require' });
  loads('?sslmode=verify-full&sslrootcert=/etc/ca.pem', { PGSSLROOTCERT: '/etc/ca.pem' });
  loads('?sslmode=verify-full', { PGSSLNEGOTIATION: 'direct' });
  loads('?sslnegotiation=postgres', { PGSSLNEGOTIATION: 'tls' });
  // So the "clear text" warning is right whenever the config loads.
  const warned = configWarnings(loadToml(toml(''), { env: { PGSSLMODE: 'disable' } }));
  assert.equal(warned.filter((w) => w.key === 'store.url').length, 1);
});
