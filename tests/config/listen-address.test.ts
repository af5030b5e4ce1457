import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isLoopbackHost, parseListenAddress } from '../../src/config/listen-address.ts';

test('host:port forms parse, with IPv6 in brackets', () => {
  assert.deepEqual(parseListenAddress('127.0.0.1:50051'), {
    ok: true,
    value: { host: '127.0.0.1', port: 50051, address: '127.0.0.1:50051', loopback: true },
  });
  assert.deepEqual(parseListenAddress('[::]:0'), {
    ok: true,
    value: { host: '::', port: 0, address: '[::]:0', loopback: false },
  });
  const named = parseListenAddress('queue.internal:9465');
  assert.ok(named.ok && named.value.host === 'queue.internal' && !named.value.loopback);
});

test('malformed addresses are refused', () => {
  for (const text of [
    '50051',
    '::1:50051',
    ':50051',
    '127.0.0.1:',
    '127.0.0.1:70000',
    'a b:1',
    '[nope]:1',
    'h:-1',
  ]) {
    assert.equal(parseListenAddress(text).ok, false, text);
  }
});

test('only provably local hosts are loopback', () => {
  for (const host of [
    '127.0.0.1',
    '127.1.2.3',
    'localhost',
    'LOCALHOST',
    '::1',
    '0:0:0:0:0:0:0:1',
    '::ffff:127.0.0.1',
  ]) {
    assert.equal(isLoopbackHost(host), true, host);
  }
  for (const host of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'localhost.example', 'my-host', '::2']) {
    assert.equal(isLoopbackHost(host), false, host);
  }
});

test('an IPv6 zone id is refused with a message, never a crash (issue 14, item 16)', () => {
  for (const text of ['[::1%lo]:50051', '[fe80::1%eth0]:9465', '[::1%25lo]:1', '[::1%]:1']) {
    const parsed = parseListenAddress(text);
    assert.equal(parsed.ok, false, text);
    assert.ok(!parsed.ok);
    assert.match(parsed.message, /zone id/, text);
    assert.match(parsed.message, /\[::1\]:50051|without it/, text);
  }
  // isLoopbackHost is exported on its own; a zone id must not throw there either.
  assert.equal(isLoopbackHost('::1%lo'), false);
  assert.equal(isLoopbackHost('fe80::1%eth0'), false);
});
