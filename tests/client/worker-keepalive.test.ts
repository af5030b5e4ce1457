/**
 * Client keepalive: a Worker whose connection goes silent without closing (a NAT or load balancer
 * that dropped the flow, the server's machine lost) notices it by its pings, within about
 * keepaliveMs + keepaliveTimeoutMs, and works again over a fresh connection. A TCP proxy between
 * the client and a real server turns its open connections into a blackhole on command: it stops
 * forwarding in both directions and closes nothing. The Python SDK's test of the same is in
 * clients/python/tests/test_keepalive.py.
 */
import assert from 'node:assert/strict';
import { type AddressInfo, createServer, type Server, Socket } from 'node:net';
import { test } from 'node:test';
import { SeppClient, type SeppError } from '../../clients/typescript/src/index.ts';
import { startTestServer } from '../helpers/server.ts';
import { nextEvents } from './helpers.ts';

/** A TCP proxy to `target`; `blackhole()` silences the connections open now, new ones pass. */
class BlackholeProxy {
  private readonly server: Server;
  private readonly open = new Set<{ silent: boolean; sockets: Socket[] }>();

  constructor(targetPort: number) {
    this.server = createServer((client) => {
      const upstream = new Socket();
      const pair = { silent: false, sockets: [client, upstream] };
      this.open.add(pair);
      const forward = (from: Socket, to: Socket) =>
        from.on('data', (chunk) => {
          if (!pair.silent) to.write(chunk);
        });
      forward(client, upstream);
      forward(upstream, client);
      const end = () => {
        this.open.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      for (const socket of pair.sockets) socket.on('close', end).on('error', end);
      upstream.connect(targetPort, '127.0.0.1');
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Stops forwarding on every open connection, in both directions; nothing is closed. */
  blackhole(): number {
    for (const pair of this.open) pair.silent = true;
    return this.open.size;
  }

  /** Closes the server's side of the silenced connections, as the server's own keepalive would. */
  endSilencedUpstreams(): void {
    for (const pair of this.open) if (pair.silent) pair.sockets[1]?.destroy();
  }

  async close(): Promise<void> {
    for (const pair of this.open) for (const socket of pair.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const keepaliveMs = 200;
const keepaliveTimeoutMs = 300;

for (const transport of ['stream', 'unary'] as const) {
  test(`Worker (${transport}): keepalive pings fail a silent connection with UNAVAILABLE, and the worker works again`, async () => {
    const t = await startTestServer();
    const proxy = new BlackholeProxy(t.server.grpcPort);
    const direct = SeppClient.connect(t.address);
    const client = SeppClient.connect(await proxy.listen(), { keepaliveMs, keepaliveTimeoutMs, transport });
    const worker = client.worker({
      queues: ['keepalive'],
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

      // Until the server's own pings notice the silence (src/rpc/server.ts: 60 s, then 20 s for the
      // answer), it still counts the old stream as a worker waiting for jobs and would lease it the
      // next one, to be redelivered when that lease expires; the test ends the server's side now.
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
