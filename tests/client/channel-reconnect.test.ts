/**
 * The client's channel tries a server that refuses it again after its own short backoff
 * (200 ms, growing to at most 5 s), not grpc-js's default (1 s, growing to 120 s): with the
 * default, a Worker whose server was down for a minute found it back up to half a minute
 * late, whatever its own `reconnect` backoff said (clients/typescript/src/connection.ts).
 * The channel's backoff runs on the real clock (grpc-js takes no other), so this watches a
 * listener that closes every connection at once, for a few seconds.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient } from '../../clients/typescript/src/index.ts';

const watchMs = 6000;

test("the channel tries a refusing server again on the client's backoff, not grpc-js's", async () => {
  const startMs = performance.now();
  const attemptsAtMs: number[] = [];
  const refuser = createServer((socket) => {
    attemptsAtMs.push(performance.now() - startMs);
    socket.destroy();
  });
  await new Promise<void>((resolve) => refuser.listen(0, '127.0.0.1', resolve));
  const address = refuser.address();
  assert.ok(address !== null && typeof address === 'object');
  const client = SeppClient.connect(`127.0.0.1:${address.port}`);
  let failed = 0;
  try {
    // A caller that keeps asking, as a Worker does: each call fails at once while the channel backs off.
    while (performance.now() - startMs < watchMs) {
      await client.getServerInfo().catch(() => failed++);
      await sleep(50);
    }
  } finally {
    client.close();
    await new Promise((resolve) => refuser.close(resolve));
  }
  assert.ok(failed > 0, 'no call reached the refusing listener');
  // grpc-js's default: attempts at about 0, 1, 2.6 and 5.2 s (4 in 6 s, ±20 % jitter each);
  // the client's: about 0, 0.2, 0.5, 1.0, 1.9, 3.2 and 5.3 s (7).
  assert.ok(
    attemptsAtMs.length >= 6,
    `${attemptsAtMs.length} connection attempts in ${watchMs} ms, at ${attemptsAtMs.map(Math.round).join(', ')} ms`,
  );
});
