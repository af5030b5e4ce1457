/**
 * Answers to clients that do not read (task slowread19). Neither HTTP door had a write
 * deadline: a client that sent a request and never read the answer kept the connection, and
 * the answer's memory, for as long as it stayed connected. Now a connection whose client takes
 * nothing of an answer for http.write_timeout_ms (the admin port: 30 s) is closed, logged once
 * and counted; one that reads slowly, but reads, keeps it (src/platform/write-deadline.ts).
 * Real sockets, real servers on port 0, deadlines of 300 ms (the admin port) and 1 s (the HTTP
 * API's, set by a reload); answers of 8 MiB and more, past
 * what the kernel's buffers take on loopback (about 4 MiB here).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connect as connectTls } from 'node:tls';
import { Hono } from 'hono';
import { serveAdmin } from '../../src/admin/serve.ts';
import { createLogger } from '../../src/telemetry/logger.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';

const MiB = 1024 * 1024;
/** The admin port's deadline here; the HTTP API's is longer (1 s), so that a reading client under load is never late. */
const deadlineMs = 300;
const httpDeadlineMs = 1_000;

/**
 * Sends `request` on a new connection and reads nothing until `closedByServer` resolves (the
 * server says it closed the connection); then reads what the kernel still holds. Resolves with
 * how long the server took, and how many bytes arrived in all (a part of the answer).
 */
async function neverRead(
  port: number,
  request: string,
  closedByServer: () => Promise<void>,
): Promise<{ afterMs: number; readBytes: number }> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  const startMs = performance.now();
  socket.write(request);
  socket.pause();
  await closedByServer();
  const afterMs = performance.now() - startMs;
  let readBytes = 0;
  socket.on('data', (chunk: Buffer) => {
    readBytes += chunk.length;
  });
  await new Promise((resolve) => {
    socket.once('close', resolve);
    socket.resume();
  });
  return { afterMs, readBytes };
}

/** Sends `request` (with `Connection: close`) and reads until the server closes: the whole answer, head and body. */
function readWhole(port: number, request: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.once('error', reject);
    socket.once('close', () => resolve(Buffer.concat(chunks)));
    socket.once('connect', () => socket.write(request));
  });
}

/** Resolves once `condition` holds (checked every 10 ms), or fails after 10 s. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Sends `request` and reads the answer in bursts, `pauseMs` apart (shorter than the deadline),
 * each of at most 2 MiB, until the connection has given `bytes`. Resolves with the bytes read,
 * how long it took and whether the server closed the connection first.
 */
function readInBursts(
  port: number,
  request: string,
  bytes: number,
  pauseMs: number,
): Promise<{ readBytes: number; tookMs: number; closedEarly: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let readBytes = 0;
    let burstBytes = 0;
    let startMs = 0;
    let done = false;
    const finish = (closedEarly: boolean) => {
      if (done) return;
      done = true;
      clearInterval(bursts);
      socket.destroy();
      resolve({ readBytes, tookMs: performance.now() - startMs, closedEarly });
    };
    socket.on('data', (chunk: Buffer) => {
      readBytes += chunk.length;
      burstBytes += chunk.length;
      if (readBytes >= bytes) finish(false);
      else if (burstBytes >= 2 * MiB) socket.pause();
    });
    socket.once('close', () => finish(true));
    socket.once('connect', () => {
      startMs = performance.now();
      socket.write(request);
      socket.pause();
    });
    const bursts = setInterval(() => {
      burstBytes = 0;
      socket.resume();
    }, pauseMs);
  });
}

describe('the HTTP API', () => {
  let t: TestServer;
  let jobId = '';
  const lines: string[] = [];
  let getJob = '';
  let answerBytes = 0;
  const port = () => Number(new URL(t.httpUrl).port);

  const toml = (writeTimeout: string) => `[queue_defaults]
max_payload_bytes = "8MiB"
[grpc]
max_message_bytes = "10MiB"
[http]
write_timeout_ms = "${writeTimeout}"
max_connections = 1
`;

  before(async () => {
    // Started with an hour; the deadline under test comes from a reload, which may change it.
    t = await startTestServer({
      http: true,
      logger: createLogger({ level: 'info', format: 'json', write: (line) => lines.push(line) }),
      toml: toml('1h'),
    });
    t.writeConfig(toml(`${httpDeadlineMs}ms`));
    const reload = await t.server.reload();
    assert.ok(reload.changed.includes('http.write_timeout_ms'), JSON.stringify(reload));
    assert.ok(!reload.restartRequired.includes('http.write_timeout_ms'));
    assert.ok(
      lines.some((line) => line.includes('config.reloaded') && line.includes('http.write_timeout_ms')),
    );
    // Not JSON: the payload travels as base64, an answer of 8 MiB.
    const payload = Buffer.alloc(6 * MiB, 0x61);
    ({ jobId } = await call(t.client, t.client.enqueue, { job: testJob('big', { payload }) }));
    getJob = `GET /v1/jobs/${jobId} HTTP/1.1\r\nHost: localhost\r\n\r\n`;
    const whole = await readWhole(port(), getJob.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'));
    answerBytes = whole.length;
    assert.match(whole.subarray(0, 20).toString(), /^HTTP\/1\.1 200/);
    assert.ok(answerBytes > 8 * MiB, `${answerBytes}`);
  });
  after(() => t?.dispose());

  test('a client that never reads a large answer is closed at the deadline, logged and counted', async () => {
    const logged = () => lines.filter((line) => line.includes('"http.write_timeout"'));
    const { afterMs, readBytes } = await neverRead(port(), getJob, () =>
      until(() => logged().length > 0, 'the log line'),
    );
    assert.ok(afterMs >= httpDeadlineMs, `closed after ${afterMs} ms`);
    assert.ok(readBytes < answerBytes, `${readBytes} of ${answerBytes} bytes: the answer was cut`);
    assert.equal(logged().length, 1, 'one line for the connection');
    assert.match(logged()[0] ?? '', /"level":"warn".*"peer":"127\.0\.0\.1:\d+".*http\.write_timeout_ms/);
    const { samples } = await scrape(t.metricsUrl);
    assert.equal(
      sampleValue(samples, 'sepp_http_connections_closed_total', {
        sepp_http_door: 'http',
        sepp_refusal_reason: 'write_timeout',
      }),
      1,
    );
    // http.max_connections is 1: the next connection is served only once that one was let go.
    const again = await readWhole(
      port(),
      'GET /v1/openapi.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    assert.match(again.subarray(0, 20).toString(), /^HTTP\/1\.1 200/);
  });

  test('a client that reads slowly, in bursts shorter apart than the deadline, gets the whole answer', async () => {
    const { readBytes, tookMs, closedEarly } = await readInBursts(port(), getJob, answerBytes, 400);
    assert.equal(closedEarly, false, `closed after ${readBytes} bytes`);
    assert.ok(readBytes >= answerBytes);
    // It took longer than the deadline: the deadline is between steps of progress, not for the whole answer.
    assert.ok(tookMs > httpDeadlineMs, `${tookMs} ms`);
  });

  test('a long-poll that waits past the deadline, and an event stream quiet past it, keep their connections', async () => {
    // Nothing waits to be written while a reserve waits or a stream has no event: no deadline runs.
    const closed = async () =>
      sampleValue((await scrape(t.metricsUrl)).samples, 'sepp_http_connections_closed_total', {
        sepp_http_door: 'http',
        sepp_refusal_reason: 'write_timeout',
      });
    const before = await closed();
    const waitMs = httpDeadlineMs + 500;
    const body = JSON.stringify({ queues: ['lp-empty'], waitTimeoutMs: waitMs, workerId: 'lp' });
    const startMs = performance.now();
    const answer = await readWhole(
      port(),
      `POST /v1/reserve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.ok(performance.now() - startMs >= waitMs - 50, 'the long-poll waited');
    assert.match(answer.toString(), /^HTTP\/1\.1 200[\s\S]*"jobs":\[\]/);

    const stream = connect(port(), '127.0.0.1');
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
    });
    let closedEarly = false;
    stream.once('close', () => {
      closedEarly = true;
    });
    stream.write('GET /v1/events?queues=lp-events HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await until(() => text.includes('text/event-stream'), 'the stream to open');
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    await call(t.client, t.client.enqueue, { job: testJob('lp-events') });
    await until(() => text.includes('enqueued'), 'the event after the quiet');
    assert.equal(closedEarly, false);
    stream.destroy();
    assert.equal(await closed(), before, 'no connection closed for the deadline');
  });
});

describe('the admin port', () => {
  const big = new Uint8Array(16 * MiB);
  const app = new Hono();
  app.get('/big', (c) => c.body(big, 200, { 'Content-Type': 'application/octet-stream' }));
  app.get('/small', (c) => c.json({ ok: true }));
  const timeouts: { peer: string; pendingBytes: number }[] = [];
  let admin: Awaited<ReturnType<typeof serveAdmin>>;
  before(async () => {
    admin = await serveAdmin(app, {
      host: '127.0.0.1',
      port: 0,
      writeTimeoutMs: deadlineMs,
      onWriteTimeout: (timeout) => timeouts.push(timeout),
    });
  });
  after(() => admin?.close());

  test('a client that never reads is closed at the deadline; its connection is let go', async () => {
    const { afterMs, readBytes } = await neverRead(
      admin.address.port,
      'GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n',
      () => until(() => timeouts.length > 0, 'the write timeout'),
    );
    assert.ok(afterMs >= deadlineMs, `closed after ${afterMs} ms`);
    assert.ok(readBytes < big.length, `${readBytes} bytes: the answer was cut`);
    assert.equal(timeouts.length, 1);
    assert.match(timeouts[0]?.peer ?? '', /^127\.0\.0\.1:\d+$/);
    assert.ok((timeouts[0]?.pendingBytes ?? 0) > 0);
    await until(async () => (await admin.connections()).open === 0, 'the connection let go');
    assert.equal((await admin.connections()).writeTimeouts, 1);
  });

  test('a client that reads its answers keeps its connection past the deadline', async () => {
    const socket = connect(admin.address.port, '127.0.0.1');
    try {
      await new Promise((resolve) => socket.once('connect', resolve));
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += String(chunk);
      });
      socket.write('GET /small HTTP/1.1\r\nHost: localhost\r\n\r\n');
      await until(() => text.includes('{"ok":true}'), 'the answer');
      assert.match(text, /^HTTP\/1\.1 200/);
      // Idle (nothing waiting to be written) for longer than the write deadline: still open.
      await new Promise((resolve) => setTimeout(resolve, deadlineMs * 2));
      assert.equal(socket.destroyed, false);
      assert.equal((await admin.connections()).open, 1);
    } finally {
      socket.destroy();
    }
  });
});

test('over TLS, a client that never reads is closed at the deadline too', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-write-deadline-'));
  const cert = selfSignedCertificate(dir);
  const app = new Hono();
  app.get('/big', (c) => c.body(new Uint8Array(16 * MiB), 200));
  const timeouts: unknown[] = [];
  const admin = await serveAdmin(app, {
    host: '127.0.0.1',
    port: 0,
    tls: { cert: cert.certPem, key: readFileSync(cert.keyFile) },
    writeTimeoutMs: deadlineMs,
    onWriteTimeout: (timeout) => timeouts.push(timeout),
  });
  const socket = connectTls({ port: admin.address.port, host: '127.0.0.1', rejectUnauthorized: false });
  try {
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('secureConnect', resolve));
    socket.write('GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n');
    socket.pause();
    await until(() => timeouts.length > 0, 'the write timeout');
    await until(async () => (await admin.connections()).open === 0, 'the connection let go');
  } finally {
    socket.destroy();
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
