/**
 * No secret in any answer: a real server configured with every kind of secret
 * (API keys in plain text and as digests, a password hash, a TLS private key,
 * credentials in the collector URL) answers every GET route of its admin API,
 * /metrics and the OpenAPI document — logged in as admin, who sees the most —
 * and GetServerInfo over gRPC, without any of them. The configuration page's
 * data shows each secret field as redacted rather than dropping it.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import { hashPassword } from '../../src/admin/password.ts';
import { testScrypt } from '../helpers/admin.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const plainKey = 'sepp-secret-answers-plain-key-0123456789';
const hashedKey = 'sepp-secret-answers-hashed-key-0123456789';
const password = 'sepp-secret-answers-password';
const collectorPassword = 'sepp-secret-answers-collector';
registerSecret('admin password', password);
registerSecret('API key (configured as sha256)', hashedKey);
registerSecret('API key digest', sha256(plainKey));

let dir: string;
let t: TestServer;
let base: string;
let passwordHash: string;
let secrets: string[];
let cookie: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sepp-no-secrets-'));
  const cert = selfSignedCertificate(dir);
  passwordHash = await hashPassword(password, testScrypt);
  t = await startTestServer({
    toml: `${cert.toml('grpc')}
[[grpc.api_keys]]
name = "plain"
role = "admin"
key = "${plainKey}"
[[grpc.api_keys]]
name = "hashed"
role = "producer"
key_sha256 = "${sha256(hashedKey)}"
[[admin.users]]
name = "root"
role = "admin"
password_hash = "${passwordHash}"
[telemetry]
# Nothing listens on port 9; the URL's credentials are what matters.
otlp_endpoint = "http://sepp:${collectorPassword}@127.0.0.1:9"
`,
    tls: { certPem: cert.certPem, caPem: cert.certPem },
  });
  base = `http://127.0.0.1:${t.server.adminPort}`;
  const keyLines = readFileSync(cert.keyFile, 'utf8')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('-----'));
  secrets = [
    plainKey,
    hashedKey,
    sha256(plainKey),
    sha256(hashedKey),
    password,
    passwordHash,
    passwordHash.split('$').pop()!,
    collectorPassword,
    ...keyLines,
  ];
  const login = await fetch(`${base}/api/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: base },
    body: JSON.stringify({ user: 'root', password }),
  });
  assert.equal(login.status, 200, await login.text());
  cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
  registerSecret('session cookie', cookie.slice(cookie.indexOf('=') + 1));
  secrets.push(cookie.slice(cookie.indexOf('=') + 1));
});
after(async () => {
  await t.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const leaked = (text: string) => secrets.filter((s) => text.includes(s));

test('the configuration data shows every secret field as redacted', async () => {
  const reply = await fetch(`${base}/api/v1/config`, { headers: { cookie } });
  assert.equal(reply.status, 200);
  const text = await reply.text();
  assert.deepEqual(leaked(text), []);
  const { config } = JSON.parse(text) as {
    config: {
      grpc: { apiKeys: { name: string; keySha256: string }[]; tls: { keyFile: string } };
      admin: { users: { name: string; passwordHash: string }[] };
      telemetry: { otlpEndpoint: string };
    };
  };
  assert.deepEqual(
    config.grpc.apiKeys.map((k) => [k.name, k.keySha256]),
    [
      ['plain', '<redacted>'],
      ['hashed', '<redacted>'],
    ],
  );
  assert.deepEqual(
    config.admin.users.map((u) => [u.name, u.passwordHash]),
    [['root', '<redacted>']],
  );
  assert.equal(config.telemetry.otlpEndpoint, 'http://<redacted>@127.0.0.1:9/');
});

test('no GET route of the admin API, /metrics or the OpenAPI document answers with a secret', async () => {
  const { jobId } = await call(t.client, t.client.enqueue, { job: testJob('answers') }, bearer(plainKey));
  const doc = (await (await fetch(`${base}/api/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const paths = Object.entries(doc.paths)
    .filter(([, operations]) => 'get' in operations)
    .map(([path]) =>
      path.replace('{queue}', 'answers').replace('{id}', jobId).replace('{key}', 'no-such-key'),
    );
  assert.ok(paths.length >= 10, `GET routes: ${paths.join(', ')}`);
  const found: string[] = [];
  for (const path of [...paths, '/api/openapi.json', '/metrics']) {
    const reply = await fetch(`${base}${path}`, { headers: { cookie } });
    assert.ok(reply.status < 500, `${path}: ${reply.status}`);
    const text = await reply.text();
    for (const secret of leaked(text)) found.push(`${path} holds ${secret.slice(0, 6)}…`);
  }
  assert.deepEqual(found, []);
});

test('GetServerInfo answers with no secret', async () => {
  const info = await call(t.client, t.client.getServerInfo, {}, bearer(plainKey));
  assert.deepEqual(leaked(JSON.stringify(info)), []);
});

function bearer(key: string): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${key}`);
  return metadata;
}
