/**
 * `sepp admin hash-password` and `sepp admin new-api-key` as a user runs them:
 * on a terminal (a pseudo-terminal driven by Debian's python3), from a pipe,
 * and with what they print put into a real server's config — the hash must
 * log in to the admin UI, the key must authenticate with its role.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { SeppClient, type SeppError } from '../../clients/typescript/src/index.ts';
import { cliEntry, runCli } from '../helpers/cli.ts';
import { captureOutput, registerSecret } from '../helpers/secret-log.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const python = '/usr/bin/python3';
const password = 'tr0ub4dor&3 horse staple';
registerSecret('password typed into hash-password', password);

/**
 * Runs `sepp admin hash-password` with stdin and stderr on a pseudo-terminal
 * (stdout a pipe, as when a user redirects the hash), answers each prompt,
 * and returns what the terminal showed, stdout and the exit code.
 */
function onTerminal(answers: string[]): { terminal: string; stdout: string; code: number } {
  const driver = `
import json, os, pty, select, subprocess, sys, time
answers = json.loads(os.environ['ANSWERS'])
master, slave = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=subprocess.PIPE, stderr=slave, close_fds=True)
os.close(slave)
seen = b''
def read_until(token):
    global seen
    deadline = time.time() + 60
    while token not in seen and time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                seen += os.read(master, 4096)
            except OSError:
                return
for i, answer in enumerate(answers):
    read_until(b'Password: ' if i == 0 else b'Repeat it: ')
    os.write(master, answer.encode() + b'\\r')
out = p.stdout.read()
code = p.wait(timeout=60)
while True:
    ready, _, _ = select.select([master], [], [], 0.2)
    if not ready:
        break
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
print(json.dumps({'terminal': seen.decode(errors='replace'), 'stdout': out.decode(), 'code': code}))
`;
  const run = spawnSync(python, ['-c', driver, process.execPath, ...cliEntry(), 'admin', 'hash-password'], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: { ...process.env, ANSWERS: JSON.stringify(answers) },
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout) as { terminal: string; stdout: string; code: number };
  // The terminal must never show the password: checked by the run's secret search. (stdout is the hash.)
  captureOutput('cli')(`${result.terminal}\n`);
  return result;
}

const hashRe = /^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{86}$/;

describe('sepp admin', { timeout: 300_000 }, () => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const s of servers) await s.dispose();
  });

  test('admin --help lists hash-password and new-api-key', async () => {
    const run = await runCli(['admin', '--help']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /sepp admin hash-password/);
    assert.match(run.stdout, /sepp admin new-api-key/);
  });

  test('hash-password on a terminal asks twice without echo; the hash logs in to a real server', {
    skip: existsSync(python) ? false : `${python} is needed for a pseudo-terminal`,
  }, async () => {
    const run = onTerminal([password, password]);
    assert.equal(run.code, 0, run.terminal);
    assert.match(run.terminal, /Password: /);
    assert.match(run.terminal, /Repeat it: /);
    assert.doesNotMatch(run.terminal, /tr0ub4dor/, 'the password is not echoed');
    const hash = run.stdout.trim();
    assert.match(hash, hashRe);

    const t = await startTestServer({
      toml: `[[admin.users]]\nname = "alice"\nrole = "admin"\npassword_hash = "${hash}"\n`,
    });
    servers.push(t);
    const base = t.metricsUrl.replace(/\/metrics$/, '');
    const login = (pw: string) =>
      fetch(`${base}/api/v1/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base },
        body: JSON.stringify({ user: 'alice', password: pw }),
      });
    const ok = await login(password);
    assert.equal(ok.status, 200, await ok.text());
    const wrong = await login('not the password');
    assert.equal(wrong.status, 401);
  });

  test('hash-password on a terminal: a mismatch prints nothing and exits 2', {
    skip: existsSync(python) ? false : `${python} is needed for a pseudo-terminal`,
  }, () => {
    const run = onTerminal([password, `${password}x`]);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(run.terminal, /sepp: the passwords do not match; nothing printed/);
  });

  test('hash-password reads one line from a pipe; short or empty input is refused', async () => {
    const piped = await runCli(['admin', 'hash-password'], {
      input: `${password}\nignored second line\n`,
      capture: false,
    });
    assert.equal(piped.code, 0, piped.stderr);
    assert.equal(piped.stderr, '');
    assert.match(piped.stdout.trim(), hashRe);
    const empty = await runCli(['admin', 'hash-password'], { input: '' });
    assert.equal(empty.code, 2);
    assert.equal(empty.stderr, 'sepp: no password given\n');
    const short = await runCli(['admin', 'hash-password'], { input: 'short\n' });
    assert.equal(short.code, 2);
    assert.match(short.stderr, /^sepp: the password is shorter than 8 characters/);
  });

  test('new-api-key prints the key once and TOML that a real server accepts with that role', async () => {
    const human = await runCli(['admin', 'new-api-key', '--name', 'billing', '--role', 'producer'], {
      capture: false,
    });
    assert.equal(human.code, 0, human.stderr);
    const key = /^ {4}(sepp_\S+)$/m.exec(human.stdout)?.[1];
    assert.ok(key, human.stdout);
    // A reload takes a new key (docs/configuration.md): no restart is needed.
    assert.match(human.stdout, /then reload sepp \(`sepp config reload`, or SIGHUP\) or restart it:\n/);
    const toml = human.stdout.slice(human.stdout.indexOf('[[grpc.api_keys]]'));
    assert.match(
      toml,
      /^\[\[grpc\.api_keys\]\]\nname = "billing"\nrole = "producer"\nkey_sha256 = "[0-9a-f]{64}"\n$/,
    );
    assert.ok(!toml.includes(key), 'the TOML holds the SHA-256, not the key');

    const scripted = await runCli(['admin', 'new-api-key', '--name', 'ops', '--role', 'admin', '--json'], {
      capture: false,
    });
    assert.equal(scripted.code, 0, scripted.stderr);
    const made = JSON.parse(scripted.stdout) as {
      key: string;
      keySha256: string;
      toml: string;
      role: string;
    };
    assert.notEqual(made.key, key, 'a new key each time');

    const t = await startTestServer({ toml: `${toml}\n${made.toml}` });
    servers.push(t);
    const producer = SeppClient.connect(t.address, { apiKey: key });
    const admin = SeppClient.connect(t.address, { apiKey: made.key });
    const anonymous = SeppClient.connect(t.address);
    try {
      await producer.enqueue('keyed', 't');
      await assert.rejects(producer.pauseQueue('keyed'), (e: SeppError) => e.code === 'permission_denied');
      await admin.pauseQueue('keyed');
      await assert.rejects(anonymous.listQueues(), (e: SeppError) => e.code === 'unauthenticated');
    } finally {
      await producer.close();
      await admin.close();
      await anonymous.close();
    }
  });

  test('new-api-key refuses a name the config would refuse, and an unknown role', async () => {
    const badName = await runCli(['admin', 'new-api-key', '--name', 'two words', '--role', 'worker']);
    assert.equal(badName.code, 2);
    assert.match(badName.stderr, /^sepp: --name "two words": use 1 to 64 letters/);
    const badRole = await runCli(['admin', 'new-api-key', '--name', 'x', '--role', 'boss']);
    assert.equal(badRole.code, 2);
    assert.match(badRole.stderr, /^sepp: --role "boss" is not one of "producer", "worker", "admin"/);
    const missing = await runCli(['admin', 'new-api-key', '--role', 'worker']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^sepp: missing required argument: name/);
  });
});
