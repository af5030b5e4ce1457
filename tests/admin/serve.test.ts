/**
 * Requests that never reach the app — bytes Node's parser refuses, or a
 * request line that is no valid URL — are still answered in the API's error
 * shape, with its security headers; the connection is closed after bytes the
 * parser refuses. A body an answer leaves unread (the app's, or the refusal of
 * a bad Host) is read and dropped, and the connection goes on.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { Hono } from 'hono';
import {
  type AdminServer,
  defaultHeadersTimeoutMs,
  defaultRequestTimeoutMs,
  serveAdmin,
} from '../../src/admin/serve.ts';
import { openTestAdmin, password } from '../helpers/admin.ts';
import { headAfterAnotherRequest, openRaw, sendRaw } from '../helpers/http-raw.ts';

let server: AdminServer;
before(async () => {
  const app = new Hono();
  app.get('*', (c) => c.json({ ok: true }));
  server = await serveAdmin(app, { host: '127.0.0.1', port: 0 });
});
after(() => server.close());

const cases: { name: string; request: string; status: number; code: string; message: RegExp }[] = [
  {
    name: 'no Host header',
    request: 'GET / HTTP/1.1\r\n\r\n',
    status: 400,
    code: 'invalid_argument',
    message: /Host header is not valid \(Missing host header\)/,
  },
  {
    name: 'a Host that is no host name',
    request: 'GET / HTTP/1.1\r\nHost: a b\r\n\r\n',
    status: 400,
    code: 'invalid_argument',
    message: /URL or Host header is not valid/,
  },
  {
    name: 'a raw non-ASCII byte in the path',
    request: 'GET /\xfc HTTP/1.1\r\nHost: localhost\r\n\r\n',
    status: 400,
    code: 'invalid_argument',
    message: /URL or Host header is not valid|malformed HTTP request/,
  },
  {
    name: 'a bare CR in a header value',
    request: 'GET / HTTP/1.1\r\nHost: localhost\r\nX-A: a\rInjected: yes\r\n\r\n',
    status: 400,
    code: 'invalid_argument',
    message: /malformed HTTP request/,
  },
  {
    name: 'a NUL in a header value',
    request: 'GET / HTTP/1.1\r\nHost: localhost\r\nX-A: a\0b\r\n\r\n',
    status: 400,
    code: 'invalid_argument',
    message: /malformed HTTP request/,
  },
  {
    name: 'headers over Node’s limit',
    request: `GET / HTTP/1.1\r\nHost: localhost\r\nX-A: ${'x'.repeat(20_000)}\r\n\r\n`,
    status: 431,
    code: 'headers_too_large',
    message: /headers are too large/,
  },
];

for (const c of cases) {
  test(`${c.name}: ${c.status} with a JSON error and the security headers`, async () => {
    const answer = await sendRaw(server.address.port, Buffer.from(c.request, 'latin1'), 2000);
    assert.equal(answer.timedOut, false);
    assert.equal(answer.status, c.status, answer.body.toString());
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    assert.equal(answer.headers['x-content-type-options'], 'nosniff');
    assert.match(String(answer.headers['content-security-policy']), /default-src 'none'/);
    assert.equal(answer.headers.injected, undefined);
    const body = JSON.parse(answer.body.toString()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, c.code);
    assert.match(body.error.message, c.message);
  });
}

test('an answer to a malformed HEAD request has no body', async () => {
  const port = server.address.port;
  const answer = await sendRaw(
    port,
    Buffer.from('HEAD /?q=\xfc HTTP/1.1\r\nHost: localhost\r\n\r\n', 'latin1'),
    500,
  );
  assert.equal(answer.status, 400);
  assert.equal(answer.body.length, 0);
});

test('an answer to a malformed HEAD in a packet that begins with another request has no body', async () => {
  // test:long's admin fuzz met it: a keep-alive client read "Data after Connection: close".
  const { head, after } = await headAfterAnotherRequest(server.address.port, '/healthz');
  assert.match(head, /^HTTP\/1\.1 400 /);
  assert.match(head, /\r\nContent-Length: 0(\r\n|$)/i);
  assert.equal(after, '', 'nothing after the answer to the HEAD');
});

test('a Host that only looks like a host name (999.1.1.1, 1.2.3.4.5, xn--zz) is 400, and logs no error', async () => {
  const lines: { level: string; message: string }[] = [];
  const admin = await openTestAdmin({
    deps: { log: { log: (level, message) => lines.push({ level, message }) } },
  });
  const real = await serveAdmin(admin.app, { host: '127.0.0.1', port: 0 });
  try {
    for (const host of ['999.1.1.1', '1.2.3.4.5', 'xn--zz', '1.2.3.256']) {
      for (const head of [
        'GET /api/v1/queues HTTP/1.1',
        'POST /api/v1/session HTTP/1.1',
        'GET /api/v1/session HTTP/1.1',
      ]) {
        const request = `${head}\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
        const answer = await sendRaw(real.address.port, Buffer.from(request, 'latin1'), 2000);
        assert.equal(answer.status, 400, `${host} ${head}: ${answer.body.toString()}`);
        const body = JSON.parse(answer.body.toString()) as { error: { code: string; message: string } };
        assert.equal(body.error.code, 'invalid_argument');
        assert.match(body.error.message, /Host header is not valid/);
        assert.equal(answer.headers['x-content-type-options'], 'nosniff');
      }
    }
    assert.deepEqual(
      lines.filter((l) => l.level === 'error'),
      [],
    );
  } finally {
    await real.close();
    admin.dispose();
  }
});

test('a body the answer leaves unread is read and dropped, however slowly it comes; the connection goes on', async () => {
  const admin = await openTestAdmin();
  const real = await serveAdmin(admin.app, { host: '127.0.0.1', port: 0 });
  const head = (method: string, path: string, extra = '') =>
    `${method} ${path} HTTP/1.1\r\nHost: localhost\r\n${extra}\r\n`;
  // Refused before its body is read (no session), a route that takes none, a GET: each answered
  // while its body is still coming.
  const requests = [
    head('POST', '/api/v1/queues/emails/pause', 'Content-Type: application/json\r\nContent-Length: 20\r\n'),
    head('DELETE', '/api/v1/session', 'Content-Type: application/json\r\nContent-Length: 20\r\n'),
    head('GET', '/api/v1/queues', 'Content-Length: 20\r\n'),
    // Refused before the app sees it: a Host no URL can hold.
    'POST /api/v1/session HTTP/1.1\r\nHost: 999.1.1.1\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n',
  ];
  const connections = requests.map(() => openRaw(real.address.port));
  try {
    await Promise.all(connections.map((c, i) => c.write(`${requests[i]}{"reason":`)));
    const first = await Promise.all(connections.map((c) => c.answers(1)));
    assert.deepEqual(
      first.map((answers) => answers.map((a) => a.status)),
      [[401], [401], [401], [400]],
    );
    // The rest of the body comes later than @hono/node-server's own drain waited (500 ms, then it
    // closed the connection, so the request sent after the body went unanswered). Real time: the
    // wait is in the dependency, which the test's clock cannot reach.
    await new Promise((resolve) => setTimeout(resolve, 600));
    await Promise.all(
      connections.map((c) => c.write(`"x"      }${head('GET', '/healthz')}`).catch(() => undefined)),
    );
    const all = await Promise.all(connections.map((c) => c.answers(2)));
    assert.deepEqual(
      all.map((answers) => answers.map((a) => a.status)),
      [
        [401, 200],
        [401, 200],
        [401, 200],
        [400, 200],
      ],
    );
    assert.deepEqual(
      connections.map((c) => c.closed),
      [false, false, false, false],
    );
  } finally {
    for (const c of connections) c.destroy();
    await real.close();
    admin.dispose();
  }
});

// review17b: with no 'checkContinue' listener Node answered 100 Continue before the app looked at
// the session, and the body it invited (100 MB declared) was then read and dropped.
test('Expect: 100-continue: answered (401 without a session, 413 over the limit) without asking for the body, then closed', async () => {
  const admin = await openTestAdmin();
  const real = await serveAdmin(admin.app, { host: '127.0.0.1', port: 0 });
  // Within the body limit the session decides (401); over it (100 MB), the limit does (413).
  const answers = [];
  const connections = [1000, 100_000_000].map(() => openRaw(real.address.port));
  try {
    for (const [i, bytes] of [1000, 100_000_000].entries()) {
      const raw = connections[i]!;
      await raw.write(
        'POST /api/v1/queues/emails/pause HTTP/1.1\r\nHost: localhost\r\n' +
          `Content-Type: application/json\r\nContent-Length: ${bytes}\r\nExpect: 100-continue\r\n\r\n`,
      );
      const [first] = await raw.answers(1);
      answers.push([first?.status, first?.headers.connection]);
    }
    assert.deepEqual(answers, [
      [401, 'close'],
      [413, 'close'],
    ]);
    // A client that sends its body anyway, unasked (curl does after 1 s), is served; the
    // connection still closes after the answer.
    const login = openRaw(real.address.port);
    connections.push(login);
    const body = JSON.stringify({ user: 'viewer', password });
    await login.write(
      'POST /api/v1/session HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await login.write(body);
    const [served] = await login.answers(1);
    assert.deepEqual([served?.status, served?.headers.connection], [200, 'close'], served?.body.toString());
  } finally {
    for (const raw of connections) raw.destroy();
    await real.close();
    admin.dispose();
  }
});

test('no more of an unread body than the body limit is dropped: past it the connection closes', async () => {
  const admin = await openTestAdmin();
  const maxUnreadBodyBytes = 64 * 1024;
  const real = await serveAdmin(admin.app, { host: '127.0.0.1', port: 0, maxUnreadBodyBytes });
  const raw = openRaw(real.address.port);
  try {
    await raw.write(
      'POST /api/v1/queues/emails/pause HTTP/1.1\r\nHost: localhost\r\n' +
        'Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n',
    );
    const [first] = await raw.answers(1);
    assert.equal(first?.status, 401);
    // It used to read on until the whole body had come or the 30 s deadline.
    await raw.write(Buffer.alloc(2 * maxUnreadBodyBytes, 0x20)).catch(() => undefined);
    await raw.answers(2, 3000);
    assert.equal(raw.closed, true);
  } finally {
    raw.destroy();
    await real.close();
    admin.dispose();
  }
});

/** Connects, writes `bytes`, and resolves with what came back and how long the server took to close. */
function holdOpen(port: number, bytes: string): Promise<{ text: string; elapsedMs: number }> {
  return new Promise((resolve) => {
    const startedMs = performance.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('close', () => resolve({ text, elapsedMs: performance.now() - startedMs }));
    socket.on('error', () => undefined);
    socket.write(bytes);
  });
}

test('the header and request deadlines hold: 408 once they pass, not up to 30 s later (Node checks on a timer)', async () => {
  // Short deadlines stand in for the real 10 s and 30 s; the timer that checks them scales with them.
  const headersTimeoutMs = 400;
  const requestTimeoutMs = 1200;
  const admin = await openTestAdmin();
  const short = await serveAdmin(admin.app, {
    host: '127.0.0.1',
    port: 0,
    headersTimeoutMs,
    requestTimeoutMs,
  });
  // A hang guard, not a timing claim: before the fix the answer came up to 30 s late.
  const guardMs = 8000;
  try {
    const [headers, body] = await Promise.all([
      holdOpen(short.address.port, 'GET /api/v1/queues HTTP/1.1\r\nHost: localhost\r\nX-Slow: a'),
      holdOpen(
        short.address.port,
        'POST /api/v1/session HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user"',
      ),
    ]);
    assert.match(headers.text, /^HTTP\/1\.1 408 /);
    assert.match(body.text, /^HTTP\/1\.1 408 /);
    assert.match(body.text, /"code":"request_timeout"/);
    // Lower bounds only, which load cannot break: the server's deadline starts when it
    // reads the connection, after this clock started, and a loaded machine only makes the
    // 408 later. The 50 ms is for the two clocks' granularity; the guard is a hang guard.
    assert.ok(headers.elapsedMs >= headersTimeoutMs - 50, `headers: ${headers.elapsedMs} ms`);
    assert.ok(headers.elapsedMs < guardMs, `headers: ${headers.elapsedMs} ms`);
    assert.ok(body.elapsedMs >= requestTimeoutMs - 50, `body: ${body.elapsedMs} ms`);
    assert.ok(body.elapsedMs < guardMs, `body: ${body.elapsedMs} ms`);
  } finally {
    await short.close();
    admin.dispose();
  }
});

test('the documented deadlines are the defaults: 10 s for the headers, 30 s for the whole request', () => {
  assert.equal(defaultHeadersTimeoutMs, 10_000);
  assert.equal(defaultRequestTimeoutMs, 30_000);
});
