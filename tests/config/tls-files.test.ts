/**
 * A bad TLS certificate or key is reported as the setting that names the file
 * (issue 14, item 18): by the loader (so by `sepp config check`, which said OK
 * before) and at start, where it used to be blamed on server.grpc_listen or
 * server.admin_listen.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { StartupError, startServer } from '../../src/app.ts';
import { checkConfigFile, loadConfig } from '../../src/config/index.ts';
import { tlsPairProblems } from '../../src/config/tls-files.ts';
import { silentLogger } from '../../src/telemetry/logger.ts';
import { runSepp } from '../helpers/cli.ts';
import { selfSignedCertificate, type TestCertificate } from '../helpers/tls.ts';

let dir: string;
let one: TestCertificate;
let other: TestCertificate;
let encryptedKeyFile: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'sepp-tlsfiles-'));
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  execFileSync('mkdir', [a, b]);
  one = selfSignedCertificate(a);
  other = selfSignedCertificate(b);
  encryptedKeyFile = join(dir, 'encrypted.pem');
  execFileSync('openssl', [
    'pkey',
    '-in',
    one.keyFile,
    '-aes256',
    '-passout',
    'pass:x',
    '-out',
    encryptedKeyFile,
  ]);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const read = (path: string) => readFileSync(path, 'utf8');

test('a certificate and its key pass; each kind of mistake names the file to fix', () => {
  assert.deepEqual(tlsPairProblems(read(one.certFile), read(one.keyFile)), []);
  const cases: [string, string, 'cert_file' | 'key_file', RegExp][] = [
    [
      one.certFile,
      other.keyFile,
      'key_file',
      /is not the private key of the certificate in cert_file \(CN=localhost\)/,
    ],
    [
      one.keyFile,
      one.certFile,
      'cert_file',
      /holds no PEM certificate.*are cert_file and key_file swapped\?/,
    ],
    [one.certFile, encryptedKeyFile, 'key_file', /holds an encrypted private key; sepp needs it unencrypted/],
  ];
  for (const [cert, key, file, message] of cases) {
    const problems = tlsPairProblems(read(cert), read(key));
    assert.equal(problems[0]?.file, file, JSON.stringify(problems));
    assert.match(problems[0]?.message ?? '', message);
  }
  assert.match(tlsPairProblems('garbage', read(one.keyFile))[0]?.message ?? '', /holds no PEM certificate/);
  const brokenKey = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
  assert.deepEqual(
    tlsPairProblems(read(one.certFile), brokenKey).map((p) => p.file),
    ['key_file'],
  );
});

/** A config file in `dir` serving the admin UI with `cert` and `key`. */
function configWith(name: string, section: 'grpc' | 'admin', cert: string, key: string): string {
  const file = join(dir, `${name}.toml`);
  writeFileSync(file, `[${section}.tls]\ncert_file = "${cert}"\nkey_file = "${key}"\n`);
  return file;
}

test('the loader (and so `config check`) reports a key that is not the certificate’s as the key_file setting', () => {
  const result = checkConfigFile(configWith('mismatch', 'admin', one.certFile, other.keyFile));
  assert.equal(result.ok, false);
  assert.ok(!result.ok);
  assert.deepEqual(
    result.problems.map((p) => p.key),
    ['admin.tls.key_file'],
  );
  assert.match(result.problems[0]?.message ?? '', new RegExp(`^${other.keyFile} is not the private key`));
  assert.ok(checkConfigFile(configWith('good', 'admin', one.certFile, one.keyFile)).ok);
});

test('`sepp config check` exits 2 and names grpc.tls.cert_file for swapped files', async () => {
  const file = configWith('swapped', 'grpc', one.keyFile, one.certFile);
  const out = await runSepp(['config', 'check', file]);
  assert.equal(out.code, 2, out.stdout);
  assert.match(out.stderr, /^sepp: .*: grpc\.tls\.cert_file: .* holds no PEM certificate/m);
  assert.match(out.stderr, /^sepp: .*: grpc\.tls\.key_file: .* holds no PEM private key/m);
  assert.doesNotMatch(out.stderr, /grpc_listen|\n\s+at /);
});

test('at start, a bad key is blamed on admin.tls.key_file, not on the listen address', async () => {
  // The files pass the loader (contents unchecked here) and change before the start.
  const file = configWith('late', 'admin', one.certFile, other.keyFile);
  const config = loadConfig({
    flags: {
      config: file,
      dataDir: join(dir, 'data'),
      grpcListen: '127.0.0.1:0',
      adminListen: '127.0.0.1:0',
    },
    env: {},
    fileExists: () => true,
  });
  await assert.rejects(
    startServer(config, { logger: silentLogger, build: { version: '0.0.0-test', commit: 'test' } }),
    (error: unknown) => {
      assert.ok(error instanceof StartupError, String(error));
      assert.match(error.message, /^admin\.tls\.key_file: .* is not the private key/);
      assert.doesNotMatch(error.message, /admin_listen|grpc_listen/);
      return true;
    },
  );
});
