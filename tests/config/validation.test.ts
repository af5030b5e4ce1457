import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { assertProblem, loadToml, problemsOf } from './helpers.ts';

const hashOfRandom = 'ab'.repeat(32);
const passwordHash =
  '$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA';

test('a value out of range names the setting, the bound and the range to choose from', () => {
  const problems = problemsOf(
    '[queues.emails]\nmax_payload_bytes = 0\n[queue_defaults]\nmax_attempts = 1001\n',
  );
  const payload = assertProblem(problems, 'queues.emails.max_payload_bytes');
  assert.equal(payload.message, '0 is below the minimum 1; set a size between 1 and 67108864 bytes (64MiB)');
  assertProblem(
    problems,
    'queue_defaults.max_attempts',
    /^1001 is above the maximum 1000; set a number between 1 and 1000$/,
  );
});

test('a number too large to be exact is refused for its size, naming the bound', () => {
  const problems = problemsOf(
    '[server]\nshutdown_timeout_ms = 1e300\n[limits]\nmax_batch_jobs = 9.007199254740992e15\n[queue_defaults]\nmax_depth = -1e20\n',
  );
  assertProblem(
    problems,
    'server.shutdown_timeout_ms',
    /^1e\+300 is above the maximum 600000; set a duration/,
  );
  assertProblem(problems, 'limits.max_batch_jobs', /^9007199254740992 is above the maximum 100000/);
  assertProblem(problems, 'queue_defaults.max_depth', /^-100000000000000000000 is below the minimum 0/);
});

test('durations and sizes take integers or one number with one unit', () => {
  const config = loadToml(`
[server]
shutdown_timeout_ms = "1.5s"
[admin]
session_ttl_ms = "90m"
[limits]
max_metadata_bytes = "32KiB"
max_wait_ms = 250
max_schedule_ahead_ms = "30d"
[queue_defaults]
max_payload_bytes = "2MiB"
max_lease_ms = "1h"
default_lease_ms = "45s"
backoff_base_ms = "500ms"
`);
  assert.equal(config.server.shutdownTimeoutMs, 1500);
  assert.equal(config.admin.sessionTtlMs, 90 * 60_000);
  assert.equal(config.engine.limits.maxMetadataBytes, 32 * 1024);
  assert.equal(config.engine.limits.maxWaitMs, 250);
  assert.equal(config.engine.limits.maxScheduleAheadMs, 30 * 86_400_000);
  assert.equal(config.engine.queueDefaults.maxPayloadBytes, 2 * 1024 * 1024);
  assert.equal(config.engine.queueDefaults.maxLeaseMs, 3_600_000);
  assert.equal(config.engine.queueDefaults.defaultLeaseMs, 45_000);
  assert.equal(config.engine.queueDefaults.backoff.baseMs, 500);
});

test('ambiguous or malformed durations and sizes are refused with the fix', () => {
  const problems = problemsOf(`
[server]
shutdown_timeout_ms = "1h30m"
[admin]
session_ttl_ms = "2H"
[limits]
max_metadata_bytes = "16KB"
max_error_bytes = "8 kilobytes"
max_wait_ms = 1.5
[queue_defaults]
max_payload_bytes = "1.0000001KiB"
dedup_window_ms = "10000"
`);
  assertProblem(
    problems,
    'server.shutdown_timeout_ms',
    /"1h30m" is not a duration; write one number with one unit/,
  );
  assertProblem(problems, 'admin.session_ttl_ms', /unknown unit "H"; units are lower case: use "h"/);
  assertProblem(problems, 'limits.max_metadata_bytes', /unknown unit "KB"; use the binary unit "KiB"/);
  assertProblem(problems, 'limits.max_error_bytes', /unknown unit "kilobytes"/);
  assertProblem(problems, 'limits.max_wait_ms', /1\.5 is not a whole number of milliseconds/);
  assertProblem(problems, 'queue_defaults.max_payload_bytes', /is not a whole number of bytes/);
  assertProblem(
    problems,
    'queue_defaults.dedup_window_ms',
    /"10000" is not a duration.*or an integer of milliseconds/,
  );
  assert.equal(problems.length, 7);
});

test('a value of the wrong type says what to write', () => {
  const problems = problemsOf(`
[server]
data_dir = 5
log_level = 3
[grpc]
insecure_allow_unauthenticated = "true"
[limits]
max_batch_jobs = "100"
[telemetry]
traces_sample_ratio = "0.5"
`);
  assertProblem(problems, 'server.data_dir', /5 is not a path/);
  assertProblem(problems, 'server.log_level', /3 is not one of "debug", "info", "warn", "error"/);
  assertProblem(
    problems,
    'grpc.insecure_allow_unauthenticated',
    /"true" is a string; write true without quotes/,
  );
  assertProblem(problems, 'limits.max_batch_jobs', /"100" is a string; write 100 without quotes/);
  assertProblem(problems, 'telemetry.traces_sample_ratio', /"0\.5" is a string; write 0\.5 without quotes/);
});

test('grpc keepalive: durations with units, within their bounds, never a string of digits', () => {
  const config = loadToml('[grpc]\nkeepalive_ms = "1s"\nkeepalive_timeout_ms = 2500\n');
  assert.deepEqual([config.grpc.keepaliveMs, config.grpc.keepaliveTimeoutMs], [1000, 2500]);
  const longest = loadToml('[grpc]\nkeepalive_ms = "1h"\nkeepalive_timeout_ms = "10m"\n');
  assert.deepEqual([longest.grpc.keepaliveMs, longest.grpc.keepaliveTimeoutMs], [3_600_000, 600_000]);
  const below = problemsOf('[grpc]\nkeepalive_ms = "999ms"\nkeepalive_timeout_ms = 0\n');
  assertProblem(
    below,
    'grpc.keepalive_ms',
    /^"999ms" \(999\) is below the minimum 1000; set a duration between 1000 and 3600000 ms \(1s to 1h\)$/,
  );
  assertProblem(
    below,
    'grpc.keepalive_timeout_ms',
    /^0 is below the minimum 1000; set a duration between 1000 and 600000 ms \(1s to 10m\)$/,
  );
  const above = problemsOf('[grpc]\nkeepalive_ms = "61m"\nkeepalive_timeout_ms = "1h"\n');
  assertProblem(above, 'grpc.keepalive_ms', /^"61m" \(3660000\) is above the maximum 3600000;/);
  assertProblem(above, 'grpc.keepalive_timeout_ms', /^"1h" \(3600000\) is above the maximum 600000;/);
  const wrong = problemsOf('[grpc]\nkeepalive_ms = "30000"\nkeepalive_timeout_ms = true\n');
  assertProblem(wrong, 'grpc.keepalive_ms', /"30000" is not a duration.*or an integer of milliseconds/);
  assertProblem(wrong, 'grpc.keepalive_timeout_ms', /^true is not a duration; set a duration between/);
  assert.equal(wrong.length, 2);
});

test('a table, list or date where a boolean belongs is a problem, not a crash', () => {
  const problems = problemsOf(
    '[admin]\ninsecure_allow_unauthenticated = {}\n[grpc]\ninsecure_allow_unauthenticated = [true]\n[engine]\nstrict_queues = 1979-05-27\n',
  );
  assertProblem(problems, 'admin.insecure_allow_unauthenticated', /^a table is not true or false$/);
  assertProblem(problems, 'grpc.insecure_allow_unauthenticated', /^a list is not true or false$/);
  assertProblem(problems, 'engine.strict_queues', /^a date is not true or false$/);
});

test('choices suggest the likely one', () => {
  const problems = problemsOf('[server]\nlog_level = "warning"\nlog_format = "JSON"\n');
  assertProblem(problems, 'server.log_level', /"warning" is not one of .* \(did you mean "warn"\?\)/);
  assertProblem(problems, 'server.log_format', /\(did you mean "json"\?\)/);
});

test('listen addresses must be host:port', () => {
  const problems = problemsOf('[server]\ngrpc_listen = "50051"\nadmin_listen = "::1:9465"\n');
  assertProblem(problems, 'server.grpc_listen', /has no port.*write "127\.0\.0\.1:50051"/);
  assertProblem(problems, 'server.admin_listen', /put an IPv6 address in brackets/);
  for (const bad of ['127.0.0.1:65536', 'host name:1', ':50051', '[zz]:1']) {
    const [problem] = problemsOf(`[server]\ngrpc_listen = "${bad}"\n`);
    assert.equal(problem?.key, 'server.grpc_listen', bad);
  }
});

test('a listen address with an IPv6 zone id is a config error naming the setting, not a TypeError', () => {
  const problems = problemsOf(
    '[server]\ngrpc_listen = "[::1%lo]:50051"\nadmin_listen = "[fe80::1%eth0]:9465"\n',
  );
  assertProblem(problems, 'server.grpc_listen', /zone id \("%lo"\) is not supported/);
  assertProblem(problems, 'server.admin_listen', /zone id \("%eth0"\) is not supported/);
});

test('an unknown key is an error with a suggestion: a near name, or the section it belongs in', () => {
  const problems = problemsOf(`
log_level = "info"
[server]
data_dri = "x"
[limits]
max_payload_bytes = 10
[queues.emails]
max_atempts = 3
[telemetry]
colour = "blue"
[grpc]
api_key = "x"
[serverr]
`);
  assertProblem(
    problems,
    'log_level',
    /does not belong at the top of the file; it is a setting of \[server\]/,
  );
  assertProblem(problems, 'server.data_dri', /^unknown setting; did you mean data_dir\?$/);
  assertProblem(
    problems,
    'limits.max_payload_bytes',
    /does not belong in \[limits\]; it is a setting of \[queue_defaults\] and \[queues\.NAME\]/,
  );
  assertProblem(problems, 'queues.emails.max_atempts', /did you mean max_attempts\?/);
  assertProblem(
    problems,
    'telemetry.colour',
    /^unknown setting; the settings here are otlp_endpoint, service_name/,
  );
  assertProblem(problems, 'grpc.api_key', /did you mean api_keys\?/);
  assertProblem(problems, 'serverr', /did you mean server\?/);
  assert.equal(problems.length, 7);
});

test('a section that is not a table is reported as such', () => {
  const problems = problemsOf('server = 5\nqueues = "emails"\n[grpc]\napi_keys = { name = "a" }\n');
  assertProblem(problems, 'server', /is 5, but must be a table/);
  assertProblem(problems, 'queues', /must be a table of queues/);
  assertProblem(
    problems,
    'grpc.api_keys',
    /must be a list of tables: write each entry as its own \[\[grpc\.api_keys\]\] table/,
  );
});

test('queue names and job types must be valid names within limits.max_name_length', () => {
  const problems = problemsOf(`
[limits]
max_name_length = 8
[queues."bad name"]
[queues.averyverylongname]
[queues.ok]
allowed_types = ["send", "send", "x y"]
[queues.ok2]
allowed_types = ["waytoolongtype"]
[queues.ok3]
allowed_types = "send"
`);
  assertProblem(problems, 'queues."bad name"', /"bad name" is not a valid queue name/);
  assertProblem(problems, 'queues.averyverylongname', /longer than limits\.max_name_length \(8 characters\)/);
  assertProblem(problems, 'queues.ok.allowed_types', /"send" is listed twice/);
  assertProblem(
    problems,
    'queues.ok2.allowed_types',
    /"waytoolongtype" is longer than limits\.max_name_length/,
  );
  assertProblem(problems, 'queues.ok3.allowed_types', /is not a list of strings/);
});

test('queue names with dots and colons are allowed when quoted, and queues inherit queue_defaults', () => {
  const config = loadToml(`
[queue_defaults]
max_attempts = 7
backoff_factor = 3
[queues."emails.v2"]
max_lease_ms = "1h"
[queues."reports:daily"]
max_attempts = 2
backoff_jitter = 0
[queues.constructor]
`);
  const queues = config.engine.queues;
  assert.equal(queues['emails.v2']?.maxAttempts, 7);
  assert.equal(queues['emails.v2']?.maxLeaseMs, 3_600_000);
  assert.equal(queues['emails.v2']?.backoff.factor, 3);
  assert.equal(queues['reports:daily']?.maxAttempts, 2);
  assert.deepEqual(queues['reports:daily']?.backoff, {
    baseMs: 1000,
    factor: 3,
    capMs: 3_600_000,
    jitter: 0,
  });
  const objectMember: string = 'constructor';
  assert.equal(
    queues[objectMember]?.maxAttempts,
    7,
    'a queue named like an Object member is still just a queue',
  );
  const inherited: string = 'toString';
  assert.equal(queues[inherited], undefined, 'no inherited members');
});

test('a lease default above its maximum and a backoff cap below its base are refused where they are set', () => {
  const problems = problemsOf(`
[queue_defaults]
default_lease_ms = "2m"
max_lease_ms = "1m"
[queues.a]
backoff_base_ms = "10s"
backoff_cap_ms = "5s"
[queues.b]
max_attempts = 3
`);
  assertProblem(
    problems,
    'queue_defaults.default_lease_ms',
    /^120000 \(2m\) is longer than max_lease_ms \(60000 \(1m\)\); lower it or raise max_lease_ms$/,
  );
  assertProblem(
    problems,
    'queues.a.backoff_cap_ms',
    /5000 \(5s\) is below backoff_base_ms \(10000 \(10s\)\)/,
  );
  assert.equal(problems.length, 2, 'queue b inherits the bad pair but is not blamed for it');
});

test('strict_queues needs at least one declared queue', () => {
  const problems = problemsOf('[engine]\nstrict_queues = true\n');
  assertProblem(problems, 'engine.strict_queues', /no queue is declared.*\[queues\.NAME\]/);
  const config = loadToml('[engine]\nstrict_queues = true\n[queues.emails]\n');
  assert.equal(config.engine.strictQueues, true);
  assert.deepEqual(Object.keys(config.engine.queues), ['emails']);
});

test('max_message_bytes must fit the largest payload, and grows to fit when not set', () => {
  const problems = problemsOf(
    '[grpc]\nmax_message_bytes = "4MiB"\n[queues.big]\nmax_payload_bytes = "8MiB"\n',
  );
  assertProblem(
    problems,
    'grpc.max_message_bytes',
    /4194304 is too small for the largest payload \(queues\.big\.max_payload_bytes = 8388608\).*at least 8470528/,
  );
  const grown = loadToml('[queues.big]\nmax_payload_bytes = "8MiB"\n');
  assert.equal(grown.grpc.maxMessageBytes, 8 * 1024 * 1024 + 16 * 1024 + 64 * 1024);
  const explicit = loadToml('[grpc]\nmax_message_bytes = "16MiB"\n');
  assert.equal(explicit.grpc.maxMessageBytes, 16 * 1024 * 1024);
});

test('API keys: plain keys are hashed, hashes are normalised, nothing else is kept', () => {
  const config = loadToml(`
[[grpc.api_keys]]
name = "producer-1"
role = "producer"
key = "0123456789abcdef-secret"
[[grpc.api_keys]]
name = "worker-1"
role = "worker"
key_sha256 = "${hashOfRandom.toUpperCase()}"
`);
  assert.deepEqual(config.grpc.apiKeys, [
    {
      name: 'producer-1',
      role: 'producer',
      queues: null,
      keySha256: createHash('sha256').update('0123456789abcdef-secret').digest('hex'),
    },
    { name: 'worker-1', role: 'worker', queues: null, keySha256: hashOfRandom },
  ]);
  assert.ok(!JSON.stringify(config).includes('0123456789abcdef-secret'), 'the plain key is not kept');
});

test('API keys: name, role and exactly one of key and key_sha256; unique names and keys', () => {
  const problems = problemsOf(`
[[grpc.api_keys]]
role = "reader"
key_sha256 = "${hashOfRandom}"
[[grpc.api_keys]]
name = "both"
role = "admin"
key = "0123456789abcdef0"
key_sha256 = "${hashOfRandom}"
[[grpc.api_keys]]
name = "neither"
role = "admin"
[[grpc.api_keys]]
name = "short"
role = "worker"
key = "hunter2"
[[grpc.api_keys]]
name = "badhash"
role = "worker"
key_sha256 = "abc"
[[grpc.api_keys]]
name = "a"
role = "worker"
key_sha256 = "${'cd'.repeat(32)}"
[[grpc.api_keys]]
name = "a"
role = "producer"
key_sha256 = "${'ef'.repeat(32)}"
[[grpc.api_keys]]
name = "c"
role = "producer"
key_sha256 = "${'cd'.repeat(32)}"
`);
  assertProblem(problems, 'grpc.api_keys[0].name', /is missing/);
  assertProblem(problems, 'grpc.api_keys[0].role', /"reader" is not one of "producer", "worker", "admin"/);
  assertProblem(problems, 'grpc.api_keys[1].key', /both key and key_sha256 are set; set exactly one/);
  assertProblem(problems, 'grpc.api_keys[2].key', /neither key nor key_sha256 is set; set exactly one/);
  const short = assertProblem(problems, 'grpc.api_keys[3].key', /is 7 characters; use at least 16/);
  assert.ok(!short.message.includes('hunter2'), 'a key is never repeated in a message');
  assertProblem(problems, 'grpc.api_keys[4].key_sha256', /write the 64 hex digits of SHA-256/);
  assertProblem(
    problems,
    'grpc.api_keys[6].name',
    /"a" is already used by grpc\.api_keys\[5\]; names must be unique/,
  );
  assertProblem(problems, 'grpc.api_keys[7].key', /is the same key as grpc\.api_keys\[5\]/);
  assert.equal(problems.length, 8);
});

test('a problem never repeats a secret: a key written as key_sha256, credentials in a bad collector URL', () => {
  const key = 'sepp-secret-pasted-key-0123456789';
  const keyProblem = assertProblem(
    problemsOf(`[[grpc.api_keys]]\nname = "a"\nrole = "admin"\nkey_sha256 = "${key}"\n`),
    'grpc.api_keys[0].key_sha256',
    /write the 64 hex digits of SHA-256/,
    /not repeated/,
  );
  assert.ok(!keyProblem.message.includes(key), keyProblem.message);

  const token = 'sepp-secret-collector-token';
  for (const url of [
    `ftp://otel:${token}@collector.example:4318/v1?api_key=${token}`,
    `otel:${token}@collector.example:4318`,
    `http://otel:${token}@[collector`,
  ]) {
    for (const problems of [
      problemsOf(`[telemetry]\notlp_endpoint = "${url}"\n`),
      problemsOf('', { env: { SEPP_OTLP_ENDPOINT: url } }),
    ]) {
      const problem = assertProblem(problems, 'telemetry.otlp_endpoint', /http:\/\/|URL/);
      assert.ok(!problem.message.includes(token), problem.message);
    }
  }
  const wrongScheme = problemsOf(`[telemetry]\notlp_endpoint = "ftp://otel:${token}@collector.example/v1"\n`);
  assertProblem(
    wrongScheme,
    'telemetry.otlp_endpoint',
    /"ftp:\/\/<redacted>@collector\.example\/v1" must start/,
  );
});

test('admin users: name, role and a password hash from `sepp admin hash-password`, unique names', () => {
  const config = loadToml(`
[[admin.users]]
name = "alice@example.com"
role = "operator"
password_hash = "${passwordHash}"
`);
  assert.deepEqual(config.admin.users, [{ name: 'alice@example.com', role: 'operator', passwordHash }]);

  const problems = problemsOf(`
[[admin.users]]
name = "bob"
role = "root"
password = "hunter2"
[[admin.users]]
name = "carol"
role = "viewer"
password_hash = "hunter2"
[[admin.users]]
name = "dave"
role = "viewer"
password_hash = "${passwordHash}"
[[admin.users]]
name = "dave"
role = "admin"
password_hash = "${passwordHash}"
`);
  assertProblem(problems, 'admin.users[0].role', /"root" is not one of "viewer", "operator", "admin"/);
  assertProblem(problems, 'admin.users[0].password', /never stored.*sepp admin hash-password.*password_hash/);
  assertProblem(problems, 'admin.users[0].password_hash', /is missing/);
  assertProblem(problems, 'admin.users[1].password_hash', /is not a password hash.*sepp admin hash-password/);
  assertProblem(problems, 'admin.users[3].name', /"dave" is already used by admin\.users\[2\]/);
  assert.equal(problems.length, 5);
});

test('TLS needs both files or neither, and the files must exist', () => {
  const problems = problemsOf('[grpc.tls]\ncert_file = "c.pem"\n[admin.tls]\nkey_file = "k.pem"\n');
  assertProblem(problems, 'grpc.tls.key_file', /is missing: \[grpc\.tls\] needs both cert_file and key_file/);
  assertProblem(problems, 'admin.tls.cert_file', /is missing: \[admin\.tls\] needs both/);
  const missing = problemsOf('[admin.tls]\ncert_file = "c.pem"\nkey_file = "k.pem"\n', {
    fileExists: (path) => path.endsWith('k.pem'),
  });
  assertProblem(missing, 'admin.tls.cert_file', /\/srv\/sepp\/c\.pem does not exist/);
  assert.equal(missing.length, 1);
});

test('telemetry: an http(s) endpoint and a ratio between 0 and 1', () => {
  const problems = problemsOf('[telemetry]\notlp_endpoint = "collector:4318"\ntraces_sample_ratio = 1.5\n');
  assertProblem(problems, 'telemetry.otlp_endpoint', /must start with http:\/\/ or https:\/\//);
  assertProblem(problems, 'telemetry.traces_sample_ratio', /1\.5 is above the maximum 1/);
  const config = loadToml(
    '[telemetry]\notlp_endpoint = "https://otel.example:4318"\ntraces_sample_ratio = 0.1\n',
  );
  assert.equal(config.telemetry.otlpEndpoint, 'https://otel.example:4318');
  assert.equal(config.telemetry.tracesSampleRatio, 0.1);
});
