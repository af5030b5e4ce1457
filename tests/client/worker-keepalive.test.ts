/**
 * Client keepalive: a Worker whose connection goes silent without closing (a NAT or load balancer
 * that dropped the flow, the server's machine lost) notices it by its pings, within about
 * keepaliveMs + keepaliveTimeoutMs, and works again over a fresh connection. A TCP proxy between
 * the client and a real server turns its open connections into a blackhole on command: it stops
 * forwarding in both directions and closes nothing. The Python SDK's test of the same is in
 * clients/python/tests/test_keepalive.py.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppClient, type SeppError } from '../../clients/typescript/src/index.ts';
import { BlackholeProxy } from '../helpers/blackhole-proxy.ts';
import { startTestServer } from '../helpers/server.ts';
import { nextEvents } from './helpers.ts';

const keepaliveMs = 200;
// Long enough that a loaded machine answers every ping of the healthy connection in time (the
// Python twin lost its connection before the blackhole once at 300 ms, in a fresh-clone npm test).
const keepaliveTimeoutMs = 1500;
const leaseMs = 2_000;

for (const transport of ['stream', 'unary'] as const) {
  test(`Worker (${transport}): keepalive pings fail a silent connection with UNAVAILABLE, and the worker works again`, async () => {
    const t = await startTestServer();
    const proxy = new BlackholeProxy(t.server.grpcPort);
    const direct = SeppClient.connect(t.address);
    const client = SeppClient.connect(await proxy.listen(), { keepaliveMs, keepaliveTimeoutMs, transport });
    const worker = client.worker({
      queues: ['keepalive'],
      leaseMs, // see below, where the server's side of the silent connection ends
      reconnect: { baseDelayMs: 50, maxDelayMs: 100 },
      handlers: { t: () => undefined },
      logger: { info() {}, warn() {}, error() {} },
    });
    const errors: SeppError[] = [];
    worker.on('error', (error: SeppError) => void errors.push(error));
    try {
      const first = nextEvents(worker, 'completed');
      await direct.enqueue('keepalive', 't');
      await first;
      // The worker waits for work for several keepalive periods (on its Work stream, or a Reserve
      // long-poll): the server answers pings this often.
      await new Promise((resolve) => setTimeout(resolve, 4 * keepaliveMs));
      assert.deepEqual(
        errors.map((e) => e.message),
        [],
        'pings every 200 ms on an open call bring no GOAWAY',
      );

      const failed = nextEvents<[SeppError]>(worker, 'error');
      const silencedAtMs = performance.now();
      assert.ok(proxy.blackhole() >= 1, 'the worker has a connection through the proxy');
      const [error] = await failed;
      const noticedMs = performance.now() - silencedAtMs;
      assert.equal(error.code, 'unavailable', error.message);
      // One ping may have just been answered: the next goes out keepaliveMs later and times out.
      assert.ok(
        noticedMs < keepaliveMs + keepaliveTimeoutMs + 1000,
        `noticed after ${noticedMs.toFixed(0)} ms`,
      );

      // Until the server's own pings notice the silence (grpc.keepalive_ms, 30 s by default, then
      // grpc.keepalive_timeout_ms, 20 s, for the answer), it still counts the old stream as a worker
      // waiting for jobs and would lease it the next one, to be redelivered when that lease expires;
      // the test ends the server's side now (tests/rpc/server-keepalive.test.ts has the server's
      // pings do it). The server learns of that end on its own time, so the next job may still be
      // leased on the old stream: it comes back when its lease of leaseMs ends, to the new connection.
      proxy.endSilencedUpstreams();
      // The worker reconnects through the proxy on a fresh connection and takes the next job.
      const again = nextEvents(worker, 'completed');
      await direct.enqueue('keepalive', 't');
      await again;
      assert.equal(worker.state, 'running');
    } finally {
      await worker.close({ timeoutMs: 0 });
      await client.close();
      await direct.close();
      await proxy.close();
      await t.dispose();
    }
  });
}

test('SeppClient.connect: keepaliveMs and keepaliveTimeoutMs are positive integers of ms', async () => {
  for (const name of ['keepaliveMs', 'keepaliveTimeoutMs'] as const) {
    for (const value of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      assert.throws(
        () => SeppClient.connect('127.0.0.1:1', { [name]: value }),
        {
          name: 'TypeError',
          message: new RegExp(`^${name} must be a positive integer number of ms, at most 2147483647$`),
        },
        `${name} ${value}`,
      );
    }
  }
  await SeppClient.connect('127.0.0.1:1', { keepaliveMs: 1, keepaliveTimeoutMs: 2 ** 31 - 1 }).close();
});
