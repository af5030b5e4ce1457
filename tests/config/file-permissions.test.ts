/**
 * Warnings about files others can read (issue 14, item 17): the config file
 * when it holds a plaintext secret, TLS private keys, the data directory and
 * the database in it — at start and from `sepp config check`.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { type FileMode, filePermissionWarnings } from '../../src/config/file-permissions.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { runSepp } from '../helpers/cli.ts';
import { startTestServer } from '../helpers/server.ts';
import { loadToml } from './helpers.ts';

const plaintextKey = '[[grpc.api_keys]]\nname = "a"\nrole = "admin"\nkey = "0123456789abcdef-plain-key"\n';

/** A stat over fixed modes; a path not listed does not exist. */
function modes(table: Record<string, number>): (path: string) => FileMode | undefined {
  return (path) => {
    const mode = table[path];
    return mode === undefined ? undefined : { mode, isDirectory: !path.includes('.') };
  };
}

test('each file others can read is named with its setting and the command that fixes it', () => {
  const config = loadToml(
    `${plaintextKey}[server]\ndata_dir = "/var/lib/sepp"\n[admin.tls]\ncert_file = "/etc/sepp/c.pem"\nkey_file = "/etc/sepp/k.pem"\n`,
  );
  const open = modes({
    '/srv/sepp/sepp.toml': 0o644,
    '/etc/sepp/k.pem': 0o644,
    '/var/lib/sepp': 0o755,
    '/var/lib/sepp/sepp.db': 0o644,
    '/var/lib/sepp/sepp.db-wal': 0o600,
  });
  const warnings = filePermissionWarnings(config, open);
  assert.deepEqual(
    warnings.map((w) => w.key),
    ['grpc.api_keys[0].key', 'admin.tls.key_file', 'server.data_dir', 'server.data_dir'],
  );
  assert.match(
    warnings[0]?.message ?? '',
    /sepp\.toml is readable by other users \(mode 0644\) and holds grpc\.api_keys\[0\]\.key in plain text; make it private \(chmod o-rwx/,
  );
  assert.match(
    warnings[1]?.message ?? '',
    /k\.pem is readable by other users \(mode 0644\).*chmod o-rwx \/etc\/sepp\/k\.pem/,
  );
  assert.match(
    warnings[2]?.message ?? '',
    /\/var\/lib\/sepp is open to other users \(mode 0755\).*chmod 700/,
  );
  assert.match(warnings[3]?.message ?? '', /sepp\.db is readable by other users \(mode 0644\): chmod 600/);

  const private_ = modes({
    '/srv/sepp/sepp.toml': 0o640,
    '/etc/sepp/k.pem': 0o640,
    '/var/lib/sepp': 0o700,
    '/var/lib/sepp/sepp.db': 0o644,
  });
  assert.deepEqual(
    filePermissionWarnings(config, private_),
    [],
    'group access and files in a closed directory are fine',
  );
  const hashedOnly = loadToml('[server]\ndata_dir = "/var/lib/sepp"\n');
  assert.deepEqual(
    filePermissionWarnings(hashedOnly, modes({ '/srv/sepp/sepp.toml': 0o644 })),
    [],
    'a config file without plaintext secrets may be world-readable',
  );
});

test('a PostgreSQL password file others can read is named; one only its group reads is fine', () => {
  const toml =
    '[store]\nkind = "postgres"\nurl = "postgres://sepp@db.example:5432/sepp"\npassword_file = "/etc/sepp/postgres-password"\n';
  const config = loadToml(toml, { readSecretFile: () => Buffer.from('secret\n') });
  const [warning, ...more] = filePermissionWarnings(config, modes({ '/etc/sepp/postgres-password': 0o644 }));
  assert.deepEqual(more, []);
  assert.equal(warning?.key, 'store.password_file');
  assert.match(
    warning?.message ?? '',
    /^\/etc\/sepp\/postgres-password is readable by other users \(mode 0644\): anyone on this machine can log in to the database .*; chmod o-rwx \/etc\/sepp\/postgres-password$/,
  );
  assert.ok(!(warning?.message ?? '').includes('secret'), 'the password itself is not repeated');
  assert.deepEqual(filePermissionWarnings(config, modes({ '/etc/sepp/postgres-password': 0o640 })), []);
});

test('a push target’s secret file and the HTTP API’s TLS key others can read are named', () => {
  const toml =
    '[http.tls]\ncert_file = "/etc/sepp/h.pem"\nkey_file = "/etc/sepp/hk.pem"\n' +
    '[queues.emails.push]\nurl = "https://mailer.example.com/jobs"\nsecret_file = "/etc/sepp/push-secret"\n';
  const config = loadToml(toml, { readSecretFile: () => Buffer.from('a-push-signing-secret\n') });
  const open = modes({ '/etc/sepp/hk.pem': 0o644, '/etc/sepp/push-secret': 0o604 });
  const warnings = filePermissionWarnings(config, open);
  assert.deepEqual(
    warnings.map((w) => w.key),
    ['http.tls.key_file', 'queues.emails.push.secret_file'],
  );
  assert.match(warnings[0]?.message ?? '', /hk\.pem is readable by other users \(mode 0644\)/);
  assert.match(
    warnings[1]?.message ?? '',
    /^\/etc\/sepp\/push-secret is readable by other users \(mode 0604\): anyone on this machine can sign .*; chmod o-rwx \/etc\/sepp\/push-secret$/,
  );
  const closed = modes({ '/etc/sepp/hk.pem': 0o640, '/etc/sepp/push-secret': 0o640 });
  assert.deepEqual(filePermissionWarnings(config, closed), []);
});

test('`sepp config check` says OK and warns about a world-readable file with a plaintext key; chmod silences it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-perms-'));
  try {
    const file = join(dir, 'sepp.toml');
    mkdirSync(join(dir, 'data'), { mode: 0o700 });
    writeFileSync(file, `[server]\ndata_dir = "data"\n${plaintextKey}`);
    chmodSync(file, 0o644);
    const loose = await runSepp(['config', 'check', file]);
    assert.equal(loose.code, 0, loose.stderr);
    assert.equal(loose.stdout, `${file}: OK\n`);
    assert.match(
      loose.stderr,
      /^sepp: warning: grpc\.api_keys\[0\]\.key: .*sepp\.toml is readable by other users \(mode 0644\)/,
    );
    chmodSync(file, 0o600);
    const tight = await runSepp(['config', 'check', file]);
    assert.equal(tight.code, 0);
    assert.equal(tight.stderr, '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('at start the server logs the same warning', async () => {
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', format: 'json', write: (line) => lines.push(line) });
  // startTestServer writes its config file with the umask's mode: make that world-readable (0644).
  const previous = process.umask(0o022);
  let t: Awaited<ReturnType<typeof startTestServer>>;
  try {
    t = await startTestServer({ toml: plaintextKey, logger });
  } finally {
    process.umask(previous);
  }
  try {
    const risky = lines
      .map((l) => JSON.parse(l) as Record<string, string>)
      .filter((l) => l.event === 'config.risky' && l.setting === 'grpc.api_keys[0].key');
    assert.equal(risky.length, 1, lines.join('\n'));
    assert.match(
      risky[0]?.detail ?? '',
      /\.toml is readable by other users \(mode 0644\) and holds grpc\.api_keys\[0\]\.key/,
    );
    assert.ok(!lines.some((l) => l.includes('0123456789abcdef-plain-key')), 'the key itself is not logged');
  } finally {
    await t.dispose();
  }
});
