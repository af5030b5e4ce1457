/**
 * Behind a reverse proxy (issue 14, item 12): X-Forwarded-For names the
 * client only when the request comes from a listed proxy, so clients behind
 * the proxy are throttled (and audited) one by one, and nobody else can pick
 * an address by sending the header.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientAddressResolver, normalizeAddress } from '../../src/admin/client-address.ts';
import { openTestAdmin, TestClient } from '../helpers/admin.ts';

test('addresses as sockets and proxies write them come out plain', () => {
  assert.equal(normalizeAddress('::ffff:10.0.0.1'), '10.0.0.1');
  assert.equal(normalizeAddress(' 203.0.113.7 '), '203.0.113.7');
  assert.equal(normalizeAddress('203.0.113.7:4711'), '203.0.113.7');
  assert.equal(normalizeAddress('[2001:DB8::1]:443'), '2001:db8::1');
  assert.equal(normalizeAddress('fe80::1%eth0'), 'fe80::1');
  for (const bad of ['', 'unknown', 'proxy.internal', '1.2.3.4.5', '_hidden']) {
    assert.equal(normalizeAddress(bad), undefined, bad);
  }
});

test('X-Forwarded-For counts only from a listed proxy: the right-most address that is not one', () => {
  const ignored: string[] = [];
  const resolve = clientAddressResolver({
    trustedProxies: ['10.9.0.0/16', '::1/128'],
    onUntrustedForward: (peer) => ignored.push(peer),
  });
  assert.equal(resolve('10.9.0.1', undefined), '10.9.0.1');
  assert.equal(resolve('10.9.0.1', '203.0.113.7'), '203.0.113.7');
  assert.equal(
    resolve('::ffff:10.9.0.1', '203.0.113.7'),
    '203.0.113.7',
    'an IPv4 proxy on a dual-stack socket',
  );
  // What the client wrote itself (left of the first untrusted hop) proves nothing.
  assert.equal(resolve('10.9.0.1', '1.1.1.1, 203.0.113.7'), '203.0.113.7');
  // Two proxies in a row.
  assert.equal(resolve('10.9.0.1', '203.0.113.7, 10.9.5.5'), '203.0.113.7');
  assert.equal(resolve('::1', '[2001:db8::7]:50000'), '2001:db8::7');
  // Garbage in the header: the nearest trusted hop is the client.
  assert.equal(resolve('10.9.0.1', 'not-an-address'), '10.9.0.1');
  assert.equal(resolve('10.9.0.1', '203.0.113.7, junk, 10.9.5.5'), '10.9.5.5');
  // Everything in the header is a proxy: the left-most is as far as we can see.
  assert.equal(resolve('10.9.0.1', '10.9.7.7, 10.9.5.5'), '10.9.7.7');
  // Not from a proxy: ignored, and said once.
  assert.equal(resolve('192.0.2.1', '203.0.113.7'), '192.0.2.1');
  assert.equal(resolve('192.0.2.2', '203.0.113.8'), '192.0.2.2');
  assert.deepEqual(ignored, ['192.0.2.1']);
});

/** A client behind the proxy at 10.9.0.1, as the proxy forwards it. */
function behindProxy(admin: Awaited<ReturnType<typeof openTestAdmin>>, forwardedFor: string): TestClient {
  const client = new TestClient(admin.app);
  client.env = { incoming: { socket: { remoteAddress: '10.9.0.1' } } };
  const request = client.request.bind(client);
  client.request = (method, path, body, headers = {}) =>
    request(method, path, body, { 'x-forwarded-for': forwardedFor, ...headers });
  return client;
}

test('behind a listed proxy, 21 failed logins from one client lock out that client, not everyone', async () => {
  const a = await openTestAdmin({ deps: { trustedProxies: ['10.9.0.0/16'] } });
  try {
    const guesser = behindProxy(a, '203.0.113.66');
    for (let i = 0; i < 21; i++) assert.equal((await guesser.login(`user${i}`, 'x')).status, 401);
    assert.equal((await guesser.login('admin')).status, 429, 'the guessing client is locked out');
    const colleague = behindProxy(a, '203.0.113.7');
    assert.equal((await colleague.login('admin')).status, 200, 'another client behind the proxy is not');
    const audit = (await a.t.engine.listAudit({ action: 'session.login' })).items;
    assert.deepEqual(audit[0]?.details, { client: '203.0.113.7', role: 'admin' });
    // The client cannot escape its lockout by writing its own header: the proxy appends the real one.
    const spoofing = behindProxy(a, '198.51.100.1, 203.0.113.66');
    assert.equal((await spoofing.login('admin')).status, 429);
  } finally {
    a.dispose();
  }
});

test('without trusted_proxies the header is ignored: everyone behind a proxy is one client (and a warning says so)', async () => {
  const lines: string[] = [];
  const a = await openTestAdmin({ deps: { log: { log: (_level, message) => lines.push(message) } } });
  try {
    const guesser = behindProxy(a, '203.0.113.66');
    for (let i = 0; i < 21; i++) assert.equal((await guesser.login(`user${i}`, 'x')).status, 401);
    assert.equal((await behindProxy(a, '203.0.113.7').login('admin')).status, 429);
    assert.equal(lines.filter((m) => m === 'admin.forwarded_for_ignored').length, 1);
  } finally {
    a.dispose();
  }
});
