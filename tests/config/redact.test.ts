import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { describePostgresUrl, redactConfig } from '../../src/config/redact.ts';
import { configWarnings } from '../../src/config/warnings.ts';
import { loadToml } from './helpers.ts';

const plainKey = 'plain-key-0123456789abcdef';
const hashedKey = createHash('sha256').update('another-key-0123456789').digest('hex');
const passwordHash =
  '$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA';
const withSecrets = `
[server]
grpc_listen = "0.0.0.0:50051"
admin_listen = "0.0.0.0:9465"
[[grpc.api_keys]]
name = "billing"
role = "producer"
key = "${plainKey}"
[[grpc.api_keys]]
name = "mailer"
role = "worker"
key_sha256 = "${hashedKey}"
[[admin.users]]
name = "alice"
role = "admin"
password_hash = "${passwordHash}"
[telemetry]
otlp_endpoint = "https://svc:tok3n-secret@otel.example:4318/v1?api_key=qu3ry-secret"
`;

test('redaction replaces every secret and keeps everything else', () => {
  const config = loadToml(withSecrets);
  const view = redactConfig(config);
  const text = JSON.stringify(view);
  const plainKeyHash = createHash('sha256').update(plainKey).digest('hex');
  for (const secret of [
    plainKey,
    plainKeyHash,
    hashedKey,
    passwordHash,
    'P3NVlUQOFwHxCn7kOj',
    'tok3n-secret',
    'qu3ry-secret',
  ]) {
    assert.ok(!text.includes(secret), `redacted view leaks ${secret}`);
  }
  assert.deepEqual(view.grpc, {
    tls: null,
    apiKeys: [
      { name: 'billing', role: 'producer', queues: null, keySha256: '<redacted>' },
      { name: 'mailer', role: 'worker', queues: null, keySha256: '<redacted>' },
    ],
    insecureAllowUnauthenticated: false,
    maxMessageBytes: config.grpc.maxMessageBytes,
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
  assert.deepEqual((view.admin as { users: unknown }).users, [
    { name: 'alice', role: 'admin', passwordHash: '<redacted>' },
  ]);
  assert.equal(
    (view.telemetry as { otlpEndpoint: unknown }).otlpEndpoint,
    'https://<redacted>@otel.example:4318/v1?<redacted>',
  );
  assert.deepEqual(view.server, JSON.parse(JSON.stringify(config.server)));
  assert.deepEqual(view.engine, JSON.parse(JSON.stringify(config.engine)));
});

test('the redacted view is plain JSON and leaves the config untouched', () => {
  const config = loadToml(withSecrets);
  const view = redactConfig(config);
  assert.deepEqual(JSON.parse(JSON.stringify(view)), view);
  assert.equal(config.admin.users[0]?.passwordHash, passwordHash);
});

test('risky settings produce warnings naming the setting', () => {
  const keys = (toml: string) => configWarnings(loadToml(toml)).map((w) => w.key);
  assert.deepEqual(keys(''), ['grpc.api_keys', 'admin.users'], 'loopback without authentication');
  assert.deepEqual(keys(withSecrets), ['grpc.tls', 'admin.tls'], 'credentials in clear text on the network');
  assert.deepEqual(
    keys(
      '[server]\ndurability = "relaxed"\nwal_checkpoints = "external"\ngrpc_listen = "0.0.0.0:1"\n' +
        '[grpc]\ninsecure_allow_unauthenticated = true\n' +
        '[telemetry]\notlp_endpoint = "http://c:4318"\ntraces_sample_ratio = 0\n',
    ),
    [
      'server.durability',
      'server.wal_checkpoints',
      'grpc.api_keys',
      'admin.users',
      'telemetry.traces_sample_ratio',
    ],
  );
  // On PostgreSQL, what only the SQLite store reads is said to be ignored, not warned about as SQLite's.
  const onPostgres = configWarnings(
    loadToml(
      '[server]\ndurability = "relaxed"\nwal_checkpoints = "external"\ndisk_reserve_bytes = "64MiB"\n' +
        '[store]\nkind = "postgres"\nurl = "postgres://sepp@db/sepp"\n',
    ),
  ).filter((w) => w.key.startsWith('server.'));
  assert.deepEqual(
    onPostgres.map((w) => w.key),
    ['server.durability', 'server.wal_checkpoints', 'server.disk_reserve_bytes'],
  );
  for (const w of onPostgres)
    assert.match(w.message, /^means nothing with store\.kind = "postgres" and is ignored: /);
  const [insecure] = configWarnings(
    loadToml('[server]\ngrpc_listen = "0.0.0.0:1"\n[grpc]\ninsecure_allow_unauthenticated = true\n'),
  );
  assert.match(insecure?.message ?? '', /anyone who can reach 0\.0\.0\.0:1 can use gRPC/);
});

test('a PostgreSQL URL for the start line: user, hosts, database and parameters, never a password', () => {
  assert.equal(
    describePostgresUrl('postgres://sepp@db.example:5432/jobs?sslmode=verify-full&sslrootcert=/etc/ca.pem'),
    'sepp@db.example:5432/jobs?sslmode=verify-full&sslrootcert=/etc/ca.pem',
  );
  assert.equal(
    describePostgresUrl('postgresql://sepp@a:5432,b:5433/jobs?target_session_attrs=read-write'),
    'sepp@a:5432,b:5433/jobs?target_session_attrs=read-write',
  );
  assert.equal(describePostgresUrl('postgres://db/jobs'), 'db/jobs');
  // The config refuses these; were one to come through, its secret would not be shown.
  assert.equal(
    describePostgresUrl(
      'postgres://sepp:hunter2secret@db/jobs?password=pw-in-query&sslpassword=x&sslmode=disable',
    ),
    'sepp:<redacted>@db/jobs?password=<redacted>&sslpassword=<redacted>&sslmode=disable',
  );
  // Nothing after a fragment's `#` is shown, wherever it starts.
  assert.equal(
    describePostgresUrl('postgres://sepp@db/jobs?sslmode=disable#password=x'),
    'sepp@db/jobs?sslmode=disable',
  );
  assert.equal(describePostgresUrl('postgres://db/jobs#x?password=y'), 'db/jobs');
  assert.equal(describePostgresUrl('not a url'), '<redacted>');
});
