/**
 * packaging/sepp.service: the hardening it promises is in the text (always checked), and
 * systemd itself accepts it (`systemd-analyze verify`, when installed; skipped with the
 * reason otherwise). verify insists the ExecStart binary exists, so it checks a copy
 * whose ExecStart points at a stand-in executable; everything else is the unit verbatim.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { commandExists } from './syscalls.ts';
import { readUnitDirectives, unitPath } from './unit-file.ts';

const execStart = '/usr/local/bin/sepp serve --config /etc/sepp/sepp.toml --data-dir /var/lib/sepp';

test('the unit runs sepp from /var/lib/sepp with the hardening settings', () => {
  const unit = readUnitDirectives();
  const one = (key: string): string | undefined => unit.get(key)?.at(-1);
  assert.equal(one('ExecStart'), execStart);
  // `systemctl reload sepp` sends SIGHUP, which rereads the config file.
  assert.equal(one('ExecReload'), '/bin/kill -HUP $MAINPID');
  const expected: Record<string, string> = {
    StateDirectory: 'sepp',
    WorkingDirectory: '/var/lib/sepp',
    ProtectSystem: 'strict',
    ProtectHome: 'yes',
    PrivateTmp: 'yes',
    NoNewPrivileges: 'yes',
    CapabilityBoundingSet: '',
    RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
    Restart: 'on-failure',
    TimeoutStopSec: '20',
    // Readiness through systemd-notify, a child of sepp (tests/packaging/systemd-notify.test.ts).
    Type: 'notify',
    NotifyAccess: 'all',
  };
  for (const [key, value] of Object.entries(expected)) assert.equal(one(key), value, key);
  assert.ok(unit.get('DynamicUser')?.at(-1) === 'yes' || one('User') !== undefined, 'DynamicUser or User');
  assert.equal(unit.get('SystemCallFilter')?.[0]?.split(' ')[0], '@system-service');
  assert.ok(Number(one('LimitNOFILE')) >= 65536, 'LimitNOFILE');
  // Stopping must outlast sepp's own 10 s graceful shutdown.
  assert.ok(Number(one('TimeoutStopSec')) > 10);
  // V8's JIT needs writable and executable memory.
  assert.equal(unit.has('MemoryDenyWriteExecute'), false, 'MemoryDenyWriteExecute must not be set');
});

const verifySkip = commandExists('systemd-analyze') ? false : 'systemd-analyze is not installed';
test('systemd-analyze verify accepts the unit', { skip: verifySkip }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-unit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const standIn = join(dir, 'sepp');
  copyFileSync('/bin/true', standIn);
  const text = readFileSync(unitPath, 'utf8');
  assert.ok(text.includes('ExecStart=/usr/local/bin/sepp '));
  writeFileSync(
    join(dir, 'sepp.service'),
    text.replace('ExecStart=/usr/local/bin/sepp ', `ExecStart=${standIn} `),
  );
  const run = spawnSync('systemd-analyze', ['verify', '--man=no', join(dir, 'sepp.service')], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stderr, '', 'systemd-analyze verify warns');
});
