/**
 * Readiness under systemd's Type=notify: with NOTIFY_SOCKET set, `sepp serve`
 * sends READY=1 once it serves and STOPPING=1 when it stops, through the real
 * systemd-notify, to a datagram socket that stands in for systemd (Debian's
 * python3, since Node cannot receive on a Unix datagram socket; see
 * tests/helpers/systemd-stand-in.ts).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startServerProcess } from '../helpers/process-server.ts';
import { notifySkip as skip, standInForSystemd } from '../helpers/systemd-stand-in.ts';
import { allowedSyscalls, commandExists, tracedSyscalls } from './syscalls.ts';
import { readUnitDirectives } from './unit-file.ts';

test('with NOTIFY_SOCKET, sepp tells systemd READY=1 once it serves and STOPPING=1 when it stops', {
  skip,
  timeout: 120_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-notify-'));
  const socketPath = join(dir, 'notify.sock');
  const systemd = standInForSystemd(socketPath);
  try {
    await systemd.next(/^LISTENING$/);
    const server = await startServerProcess(join(dir, 'data'), [], { env: { NOTIFY_SOCKET: socketPath } });
    const ready = await systemd.next(/READY=1/);
    assert.match(ready, /^READY=1\nSTATUS=serving gRPC on 127\.0\.0\.1:\d+$/);
    // Ready means serving: the readiness endpoint agrees.
    const admin = /"admin":"(http:[^"]+)"/.exec(server.logs())?.[1];
    assert.ok(admin, server.logs());
    assert.equal((await fetch(`${admin}/readyz`)).status, 200);
    assert.doesNotMatch(server.logs(), /systemd\.notify_failed/);

    assert.equal(await server.stop('SIGTERM'), 0);
    assert.equal(await systemd.next(/STOPPING=1/), 'STOPPING=1');
  } finally {
    systemd.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without NOTIFY_SOCKET nothing is sent and nothing is run', { skip, timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-notify-'));
  try {
    const server = await startServerProcess(join(dir, 'data'), [], { env: { NOTIFY_SOCKET: '' } });
    assert.equal(await server.stop('SIGTERM'), 0);
    assert.doesNotMatch(server.logs(), /systemd/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const traceSkip = skip || (commandExists('strace') ? false : 'strace is not installed');
test("every system call systemd-notify makes is allowed by the unit's filter", {
  skip: traceSkip,
  timeout: 60_000,
}, async () => {
  // sepp's child systemd-notify runs under the unit's SystemCallFilter too: a call the
  // filter denies would fail with EPERM, and the start would time out instead.
  const dir = mkdtempSync(join(tmpdir(), 'sepp-notify-trace-'));
  chmodSync(dir, 0o777); // as root the trace runs as nobody (tracedSyscalls)
  const socketPath = join(dir, 'notify.sock');
  const systemd = standInForSystemd(socketPath);
  try {
    await systemd.next(/^LISTENING$/);
    chmodSync(socketPath, 0o777);
    const traced = tracedSyscalls('systemd-notify', ['READY=1', 'STATUS=serving gRPC on 127.0.0.1:1'], {
      env: { ...process.env, NOTIFY_SOCKET: socketPath },
      traceFile: join(dir, 'trace.txt'),
    });
    assert.equal(traced.status, 0, traced.output);
    assert.match(await systemd.next(/READY=1/), /^READY=1\nSTATUS=serving gRPC on 127\.0\.0\.1:1$/);
    assert.ok(traced.syscalls.has('sendmsg'), `strace recorded ${[...traced.syscalls].join(', ')}`);
    const allowed = allowedSyscalls(readUnitDirectives().get('SystemCallFilter') ?? []);
    assert.deepEqual([...traced.syscalls].filter((c) => !allowed.has(c)).sort(), []);
  } finally {
    systemd.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
