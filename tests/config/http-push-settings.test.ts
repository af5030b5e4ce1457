/**
 * The HTTP API's settings (server.http_listen, [http]) and push targets
 * ([queues.NAME.push]): defaults, the fail-closed rule, the secret read from a
 * file or a variable and never shown, and what a reload does with them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inspect } from 'node:util';
import { configWarnings, describeConfig, planReload, redactConfig } from '../../src/config/index.ts';
import { assertProblem, cwd, load, loadToml, problemsOf } from './helpers.ts';

const secret = 'push-secret-0123456789abcdef';
const secretFiles: Record<string, Buffer> = { '/etc/sepp/push-secret': Buffer.from(`${secret}\n`) };
const readSecretFile = (path: string) => {
  const found = secretFiles[path];
  if (found === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
  return found;
};
const pushToml = (extra = '') =>
  `[queues.hooks.push]\nurl = "https://hooks.example.com/sepp"\nsecret_file = "/etc/sepp/push-secret"\n${extra}`;

test('the HTTP API is off by default and listens where server.http_listen says', () => {
  assert.equal(load().server.httpListen, null);
  const config = load({ env: { SEPP_HTTP_LISTEN: '127.0.0.1:8080' } });
  assert.equal(config.server.httpListen?.address, '127.0.0.1:8080');
  assert.equal(config.sources['server.http_listen'], 'SEPP_HTTP_LISTEN');
  assert.equal(load({ flags: { httpListen: '[::1]:0' } }).server.httpListen?.loopback, true);
});

test('a non-loopback HTTP API without API keys refuses to start unless explicitly insecure', () => {
  assertProblem(
    problemsOf('[server]\nhttp_listen = "0.0.0.0:8080"\n'),
    'grpc.api_keys',
    /server\.http_listen \(0\.0\.0\.0:8080\)/,
    /http\.insecure_allow_unauthenticated/,
  );
  const insecure = loadToml(
    '[server]\nhttp_listen = "0.0.0.0:8080"\n[http]\ninsecure_allow_unauthenticated = true\n',
  );
  assert.equal(insecure.http.insecureAllowUnauthenticated, true);
  const keyed = loadToml(
    '[server]\nhttp_listen = "0.0.0.0:8080"\n[[grpc.api_keys]]\nname = "a"\nrole = "admin"\nkey = "0123456789abcdef0123"\n',
  );
  assert.equal(keyed.server.httpListen?.loopback, false);
  assertProblem(
    problemsOf(
      '[server]\nhttp_listen = "127.0.0.1:8080"\n[http]\ninsecure_allow_unauthenticated = true\n[[grpc.api_keys]]\nname = "a"\nrole = "admin"\nkey = "0123456789abcdef0123"\n',
    ),
    'http.insecure_allow_unauthenticated',
    /every request must authenticate/,
  );
});

test('http.max_request_bytes grows to fit the largest payload as base64, and a set value must fit it', () => {
  const grown = loadToml('[queue_defaults]\nmax_payload_bytes = "30MiB"\n');
  assert.ok(grown.http.maxRequestBytes >= Math.ceil((30 * 1024 * 1024) / 3) * 4);
  assertProblem(
    problemsOf('[http]\nmax_request_bytes = "1MiB"\n'),
    'http.max_request_bytes',
    /too small for the largest payload .* as base64/,
  );
});

test('the in-flight bounds must admit the largest request, and headers come within the request deadline', () => {
  assertProblem(
    problemsOf('[http]\nmax_in_flight_bytes_per_key = "1MiB"\n'),
    'http.max_in_flight_bytes_per_key',
    /below http\.max_request_bytes/,
  );
  assertProblem(
    problemsOf('[http]\nmax_in_flight_bytes = "32MiB"\n'),
    'http.max_in_flight_bytes',
    /below http\.max_in_flight_bytes_per_key/,
  );
  assertProblem(
    problemsOf('[http]\nheaders_timeout_ms = "1m"\n'),
    'http.headers_timeout_ms',
    /longer than http\.request_timeout_ms/,
  );
});

test('a push target: URL, secret from a file (its trailing newline dropped) or a variable, defaults', () => {
  const config = loadToml(pushToml(), { readSecretFile });
  const target = config.push.hooks;
  assert.ok(target !== undefined);
  assert.equal(target.url, 'https://hooks.example.com/sepp');
  assert.equal(target.secret.reveal().toString(), secret);
  assert.equal(target.timeoutMs, 30_000);
  assert.equal(target.maxInFlight, 64);
  assert.equal(target.allowPrivateTargets, false);
  // [queues.hooks.push] declares the queue, with the defaults.
  assert.ok(config.engine.queues.hooks !== undefined);
  const fromEnv = loadToml(
    '[queues.hooks.push]\nurl = "http://10.0.0.5/jobs"\nsecret_env = "HOOK_SECRET"\ntimeout_ms = "5s"\n',
    { env: { HOOK_SECRET: secret } },
  );
  assert.equal(fromEnv.push.hooks?.secret.reveal().toString(), secret);
  assert.equal(fromEnv.push.hooks?.timeoutMs, 5000);
});

test('a push target needs a URL and exactly one readable secret of 16 bytes or more', () => {
  assertProblem(
    problemsOf('[queues.hooks.push]\nsecret_file = "/etc/sepp/push-secret"\n', { readSecretFile }),
    'queues.hooks.push.url',
    /is missing/,
  );
  assertProblem(
    problemsOf('[queues.hooks.push]\nurl = "ftp://x/y"\nsecret_env = "S"\n', { env: { S: secret } }),
    'queues.hooks.push.url',
    /http:\/\/ or https:\/\//,
  );
  assertProblem(
    problemsOf('[queues.hooks.push]\nurl = "https://x/y"\n'),
    'queues.hooks.push.secret_file',
    /no signing secret; set exactly one/,
  );
  assertProblem(
    problemsOf(pushToml('secret_env = "S"\n'), { readSecretFile, env: { S: secret } }),
    'queues.hooks.push.secret_file',
    /both secret_file and secret_env/,
  );
  assertProblem(
    problemsOf('[queues.hooks.push]\nurl = "https://x/y"\nsecret_file = "/nope"\n', { readSecretFile }),
    'queues.hooks.push.secret_file',
    /cannot read \/nope \(ENOENT\)/,
  );
  assertProblem(
    problemsOf('[queues.hooks.push]\nurl = "https://x/y"\nsecret_env = "S"\n'),
    'queues.hooks.push.secret_env',
    /S is not set/,
  );
  const short = problemsOf('[queues.hooks.push]\nurl = "https://x/y"\nsecret_env = "S"\n', {
    env: { S: 'short-secret' },
  });
  const problem = assertProblem(short, 'queues.hooks.push.secret_env', /12 bytes; use 16 to 4096/);
  assert.ok(!problem.message.includes('short-secret'), 'the secret is not repeated');
  assertProblem(
    problemsOf(pushToml('url2 = "x"\n'), { readSecretFile }),
    'queues.hooks.push.url2',
    /unknown setting/,
  );
  // [queue_defaults] takes no push table: every queue pushing to one URL would be a mistake.
  assertProblem(
    problemsOf('[queue_defaults.push]\nurl = "https://x/y"\n'),
    'queue_defaults.push',
    /unknown setting/,
  );
});

test('the push secret is never shown: not in JSON, util.inspect, the redacted config or the config page', () => {
  const config = loadToml(
    '[queues.hooks.push]\nurl = "https://user:pw@hooks.example.com/sepp?token=t0k3n"\nsecret_file = "/etc/sepp/push-secret"\n',
    { readSecretFile },
  );
  for (const text of [
    JSON.stringify(config),
    inspect(config, { depth: 20 }),
    JSON.stringify(redactConfig(config)),
    JSON.stringify(describeConfig(config)),
  ]) {
    assert.ok(!text.includes(secret), text.slice(0, 200));
  }
  for (const text of [JSON.stringify(redactConfig(config)), JSON.stringify(describeConfig(config))]) {
    assert.ok(!text.includes('t0k3n') && !text.includes(':pw@'), 'URL credentials are redacted');
  }
  assert.ok(config.plaintextSecrets.includes('queues.hooks.push.url'));
  const entries = describeConfig(config).filter((e) => e.key.startsWith('queues.hooks.push.'));
  assert.deepEqual(
    entries.map((e) => e.key),
    [
      'queues.hooks.push.url',
      'queues.hooks.push.secret_file',
      'queues.hooks.push.secret_env',
      'queues.hooks.push.timeout_ms',
      'queues.hooks.push.max_in_flight',
      'queues.hooks.push.allow_private_targets',
      'queues.hooks.push.secret_sha256',
    ],
  );
  assert.ok(
    entries.every((e) => !e.restartRequired),
    'a reload applies push targets',
  );
});

test('a reload applies changed push targets (a changed secret too); the HTTP socket needs a restart', () => {
  const before = loadToml(pushToml(), { readSecretFile });
  secretFiles['/etc/sepp/other-secret'] = Buffer.from('another-secret-0123456789');
  const after = loadToml(
    `[server]\nhttp_listen = "127.0.0.1:8081"\n${pushToml().replace('push-secret', 'other-secret')}`,
    { readSecretFile },
  );
  const plan = planReload(before, after);
  assert.ok(plan.changed.includes('queues.hooks.push.secret_file'), plan.changed.join());
  assert.ok(plan.changed.includes('queues.hooks.push.secret_sha256'), plan.changed.join());
  assert.deepEqual(plan.restartRequired, ['server.http_listen']);
  assert.equal(plan.config.push.hooks?.secret.reveal().toString(), 'another-secret-0123456789');
  assert.equal(plan.config.server.httpListen, null);
  assert.equal(cwd, '/srv/sepp');
});

test('risky settings are warned about: an HTTP API without keys or TLS, a push target in clear text', () => {
  const keyless = configWarnings(loadToml('[server]\nhttp_listen = "127.0.0.1:8080"\n'));
  assert.ok(
    keyless.some((w) => w.key === 'grpc.api_keys' && /the HTTP API at 127\.0\.0\.1:8080/.test(w.message)),
  );
  const clear = configWarnings(
    loadToml(
      '[server]\nhttp_listen = "0.0.0.0:8080"\n[[grpc.api_keys]]\nname = "a"\nrole = "admin"\nkey = "0123456789abcdef0123"\n' +
        '[queues."a.b".push]\nurl = "http://hooks.example.com/x"\nsecret_env = "S"\n' +
        '[queues.local.push]\nurl = "http://127.0.0.1:9/x"\nsecret_env = "S"\n',
      { env: { S: secret } },
    ),
  );
  assert.ok(clear.some((w) => w.key === 'http.tls'));
  assert.deepEqual(
    clear.filter((w) => w.key.endsWith('.push.url')).map((w) => w.key),
    ['queues."a.b".push.url'],
    'a loopback target is not warned about',
  );
});
