/**
 * Readiness under systemd's Type=notify: with NOTIFY_SOCKET set, `sepp serve`
 * sends READY=1 once it serves and STOPPING=1 when it stops, through the real
 * systemd-notify, to a datagram socket that stands in for systemd (Debian's
 * python3, since Node cannot receive on a Unix datagram socket). The stand-in
 * answers systemd-notify's barrier as systemd does, by closing the descriptor
 * it is sent.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startServerProcess } from '../helpers/process-server.ts';
import { commandExists } from './syscalls.ts';

const receiver = `
import array, json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps({'listening': True}), flush=True)
while True:
    msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(16 * 4))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds = array.array('i')
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
            for fd in fds:
                os.close(fd)
    print(json.dumps({'message': msg.decode()}), flush=True)
`;

function standInForSystemd(path: string): {
  child: ChildProcess;
  messages: string[];
  next(match: RegExp): Promise<string>;
} {
  const child = spawn('/usr/bin/python3', ['-c', receiver, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: string[] = [];
  const waiting: { match: RegExp; resolve: (m: string) => void }[] = [];
  let buffer = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = JSON.parse(buffer.slice(0, nl)) as { listening?: boolean; message?: string };
      buffer = buffer.slice(nl + 1);
      const text = line.listening ? 'LISTENING' : (line.message ?? '');
      messages.push(text);
      for (const w of [...waiting]) {
        if (w.match.test(text)) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve(text);
        }
      }
    }
  });
  return {
    child,
    messages,
    next: (match) =>
      new Promise((resolve) => {
        const seen = messages.find((m) => match.test(m));
        if (seen !== undefined) resolve(seen);
        else waiting.push({ match, resolve });
      }),
  };
}

const skip =
  commandExists('systemd-notify') && existsSync('/usr/bin/python3')
    ? false
    : 'needs systemd-notify (Debian package systemd) and /usr/bin/python3';

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
