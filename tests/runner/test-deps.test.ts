/**
 * scripts/test-deps.sh, which `npm test` and .ci/run run first: silent when the machine
 * has everything; with tools missing (a PATH without them) and no way to install —
 * apt-get absent, or not root — one line naming the Debian packages, exit 1, and no
 * attempt to install.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { repoRoot } from '../helpers/cli.ts';

const script = join(repoRoot, 'scripts', 'test-deps.sh');
/** Packages of the tools the script finds through PATH (the rest it finds by absolute path). */
const onPath = 'protobuf-compiler sqlite3 openssl curl jq strace systemd';

function deps(env: NodeJS.ProcessEnv, args: string[] = [], asNobody = false) {
  const command = asNobody && process.getuid?.() === 0 ? '/usr/bin/setpriv' : '/bin/sh';
  const argv =
    command === '/usr/bin/setpriv'
      ? ['--reuid=65534', '--regid=65534', '--clear-groups', '/bin/sh', script, ...args]
      : [script, ...args];
  return spawnSync(command, argv, { env, encoding: 'utf8' });
}

describe('scripts/test-deps.sh', () => {
  let bin = '';
  before(() => {
    // A PATH with a shell and `id` only: protoc, sqlite3, openssl, curl, jq, strace and systemd's tools are "missing".
    bin = mkdtempSync(join(tmpdir(), 'sepp-deps-'));
    chmodSync(bin, 0o755); // nobody runs from it too
    for (const tool of ['sh', 'id']) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
  });
  after(() => rmSync(bin, { recursive: true, force: true }));

  test('on this machine, which has everything (npm test ran it first), it says nothing', () => {
    const run = deps(process.env, ['--check']);
    assert.equal(run.stderr, '');
    assert.equal(run.stdout, '');
    assert.equal(run.status, 0);
  });

  test('without apt-get it names the packages in one line and fails', () => {
    const run = deps({ PATH: bin });
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      `the tests need Debian packages this machine lacks; as root, run: apt-get install -y ${onPath}\n`,
    );
    assert.equal(run.status, 1);
  });

  test('not as root it installs nothing: the same line, and it fails', () => {
    const withApt = mkdtempSync(join(tmpdir(), 'sepp-deps-apt-'));
    chmodSync(withApt, 0o755);
    try {
      // An apt-get that would leave a mark if it ran.
      symlinkSync('/usr/bin/touch', join(withApt, 'apt-get'));
      const run = deps({ PATH: `${bin}:${withApt}` }, [], true);
      assert.equal(run.stdout, '');
      assert.match(
        run.stderr,
        new RegExp(
          `^the tests need Debian packages this machine lacks; as root, run: apt-get install -y ${onPath}\n$`,
        ),
      );
      assert.equal(run.status, 1);
    } finally {
      rmSync(withApt, { recursive: true, force: true });
    }
  });

  test('--check names what is missing without installing', () => {
    const run = deps({ PATH: bin }, ['--check']);
    assert.equal(run.stderr, `the tests need Debian packages this machine lacks: ${onPath}\n`);
    assert.equal(run.status, 1);
  });
});
