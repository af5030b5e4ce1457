/**
 * Both HTTP doors (the HTTP API and the admin port) against a peer without a key or a login,
 * with the source (task attack5, 2026-12-07). Each test is a finding, written before its fix:
 *
 * - Pipelining: a client wrote many requests in one chunk and never read. Node parsed them all
 *   and held every answer: one connection with 2,000 GETs of the HTTP API's OpenAPI document
 *   (64 KiB of request) took the server from 96 to 480 MiB. Now a connection with more than
 *   a few requests open is closed, and what it sent past them costs nothing.
 * - The admin port took connections without bound, each a file descriptor the other doors and
 *   the store need too: 1,200 idle connections under a 1,024 descriptor limit left the HTTP API
 *   unable to accept any. Now it holds at most 1,024 (a setting of serveAdmin, tested small here).
 *
 * - A request answered behind another on its connection (pipelined) kept what it held until its
 *   answer was sent: Node never closes an answer still waiting its turn when the connection
 *   goes. A client that pipelined a body behind a long-poll and hung up left the body's bytes
 *   counted in flight for good (and its read share, and the server's shutdown waited for it):
 *   with a few such requests no caller sharing the key could send a body again (429) until a
 *   restart. Now they are given back when the connection closes.
 *
 * Real servers on port 0, real sockets.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { Hono } from 'hono';
import { defaultMaxConnections, serveAdmin } from '../../src/admin/serve.ts';
import { maxOpenRequestsPerConnection } from '../../src/platform/pipelined-requests.ts';
import { apiCall } from '../helpers/http-api.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

let t: TestServer;
before(async () => {
  // Per key (here: every caller without one) 364 KiB of request bodies in flight: one body of
  // 190 KB fits, two do not.
  t = await startTestServer({
    http: true,
    toml:
      '[http]\nmax_request_bytes = "364KiB"\nmax_in_flight_bytes_per_key = "364KiB"\n' +
      '[queue_defaults]\nmax_payload_bytes = "200KiB"\n',
  });
});
after(() => t?.dispose());

/**
 * Writes `count` requests for `path` at once on a fresh connection, reads what comes back until
 * the server closes the connection or every answer came; the answers' count and whether it closed.
 */
async function pipeline(
  port: number,
  path: string,
  count: number,
): Promise<{ answers: number; closed: boolean }> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let text = '';
  let answers = 0;
  return new Promise((resolve) => {
    const done = (closed: boolean) => {
      socket.destroy();
      resolve({ answers, closed });
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      answers = text.split('HTTP/1.1 200 ').length - 1;
      if (answers === count) done(false);
    });
    socket.on('close', () => done(true));
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`.repeat(count)));
  });
}

test('a connection that pipelines past the bound is closed, on both doors, without a key', async () => {
  const count = 30;
  const doors = [
    { name: 'the HTTP API', port: Number(new URL(t.httpUrl).port), path: '/v1/openapi.json' },
    { name: 'the admin port', port: Number(new URL(t.metricsUrl).port), path: '/healthz' },
  ];
  for (const door of doors) {
    const { answers, closed } = await pipeline(door.port, door.path, count);
    assert.ok(closed, `${door.name} answered all ${count} pipelined requests of one connection`);
    assert.ok(
      answers <= maxOpenRequestsPerConnection,
      `${door.name}: ${answers} answers, at most ${maxOpenRequestsPerConnection}`,
    );
    // A client that waits for its answers is served as before, on a new connection.
    const single = await pipeline(door.port, door.path, 1);
    assert.deepEqual(single, { answers: 1, closed: false }, door.name);
  }
});

test('the admin port holds a bounded number of connections: one more is closed as it arrives', async () => {
  assert.equal(defaultMaxConnections, 1024, 'the documented bound (SECURITY.md)');
  const app = new Hono();
  app.get('*', (c) => c.json({ ok: true }));
  const admin = await serveAdmin(app, { host: '127.0.0.1', port: 0, maxConnections: 3 });
  const open: Socket[] = [];
  try {
    const opened = (socket: Socket) =>
      new Promise<void>((resolve, reject) => {
        socket.once('connect', () => resolve());
        socket.once('error', reject);
      });
    for (let i = 0; i < 3; i++) {
      const socket = connect(admin.address.port, '127.0.0.1');
      open.push(socket);
      await opened(socket);
    }
    const extra = connect(admin.address.port, '127.0.0.1');
    open.push(extra);
    extra.on('error', () => {});
    // Closed by the server at once: no answer, whatever it sends.
    extra.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const ended = await new Promise<string>((resolve) => {
      extra.on('data', (chunk: Buffer) => resolve(`answered: ${chunk.toString('latin1').slice(0, 40)}`));
      extra.on('close', () => resolve('closed'));
    });
    assert.equal(ended, 'closed');
    // The held connections are served.
    const first = open[0]!;
    first.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const answer = await new Promise<string>((resolve) =>
      first.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))),
    );
    assert.match(answer, /^HTTP\/1\.1 200 /);
  } finally {
    for (const socket of open) socket.destroy();
    await admin.close();
  }
});

test('a body pipelined behind a long-poll is given back when its connection closes', async () => {
  const port = Number(new URL(t.httpUrl).port);
  const pad = 'x'.repeat(190_000);
  const enqueue = (idempotencyKey: string, padding = '') =>
    JSON.stringify({ queue: 'a5-pipelined', type: 't', idempotencyKey, payload: { padding } });
  const post = (path: string, body: string) =>
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  // A long-poll, and behind it an enqueue of 190 KB: handled at once, its answer waits its turn.
  socket.write(
    post('/v1/reserve', JSON.stringify({ queues: ['a5-idle'], maxJobs: 1, waitTimeoutMs: 30_000 })) +
      post('/v1/jobs', enqueue('a5-behind', pad)),
  );
  // Stored once the same key answers as a duplicate.
  for (let stored = false; !stored; ) {
    const again = await apiCall<{ deduplicated?: boolean }>(t.httpUrl, '/v1/jobs', {
      raw: enqueue('a5-behind'),
    });
    assert.equal(again.status, 200, again.text);
    stored = again.json.deduplicated === true;
  }
  socket.destroy();
  // 190 KB more fit the 364 KiB only once the hung-up request gave its bytes back (the server
  // sees the connection close as soon as it reads again: a few tries at most).
  let status = 0;
  for (let attempt = 0; attempt < 40 && status !== 200; attempt++) {
    if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 25));
    status = (await apiCall(t.httpUrl, '/v1/jobs', { raw: enqueue(`a5-after-${attempt}`, pad) })).status;
  }
  assert.equal(status, 200, 'the bytes of the request behind the long-poll are still counted in flight');
});
