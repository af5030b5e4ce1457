/**
 * Requests that never reach the app — bytes Node's parser refuses, or a
 * request line that is no valid URL — are still answered in the API's error
 * shape, with its security headers, and the connection is closed.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Hono } from 'hono';
import { type AdminServer, serveAdmin } from '../../src/admin/serve.ts';
import { sendRaw } from '../helpers/http-raw.ts';

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
