/**
 * The configuration setting by setting (what the Configuration page shows)
 * and what a reload does with each setting: sources are named (default, file,
 * environment variable, flag), values are in plain units, secrets never
 * appear; every setting that needs a restart keeps its running value after a
 * reload, and every other one takes the file's ([limits] too, but the two the
 * message sizes are built around).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configLeaves, describeConfig, needsRestart } from '../../src/config/config-view.ts';
import { planReload } from '../../src/config/reload-plan.ts';
import { loadToml } from './helpers.ts';

const key = 'plain-key-for-the-view-0123456789';
const hash = `$scrypt$ln=10,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$${'A'.repeat(86)}`;

const running = loadToml(
  `[server]
grpc_listen = "127.0.0.1:6000"
[[grpc.api_keys]]
name = "ci"
role = "admin"
key = "${key}"
[[admin.users]]
name = "alice"
role = "admin"
password_hash = "${hash}"
[telemetry]
otlp_endpoint = "https://user:secret-pass@otel.example:4318/?token=abc"
metrics_token = "${key}-metrics"
[queue_defaults]
max_attempts = 4
[queues.emails]
backoff_base_ms = "2s"
`,
  { env: { SEPP_LOG_LEVEL: 'debug' }, flags: { dataDir: '/srv/data' } },
);

test('every setting is listed with its source, in plain units, secrets redacted', () => {
  const entries = new Map(describeConfig(running).map((e) => [e.key, e]));
  const shown = (k: string) => {
    const entry = entries.get(k);
    assert.ok(entry, `${k} is listed`);
    return `${entry.value} (${entry.source})`;
  };
  assert.equal(shown('server.data_dir'), '/srv/data (--data-dir)');
  assert.equal(shown('server.log_level'), 'debug (SEPP_LOG_LEVEL)');
  assert.equal(shown('server.grpc_listen'), '127.0.0.1:6000 (file)');
  assert.equal(shown('server.shutdown_timeout_ms'), '10s (default)');
  assert.equal(shown('grpc.max_message_bytes'), '4160KiB (default)');
  assert.equal(shown('grpc.api_keys[0].name'), 'ci (file)');
  assert.equal(shown('grpc.api_keys[0].key_sha256'), '<redacted> (file)');
  assert.equal(shown('admin.users[0].password_hash'), '<redacted> (file)');
  assert.equal(shown('telemetry.metrics_token_sha256'), '<redacted> (file)');
  assert.equal(shown('telemetry.otlp_endpoint'), 'https://<redacted>@otel.example:4318/?<redacted> (file)');
  assert.equal(shown('admin.session_ttl_ms'), '12h (default)');
  assert.equal(shown('queue_defaults.max_attempts'), '4 (file)');
  assert.equal(shown('queues.emails.backoff_base_ms'), '2s (file)');
  assert.equal(shown('queues.emails.max_attempts'), '4 (queue_defaults)');
  assert.equal(shown('queues.emails.max_lease_ms'), '12h (default)');
  assert.deepEqual(entries.get('queues.emails.max_attempts')?.queue, {
    name: 'emails',
    setting: 'max_attempts',
  });
  const text = JSON.stringify(describeConfig(running));
  for (const secret of [key, 'secret-pass', 'token=abc', hash, running.grpc.apiKeys[0]?.keySha256 ?? '?']) {
    assert.ok(!text.includes(secret), `the view shows ${secret.slice(0, 12)}…`);
  }
});

test('a reload keeps every setting that needs a restart at its running value, and takes every other', () => {
  // A file that changes every setting there is.
  const next = loadToml(
    `[server]
data_dir = "/elsewhere"
grpc_listen = "127.0.0.1:6001"
admin_listen = "127.0.0.1:6002"
durability = "relaxed"
log_level = "warn"
log_format = "json"
shutdown_timeout_ms = "20s"
wal_checkpoints = "external"
[grpc]
max_message_bytes = "8MiB"
keepalive_ms = "10s"
max_event_subscribers_per_key = 5
[[grpc.api_keys]]
name = "deploy"
role = "worker"
key = "another-key-for-the-view-0123456789"
[admin]
session_ttl_ms = "1h"
trusted_proxies = ["10.0.0.1"]
max_sessions_per_user = 3
[[admin.users]]
name = "bob"
role = "viewer"
password_hash = "${hash}"
[telemetry]
otlp_endpoint = "http://collector:4318"
service_name = "other"
traces_sample_ratio = 0.5
metrics_export_interval_ms = "30s"
metrics_token_sha256 = "${'a'.repeat(64)}"
[engine]
strict_queues = true
[http]
write_timeout_ms = "2m"
idle_timeout_ms = "2m"
[limits]
max_batch_jobs = 10
max_wait_ms = "5s"
max_result_bytes = "32KiB"
[queue_defaults]
max_attempts = 9
[queues.reports]
max_depth = 10
`,
  );
  const plan = planReload(running, next);
  const before = new Map(configLeaves(running).map((l) => [l.key, JSON.stringify(l.raw)]));
  const kept = new Map(configLeaves(plan.config).map((l) => [l.key, JSON.stringify(l.raw)]));
  const wanted = new Map(configLeaves(next).map((l) => [l.key, JSON.stringify(l.raw)]));
  const wrong: string[] = [];
  for (const [k, value] of kept) {
    const expected = needsRestart(k) ? before.get(k) : wanted.get(k);
    if (value !== expected) wrong.push(`${k}: ${value}, expected ${expected}`);
  }
  assert.deepEqual(wrong, []);
  // What differs and needs a restart is named; the rest is listed as changed.
  assert.ok(plan.restartRequired.includes('server.grpc_listen'));
  assert.ok(plan.restartRequired.includes('server.wal_checkpoints'));
  assert.ok(plan.changed.includes('limits.max_batch_jobs'));
  assert.ok(plan.changed.includes('limits.max_wait_ms'));
  assert.ok(plan.changed.includes('grpc.max_event_subscribers_per_key'));
  assert.equal(plan.config.grpc.maxEventSubscribersPerKey, 5);
  assert.ok(plan.restartRequired.includes('limits.max_result_bytes'), 'sized into the message limits');
  assert.deepEqual(plan.limits, [
    { key: 'limits.max_batch_jobs', from: 1000, to: 10 },
    { key: 'limits.max_wait_ms', from: 60_000, to: 5000 },
  ]);
  assert.equal(plan.config.engine.limits.maxResultBytes, 64 * 1024);
  assert.ok(Object.isFrozen(plan.config.engine.limits));
  assert.ok(plan.restartRequired.includes('grpc.keepalive_ms'));
  assert.equal(plan.config.grpc.keepaliveMs, 30_000, 'the server keeps pinging as it started');
  assert.ok(plan.changed.includes('telemetry.otlp_endpoint'));
  assert.ok(plan.changed.includes('telemetry.service_name'));
  assert.ok(!plan.restartRequired.includes('server.log_level'));
  assert.ok(plan.changed.includes('server.log_level'));
  assert.ok(plan.changed.includes('grpc.api_keys (added deploy; removed ci)'));
  assert.ok(plan.changed.includes('admin.users (added bob; removed alice)'));
  assert.ok(plan.changed.includes('queues.emails (no longer declared)'));
  assert.ok(plan.changed.includes('queues.reports (declared)'));
  assert.ok(plan.changed.includes('engine.strict_queues'));
  // The HTTP API's write deadline is read per check; its other limits are built into its server.
  assert.ok(plan.changed.includes('http.write_timeout_ms'));
  assert.equal(plan.config.http.writeTimeoutMs, 120_000);
  assert.ok(plan.restartRequired.includes('http.idle_timeout_ms'));
  assert.equal(plan.config.http.idleTimeoutMs, 60_000);
  assert.ok(plan.changed.every((c) => !needsRestart(c)));
  assert.ok(Object.isFrozen(plan.config.server));
  // What the log lines show: each setting with its running and new value, in plain units.
  const shown = [...plan.shown.changed, ...plan.shown.restartRequired];
  assert.equal(plan.shown.changed.length, plan.changed.length);
  assert.equal(plan.shown.restartRequired.length, plan.restartRequired.length);
  for (const line of [
    'server.log_level debug -> warn',
    'limits.max_wait_ms 1m -> 5s',
    'limits.max_batch_jobs 1000 -> 10',
    'grpc.max_event_subscribers_per_key 250 -> 5',
    'admin.trusted_proxies (none) -> 10.0.0.1/32',
    'telemetry.otlp_endpoint https://<redacted>@otel.example:4318/?<redacted> -> http://collector:4318/',
    'server.grpc_listen 127.0.0.1:6000 -> 127.0.0.1:6001',
    'server.data_dir /srv/data -> /elsewhere',
    'grpc.api_keys (added deploy; removed ci)',
    'queues.reports (declared)',
  ]) {
    assert.ok(shown.includes(line), `${line} in ${shown.join('; ')}`);
  }
  // A secret: changed, never its value nor its hash.
  assert.ok(plan.shown.changed.includes('telemetry.metrics_token_sha256 changed'));
  // What ReloadConfig answers: the same settings, those in force now first, each with its two
  // values or, for a secret, a list or a queue, a summary instead (reload-secrets.test.ts walks every secret).
  assert.equal(plan.changes.length, plan.changed.length + plan.restartRequired.length);
  const restartAt = plan.changes.findIndex((c) => c.restartRequired);
  assert.ok(restartAt > 0 && plan.changes.slice(restartAt).every((c) => c.restartRequired));
  const changeOf = (k: string) => plan.changes.find((c) => c.key === k);
  assert.deepEqual(changeOf('server.log_level'), {
    key: 'server.log_level',
    values: { from: 'debug', to: 'warn' },
    restartRequired: false,
  });
  assert.deepEqual(changeOf('server.grpc_listen'), {
    key: 'server.grpc_listen',
    values: { from: '127.0.0.1:6000', to: '127.0.0.1:6001' },
    restartRequired: true,
  });
  assert.deepEqual(changeOf('telemetry.metrics_token_sha256'), {
    key: 'telemetry.metrics_token_sha256',
    summary: 'changed',
    restartRequired: false,
  });
  assert.deepEqual(changeOf('grpc.api_keys'), {
    key: 'grpc.api_keys',
    summary: 'added deploy; removed ci',
    restartRequired: false,
  });
  assert.deepEqual(changeOf('queues.reports'), {
    key: 'queues.reports',
    summary: 'declared',
    restartRequired: false,
  });
  const text = shown.join('; ');
  for (const secret of [
    key,
    'secret-pass',
    'token=abc',
    hash,
    'a'.repeat(64),
    running.telemetry.metricsTokenSha256 ?? '?',
  ]) {
    assert.ok(!text.includes(secret), `the log line shows ${secret.slice(0, 12)}…`);
  }
});

test('a value the reload log shows is bounded', () => {
  const proxies = Array.from({ length: 40 }, (_, i) => `"10.0.0.${i}"`).join(', ');
  const plan = planReload(running, loadToml(`[admin]\ntrusted_proxies = [${proxies}]\n`));
  const line = plan.shown.changed.find((c) => c.startsWith('admin.trusted_proxies '));
  assert.ok(line !== undefined && line.length < 250, line);
  assert.match(line, /^admin\.trusted_proxies \(none\) -> 10\.0\.0\.0\/32, 10\.0\.0\.1\/32, .*…$/);
});

test('turning login on or off takes a restart: the users stay as they run', () => {
  const noUsers = loadToml('');
  const withUsers = loadToml(`[[admin.users]]\nname = "alice"\nrole = "admin"\npassword_hash = "${hash}"\n`);
  const plan = planReload(noUsers, withUsers);
  assert.deepEqual(plan.restartRequired, ['admin.users (added alice)']);
  assert.deepEqual(plan.changes, [{ key: 'admin.users', summary: 'added alice', restartRequired: true }]);
  assert.deepEqual(plan.config.admin.users, []);
  const back = planReload(withUsers, noUsers);
  assert.deepEqual(back.restartRequired, ['admin.users (removed alice)']);
  assert.equal(back.config.admin.users.length, 1);
});

test('an unchanged file changes nothing', () => {
  const plan = planReload(running, running);
  assert.deepEqual([plan.changed, plan.restartRequired, plan.changes], [[], [], []]);
});

test('[[schedules]] and limits.max_schedules apply on a reload', () => {
  const schedule = (name: string, cron: string) =>
    `[[schedules]]\nname = "${name}"\ncron = "${cron}"\nqueue = "reports"\ntype = "build"\npayload = "{}"\nmetadata = { team = "billing" }\nstart_at = "2026-04-01T00:00:00Z"\n`;
  const before = loadToml(
    `[limits]\nmax_schedules = 100\n${schedule('nightly', '30 2 * * *')}${schedule('hourly', '0 * * * *')}`,
  );
  const after = loadToml(
    `[limits]\nmax_schedules = 50\n${schedule('nightly', '45 2 * * *')}${schedule('weekly', '0 3 * * 1')}`,
  );
  const plan = planReload(before, after);
  assert.deepEqual(plan.changed, [
    'limits.max_schedules',
    'schedules (added weekly; removed hourly; changed nightly)',
  ]);
  assert.deepEqual(plan.restartRequired, []);
  assert.deepEqual(plan.config.engine.schedules, after.engine.schedules);
  assert.equal(plan.config.engine.limits.maxSchedules, 50);
  // The Configuration page lists them, in plain units, as settings a reload applies.
  const entries = new Map(describeConfig(before).map((e) => [e.key, e]));
  const shown = (k: string) => `${entries.get(k)?.value} (${entries.get(k)?.source})`;
  assert.equal(shown('schedules[0].name'), 'nightly (file)');
  assert.equal(shown('schedules[0].cron'), '30 2 * * * (file)');
  assert.equal(shown('schedules[0].payload'), '{} (file)');
  assert.equal(shown('schedules[0].metadata'), '{"team":"billing"} (file)');
  assert.equal(shown('schedules[0].start_at'), '2026-04-01T00:00:00.000Z (file)');
  assert.equal(entries.get('schedules[1].name')?.restartRequired, false);
  assert.equal(entries.get('limits.max_schedules')?.restartRequired, false);
  // The two limits the message sizes are built around keep needing a restart; every other one applies.
  assert.deepEqual(
    [...entries.values()].filter((e) => e.key.startsWith('limits.') && e.restartRequired).map((e) => e.key),
    ['limits.max_metadata_bytes', 'limits.max_result_bytes'],
  );
  assert.deepEqual(planReload(before, before).restartRequired, []);
});
