/**
 * The settings issue 14 added: admin.trusted_proxies, admin.max_sessions_per_user
 * and the /metrics token (telemetry.metrics_token, metrics_token_sha256).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { redactConfig } from '../../src/config/redact.ts';
import { assertProblem, loadToml, problemsOf } from './helpers.ts';

test('admin.trusted_proxies: addresses and CIDR ranges, kept as address/prefix', () => {
  const config = loadToml('[admin]\ntrusted_proxies = ["10.0.0.5", "10.1.0.0/16", "::1", "fd00::/8"]\n');
  assert.deepEqual(config.admin.trustedProxies, ['10.0.0.5/32', '10.1.0.0/16', '::1/128', 'fd00::/8']);
});

test('admin.trusted_proxies: host names, zone ids, bad prefixes and non-lists are refused with the item', () => {
  const cases: [string, RegExp][] = [
    ['["proxy.internal"]', /item 1 "proxy.internal" is not an IP address or a CIDR range/],
    ['["10.0.0.1", "fe80::1%eth0"]', /item 2 "fe80::1%eth0" is not an IP address.*no zone ids/],
    ['["10.0.0.0/33"]', /item 1 "10.0.0.0\/33": the prefix length after \/ must be a number from 0 to 32/],
    ['["fd00::/129"]', /from 0 to 128/],
    ['["10.0.0.0/8/8"]', /is not an IP address or a CIDR range/],
    ['["10.0.0.0/x"]', /prefix length/],
    ['"10.0.0.5"', /is not a list of addresses, e\.g\. \["10\.0\.0\.5"/],
    ['[5]', /item 1 is 5, not a string/],
  ];
  for (const [value, message] of cases) {
    assertProblem(problemsOf(`[admin]\ntrusted_proxies = ${value}\n`), 'admin.trusted_proxies', message);
  }
});

test('admin.max_sessions_per_user: 1 to 1000', () => {
  assert.equal(loadToml('[admin]\nmax_sessions_per_user = 3\n').admin.maxSessionsPerUser, 3);
  assertProblem(
    problemsOf('[admin]\nmax_sessions_per_user = 0\n'),
    'admin.max_sessions_per_user',
    /below the minimum 1/,
  );
});

test('the /metrics token: as a SHA-256 or in plain text (hashed at load), never both; never shown', () => {
  const token = 'a-metrics-token-0123456789';
  const sha = createHash('sha256').update(token).digest('hex');
  const plain = loadToml(`[telemetry]\nmetrics_token = "${token}"\n`);
  assert.equal(plain.telemetry.metricsTokenSha256, sha);
  assert.deepEqual(plain.plaintextSecrets, ['telemetry.metrics_token']);
  assert.ok(!JSON.stringify(plain).includes(token), 'the loaded config holds only the digest');
  const hashed = loadToml(`[telemetry]\nmetrics_token_sha256 = "${sha.toUpperCase()}"\n`);
  assert.equal(hashed.telemetry.metricsTokenSha256, sha);
  assert.deepEqual(hashed.plaintextSecrets, []);
  assert.ok(!JSON.stringify(redactConfig(hashed)).includes(sha), 'the digest is redacted where shown');
  assertProblem(
    problemsOf(`[telemetry]\nmetrics_token = "${token}"\nmetrics_token_sha256 = "${sha}"\n`),
    'telemetry.metrics_token',
    /both metrics_token and metrics_token_sha256 are set/,
  );
  assertProblem(
    problemsOf('[telemetry]\nmetrics_token = "short"\n'),
    'telemetry.metrics_token',
    /at least 16/,
  );
});

test('plaintextSecrets names every secret written in the file in plain text', () => {
  const config = loadToml(`
[grpc]
[[grpc.api_keys]]
name = "a"
role = "admin"
key = "0123456789abcdef-plain"
[[grpc.api_keys]]
name = "b"
role = "worker"
key_sha256 = "${'ab'.repeat(32)}"
[telemetry]
otlp_endpoint = "https://user:pw@collector.example:4318"
`);
  assert.deepEqual(config.plaintextSecrets, ['grpc.api_keys[0].key', 'telemetry.otlp_endpoint']);
  const fromEnv = loadToml('', { env: { SEPP_OTLP_ENDPOINT: 'https://user:pw@collector.example:4318' } });
  assert.deepEqual(fromEnv.plaintextSecrets, [], 'a secret from the environment is not in the file');
});
