import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../../src/config/config-error.ts';
import { checkConfigFile } from '../../src/config/load.ts';
import { defaultEngineLimits, defaultQueueSettings } from '../../src/engine/settings.ts';
import { assertProblem, cwd, fakeFiles, load, loadToml, problemsOf } from './helpers.ts';

test('with no file, no variables and no flags every setting has its default', () => {
  const config = load();
  assert.equal(config.configFile, null);
  assert.deepEqual(config.server, {
    dataDir: `${cwd}/sepp-data`,
    grpcListen: { host: '127.0.0.1', port: 50051, address: '127.0.0.1:50051', loopback: true },
    adminListen: { host: '127.0.0.1', port: 9465, address: '127.0.0.1:9465', loopback: true },
    httpListen: null,
    durability: 'full',
    walCheckpoints: 'auto',
    logLevel: 'info',
    logFormat: 'text',
    shutdownTimeoutMs: 10_000,
    diskReserveBytes: 32 * 1024 * 1024,
  });
  assert.deepEqual(config.grpc, {
    tls: null,
    apiKeys: [],
    insecureAllowUnauthenticated: false,
    maxMessageBytes: 4 * 1024 * 1024 + 64 * 1024,
    maxConnections: 4096,
    maxStreamsPerConnection: 1000,
    handshakeTimeoutMs: 10_000,
    idleTimeoutMs: 300_000,
    keepaliveMs: 30_000,
    keepaliveTimeoutMs: 20_000,
    firstMessageTimeoutMs: 10_000,
    maxEventSubscribersPerKey: 250,
    maxBytesInFlightPerConnection: 16 * 1024 * 1024,
    maxBytesInFlightPerKey: 64 * 1024 * 1024,
  });
  assert.deepEqual(config.admin, {
    tls: null,
    users: [],
    sessionTtlMs: 12 * 3600_000,
    insecureAllowUnauthenticated: false,
    trustedProxies: [],
    maxSessionsPerUser: 10,
  });
  assert.deepEqual(config.telemetry, {
    otlpEndpoint: null,
    serviceName: 'sepp',
    tracesSampleRatio: 1,
    metricsExportIntervalMs: 60_000,
    metricsTokenSha256: null,
  });
  assert.deepEqual(config.http, {
    tls: null,
    insecureAllowUnauthenticated: false,
    maxRequestBytes: 6 * 1024 * 1024,
    maxInFlightBytes: 256 * 1024 * 1024,
    maxInFlightBytesPerKey: 64 * 1024 * 1024,
    maxConnections: 4096,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    idleTimeoutMs: 60_000,
    writeTimeoutMs: 30_000,
  });
  assert.deepEqual(Object.keys(config.push), []);
  assert.deepEqual(config.plaintextSecrets, []);
  assert.equal(config.engine.strictQueues, false);
  assert.deepEqual(config.engine.limits, defaultEngineLimits);
  assert.deepEqual(config.engine.queueDefaults, defaultQueueSettings);
  assert.deepEqual(Object.keys(config.engine.queues), []);
});

test('the loaded config is frozen all the way down', () => {
  const config = loadToml('[queues.emails]\nallowed_types = ["send"]\n');
  assert.ok(Object.isFrozen(config));
  assert.ok(Object.isFrozen(config.server.grpcListen));
  assert.ok(Object.isFrozen(config.engine.queues));
  assert.ok(Object.isFrozen(config.engine.queues.emails?.allowedTypes));
  assert.throws(() => {
    (config.server as { durability: string }).durability = 'relaxed';
  }, TypeError);
});

test('a flag beats a variable, which beats the file, which beats the default', () => {
  const file = `
[server]
data_dir = "file-data"
grpc_listen = "127.0.0.1:1001"
admin_listen = "127.0.0.1:2001"
durability = "relaxed"
log_level = "warn"
log_format = "json"
`;
  const fromFile = loadToml(file);
  assert.equal(fromFile.server.dataDir, `${cwd}/file-data`);
  assert.equal(fromFile.server.grpcListen.port, 1001);
  assert.equal(fromFile.server.logLevel, 'warn');
  assert.equal(fromFile.server.logFormat, 'json');
  assert.equal(fromFile.server.durability, 'relaxed');

  const env = {
    SEPP_DATA_DIR: '/var/lib/env-data',
    SEPP_GRPC_LISTEN: '127.0.0.1:1002',
    SEPP_LOG_LEVEL: 'error',
    SEPP_DURABILITY: 'full',
  };
  const fromEnv = loadToml(file, { env });
  assert.equal(fromEnv.server.dataDir, '/var/lib/env-data');
  assert.equal(fromEnv.server.grpcListen.port, 1002);
  assert.equal(fromEnv.server.logLevel, 'error');
  assert.equal(fromEnv.server.durability, 'full');
  assert.equal(fromEnv.server.adminListen.port, 2001, 'not overridden: the file still counts');
  assert.equal(fromEnv.server.logFormat, 'json');

  const flags = { dataDir: 'flag-data', grpcListen: '127.0.0.1:1003', durability: 'relaxed' };
  const fromFlags = loadToml(file, { env, flags });
  assert.equal(fromFlags.server.dataDir, `${cwd}/flag-data`);
  assert.equal(fromFlags.server.grpcListen.port, 1003);
  assert.equal(fromFlags.server.durability, 'relaxed');
  assert.equal(fromFlags.server.logLevel, 'error', 'no flag: the variable still counts');
  assert.equal(fromFlags.server.adminListen.port, 2001);
});

test('every environment variable reaches its setting', () => {
  const config = load({
    env: {
      SEPP_DATA_DIR: 'd',
      SEPP_GRPC_LISTEN: '[::1]:7000',
      SEPP_ADMIN_LISTEN: 'localhost:7001',
      SEPP_DURABILITY: 'relaxed',
      SEPP_LOG_LEVEL: 'debug',
      SEPP_LOG_FORMAT: 'json',
      SEPP_SHUTDOWN_TIMEOUT_MS: '30s',
      SEPP_OTLP_ENDPOINT: 'http://collector:4318',
      SEPP_TRACES_SAMPLE_RATIO: '0.25',
    },
  });
  assert.equal(config.server.dataDir, `${cwd}/d`);
  assert.equal(config.server.grpcListen.address, '[::1]:7000');
  assert.equal(config.server.grpcListen.loopback, true);
  assert.equal(config.server.adminListen.address, 'localhost:7001');
  assert.equal(config.server.durability, 'relaxed');
  assert.equal(config.server.logLevel, 'debug');
  assert.equal(config.server.logFormat, 'json');
  assert.equal(config.server.shutdownTimeoutMs, 30_000);
  assert.equal(config.telemetry.otlpEndpoint, 'http://collector:4318');
  assert.equal(config.telemetry.tracesSampleRatio, 0.25);
});

test('an empty variable counts as unset; plain digits in a variable are milliseconds', () => {
  const config = loadToml('[server]\nlog_level = "warn"\n', {
    env: { SEPP_LOG_LEVEL: '', SEPP_SHUTDOWN_TIMEOUT_MS: '2500' },
  });
  assert.equal(config.server.logLevel, 'warn');
  assert.equal(config.server.shutdownTimeoutMs, 2500);
});

test('a bad value from a variable or a flag names the variable or flag and the setting', () => {
  const problems = problemsOf('', {
    env: { SEPP_DURABILITY: 'fsync', SEPP_SHUTDOWN_TIMEOUT_MS: 'soon' },
    flags: { logFormat: 'xml' },
  });
  const durability = assertProblem(problems, 'server.durability', /"fsync" is not one of "full", "relaxed"/);
  assert.equal(durability.source, 'SEPP_DURABILITY');
  assert.equal(assertProblem(problems, 'server.shutdown_timeout_ms').source, 'SEPP_SHUTDOWN_TIMEOUT_MS');
  assert.equal(assertProblem(problems, 'server.log_format', /"xml"/).source, '--log-format');
  assert.equal(problems.length, 3);
});

test('the file is --config, else $SEPP_CONFIG, else ./sepp.toml, else none', () => {
  const files = {
    '/etc/sepp/flag.toml': '[server]\nlog_level = "debug"\n',
    '/etc/sepp/env.toml': '[server]\nlog_level = "warn"\n',
    [`${cwd}/sepp.toml`]: '[server]\nlog_level = "error"\n',
  };
  const flagged = load({
    files,
    flags: { config: '/etc/sepp/flag.toml' },
    env: { SEPP_CONFIG: '/etc/sepp/env.toml' },
  });
  assert.equal(flagged.configFile, '/etc/sepp/flag.toml');
  assert.equal(flagged.server.logLevel, 'debug');
  const fromEnv = load({ files, env: { SEPP_CONFIG: '/etc/sepp/env.toml' } });
  assert.equal(fromEnv.configFile, '/etc/sepp/env.toml');
  assert.equal(fromEnv.server.logLevel, 'warn');
  const fromCwd = load({ files });
  assert.equal(fromCwd.configFile, `${cwd}/sepp.toml`);
  assert.equal(fromCwd.server.logLevel, 'error');
  assert.equal(load().configFile, null);
});

test('a named config file that does not exist is an error naming where it was named', () => {
  for (const [options, key] of [
    [{ flags: { config: 'missing.toml' } }, '--config'],
    [{ env: { SEPP_CONFIG: '/nope/sepp.toml' } }, 'SEPP_CONFIG'],
  ] as const) {
    assert.throws(
      () => load(options),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.code, 'invalid_argument');
        assertProblem(error.problems, key, /does not exist/);
        return true;
      },
    );
  }
});

test('relative paths in the file are relative to the file; from flags, to the working directory', () => {
  const files = {
    '/etc/sepp/sepp.toml':
      '[server]\ndata_dir = "data"\n[grpc.tls]\ncert_file = "tls/c.pem"\nkey_file = "/k.pem"\n',
  };
  const config = load({ files, flags: { config: '/etc/sepp/sepp.toml' } });
  assert.equal(config.server.dataDir, '/etc/sepp/data');
  assert.deepEqual(config.grpc.tls, { certFile: '/etc/sepp/tls/c.pem', keyFile: '/k.pem' });
  const flagged = load({ files, flags: { config: '/etc/sepp/sepp.toml', dataDir: 'here' } });
  assert.equal(flagged.server.dataDir, `${cwd}/here`);
});

test('malformed TOML gives the file, line and column and shows the line', () => {
  const problems = problemsOf('[server]\nlog_level = "info"\ndurability = = "full"\n');
  assert.equal(problems.length, 1);
  const [problem] = problems;
  assert.equal(problem?.key, `${cwd}/sepp.toml:3:14`);
  assert.match(problem?.message ?? '', /^invalid TOML: /);
  assert.match(problem?.message ?? '', /durability = = "full"/);
});

test('a ConfigError lists every problem, one per line, each naming its setting', () => {
  try {
    loadToml('[server]\nlog_level = "loud"\ndurability = "maybe"\n');
    assert.fail('expected a ConfigError');
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.match(error.message, /sepp\.toml has 2 problems:/);
    assert.match(error.message, /\n {2}- server\.log_level: "loud" is not one of/);
    assert.match(error.message, /\n {2}- server\.durability: "maybe" is not one of/);
  }
});

test('checkConfigFile reports the file alone, ignoring the environment', () => {
  const readFile = fakeFiles({
    '/etc/good.toml': '[server]\nlog_level = "debug"\n',
    '/etc/bad.toml': '[server]\nlog_levels = "debug"\n',
  });
  const good = checkConfigFile('/etc/good.toml', { readFile, cwd });
  assert.ok(good.ok);
  assert.equal(good.config.server.logLevel, 'debug');
  const bad = checkConfigFile('/etc/bad.toml', { readFile, cwd });
  assert.ok(!bad.ok);
  assertProblem(bad.problems, 'server.log_levels', /did you mean log_level\?/);
  const missing = checkConfigFile('/etc/none.toml', { readFile, cwd });
  assert.ok(!missing.ok);
  assertProblem(missing.problems, '/etc/none.toml', /\/etc\/none\.toml does not exist/);
});

test('malformed TOML never shows a secret of the lines it quotes', () => {
  const secrets = {
    key: 'sepp-secret-cut-short-0123456789',
    digest: 'ab'.repeat(32),
    token: 'sepp-secret-metrics-0123456789',
    // Written by mistake where the name of the variable holding it goes (store.password_env).
    password: 'pg-secret-written-as-env-0123',
  };
  const cases = [
    // Cut before the closing quote, as a truncated file is.
    `[[grpc.api_keys]]\nname = "ci"\nrole = "admin"\nkey = "${secrets.key}`,
    `[[grpc.api_keys]]\nname = "ci"\nkey_sha256 = '${secrets.digest}'\nrole = = "admin"\n`,
    `[telemetry]\nmetrics_token = "${secrets.token}"\nservice_name = = "x"\n`,
    `[[grpc.api_keys]]\nname = "ci"\nkey = """${secrets.key}\n`,
    // Keys may be quoted (attack8).
    `[[grpc.api_keys]]\nname = "ci"\n"key" = "${secrets.key}"\nrole = admin\n`,
    `[[grpc.api_keys]]\nname = "ci"\n'key' = '${secrets.key}'\nrole = admin\n`,
    `[telemetry]\n"metrics_token"= "${secrets.token}" x\n`,
    `grpc.api_keys = [{ name = "ci", "key" = "${secrets.key}", role = admin }]\n`,
    // A multi-line value whose line with `key = """` is above the lines quoted (attack8).
    `[[grpc.api_keys]]\nname = "ci"\nkey = """\n${secrets.key}""" x\n`,
    `[[grpc.api_keys]]\nname = "ci"\nkey = '''\n\n${secrets.key}'''\nrole = = "admin"\n`,
    `[store]\nkind = "postgres"\npassword_env = "${secrets.password}`,
    `[queues.q.push]\nurl = "https://example.com/hook"\nsecret_env = "${secrets.password}" x\n`,
  ];
  for (const text of cases) {
    const [problem] = problemsOf(text);
    assert.match(problem?.message ?? '', /^invalid TOML: /, text);
    assert.match(problem?.message ?? '', /<redacted>/, text);
    for (const secret of Object.values(secrets))
      assert.ok(!problem?.message.includes(secret.slice(0, 12)), `${text}\n${problem?.message}`);
  }
});
