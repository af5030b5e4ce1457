/**
 * A stand-in for systemd's notification socket (NOTIFY_SOCKET), for the tests of
 * Type=notify: Debian's python3 binds a Unix datagram socket (Node cannot receive
 * on one) and prints every message it gets. It answers systemd-notify's barrier
 * as systemd does, by closing the descriptor it is sent.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { commandExists } from '../packaging/syscalls.ts';

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

export function standInForSystemd(path: string): {
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

export const notifySkip: false | string =
  commandExists('systemd-notify') && existsSync('/usr/bin/python3')
    ? false
    : 'needs systemd-notify (Debian package systemd) and /usr/bin/python3';
