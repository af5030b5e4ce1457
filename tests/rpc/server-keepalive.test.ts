/**
 * The server's keepalive pings (grpc.keepalive_ms, grpc.keepalive_timeout_ms): a client whose
 * connection went silent without closing (a NAT that dropped the flow, a machine lost) stops
 * counting as a waiting worker once a ping goes unanswered, while a connection that answers its
 * pings stays and is served. The silence is a TCP proxy that stops forwarding and closes nothing;
 * the waits poll the server's own count, and their bound (well below the 30 s default interval)
 * is what fails when the settings do not reach grpc-js.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { credentials } from '@grpc/grpc-js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { BlackholeProxy } from '../helpers/blackhole-proxy.ts';
import { within } from '../helpers/bounded.ts';
import { call, startTestServer, testJob } from '../helpers/server.ts';
import { collect, creditMessage, openWork, subscribeMessage, type WorkStream } from '../helpers/streams.ts';

const queue = 'keepalive';

test('a connection that stops answering pings is closed within keepalive_ms + keepalive_timeout_ms; one that answers stays', async () => {
  // A 2 s timeout, not 1 s: the answering client shares the server's process and event loop, and
  // a stall of the loop longer than the timeout would drop its connection too.
  const t = await startTestServer({
    toml: `[grpc]\nkeepalive_ms = "1s"\nkeepalive_timeout_ms = "2s"\n[queues.${queue}]\n`,
  });
  const proxy = new BlackholeProxy(t.server.grpcPort);
  const silenced = new QueueServiceClient(await proxy.listen(), credentials.createInsecure());
  const answering = t.connect();
  const streams: WorkStream[] = [];
  const subscribe = (client: QueueServiceClient) => {
    const stream = openWork(client);
    // The silenced stream ends with an error when the test closes its client; nothing to see there.
    stream.on('error', () => {});
    stream.write(subscribeMessage([queue]));
    stream.write(creditMessage(1));
    streams.push(stream);
    return stream;
  };
  const waitingWorkers = async () => {
    const { queues } = await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' });
    return queues.find((q) => q.name === queue)?.waitingWorkers;
  };
  /** Polls the server's count until it is `expected`; the bound is the assertion (see the top). */
  const waitingBecomes = async (expected: number, boundMs: number, what: string) => {
    const startedMs = performance.now();
    for (;;) {
      const now = await waitingWorkers();
      if (now === expected) return;
      if (performance.now() - startedMs > boundMs)
        assert.fail(`${what}: ${now} waiting workers after ${boundMs} ms, expected ${expected}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  try {
    subscribe(silenced);
    const served = subscribe(answering);
    await waitingBecomes(2, 10_000, 'both Work streams subscribe');

    const silencedAtMs = performance.now();
    assert.equal(proxy.blackhole(), 1, 'one connection passes through the proxy');
    // The next ping goes out at most 1 s after the last answer and is given up 2 s later: 3 s, and
    // a loaded machine's timers may slip. The default (30 s, then 20 s) would not make it.
    await waitingBecomes(1, 10_000, 'the silenced connection is closed by the pings');
    const closedAfterMs = performance.now() - silencedAtMs;
    // Not before a ping went unanswered for its 2 s (less whatever of them passed before the
    // silence, for a ping sent just before it): the pings closed it, nothing else.
    assert.ok(closedAfterMs >= 1000, `closed after ${closedAfterMs.toFixed(0)} ms, before a ping timed out`);

    // The connection that answers has been pinged all along and is still served.
    const received = collect(served, (seen) => seen.some((m) => m.kind?.$case === 'job'));
    await call(t.client, t.client.enqueue, { job: testJob(queue) });
    await within(received, 'the answering stream is leased the job', 10_000);
  } finally {
    for (const stream of streams) stream.cancel();
    silenced.close();
    answering.close();
    await proxy.close();
    await t.dispose();
  }
});
