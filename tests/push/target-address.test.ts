/**
 * The pieces of push delivery that need no server: which addresses a push
 * may connect to (every non-public range refused, IPv4-mapped and NAT64
 * forms included; IP literals in a URL checked before connecting), the
 * signature a receiver checks, and reading Retry-After.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryAfterMs } from '../../src/push/delivery.ts';
import { signatureOf, verifySignature } from '../../src/push/index.ts';
import { checkLiteral, refusalOf } from '../../src/push/target-address.ts';

test('non-public addresses are refused, public ones allowed', () => {
  const refused = [
    '127.0.0.1',
    '127.255.0.9',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '2001:db8::1',
  ];
  for (const address of refused) assert.notEqual(refusalOf(address), null, address);
  for (const address of [
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
  ]) {
    assert.equal(refusalOf(address), null, address);
  }
  assert.match(refusalOf('not-an-ip') ?? '', /not an IP address/);
});

test('an IP literal in a target URL is checked before any connection, unless private targets are allowed', () => {
  const key = 'queues.q.push';
  assert.match(
    checkLiteral(new URL('http://127.0.0.1:9/x'), false, key) ?? '',
    /refused to connect: 127\.0\.0\.1 is a loopback/,
  );
  assert.match(checkLiteral(new URL('http://[::1]:9/x'), false, key) ?? '', /::1/);
  assert.match(
    checkLiteral(new URL('http://169.254.169.254/latest/meta-data'), false, key) ?? '',
    /allow_private_targets/,
  );
  assert.equal(checkLiteral(new URL('http://127.0.0.1:9/x'), true, key), null);
  assert.equal(checkLiteral(new URL('https://93.184.216.34/x'), false, key), null);
  // A host name is checked by the lookup at connect time, on every address it resolves to.
  assert.equal(checkLiteral(new URL('http://localhost:9/x'), false, key), null);
});

test('a signature verifies over the exact body and time, and nothing else', () => {
  const secret = Buffer.from('sig-secret-0123456789');
  const body = Buffer.from('{"jobId":"x","attempt":1}');
  const header = signatureOf(secret, 1_777_000_000, body);
  assert.match(header, /^t=1777000000,v1=[0-9a-f]{64}$/);
  assert.equal(verifySignature(secret, header, body, 1_777_000_100), true);
  assert.equal(verifySignature(secret, header, Buffer.from(`${body} `), 1_777_000_100), false);
  assert.equal(verifySignature(Buffer.from('other-secret-0123456'), header, body, 1_777_000_100), false);
  assert.equal(verifySignature(secret, header, body, 1_777_000_301), false, 'more than 5 minutes old');
  assert.equal(verifySignature(secret, header.replace(/t=\d+/, 't=1777000001'), body, 1_777_000_100), false);
  assert.equal(verifySignature(secret, `${header},v1=00`, body, 1_777_000_100), true, 'any v1 that matches');
});

test('Retry-After: seconds or an HTTP date, at most an hour; nothing readable is no delay', () => {
  const now = Date.parse('2026-05-01T12:00:00Z');
  assert.equal(retryAfterMs('2', now), 2000);
  assert.equal(retryAfterMs('0', now), 0);
  assert.equal(retryAfterMs('86400', now), 3_600_000);
  assert.equal(retryAfterMs('Fri, 01 May 2026 12:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('Fri, 01 May 2026 11:00:00 GMT', now), 0);
  assert.equal(retryAfterMs(undefined, now), null);
  assert.equal(retryAfterMs('soon', now), null);
  assert.equal(retryAfterMs('-5', now), null);
});
