/** Messages on the wire are at most 1 KiB, cut at a character, and lists say how many they left out. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundMessage, messageBytesMax, summarizeList } from '../../src/config/index.ts';

test('a message that fits is unchanged; a longer one is cut to the cap and says how much is left out', () => {
  assert.equal(boundMessage('short'), 'short');
  const exact = 'x'.repeat(messageBytesMax);
  assert.equal(boundMessage(exact), exact);
  const long = `name ${'a'.repeat(1024 * 1024)}`;
  const bounded = boundMessage(long);
  assert.ok(Buffer.byteLength(bounded) <= messageBytesMax, `${Buffer.byteLength(bounded)} bytes`);
  assert.match(bounded, /^name a+… \(\d+ more bytes\)$/);
  const kept = bounded.length - bounded.slice(bounded.indexOf('…')).length;
  assert.equal(Number(/\((\d+) more/.exec(bounded)?.[1]), Buffer.byteLength(long) - kept);
});

test('a cut never splits a character', () => {
  for (const unit of ['ü', '€', '💩', 'aü€💩']) {
    const bounded = boundMessage(unit.repeat(2000));
    assert.ok(Buffer.byteLength(bounded) <= messageBytesMax);
    assert.ok(!bounded.includes('\ufffd'), `${unit}: no replacement character`);
    assert.equal(Buffer.from(bounded, 'utf8').toString('utf8'), bounded);
  }
});

test('a list names its first items and counts the rest', () => {
  assert.equal(summarizeList(['a', 'b']), 'a, b');
  assert.equal(summarizeList(['a', 'b', 'c', 'd', 'e']), 'a, b, c, d, e');
  const many = Array.from({ length: 1000 }, (_, i) => `k${i}`);
  assert.equal(summarizeList(many), 'k0, k1, k2, k3, k4 … and 995 more');
  assert.equal(summarizeList(many, 2, '; '), 'k0; k1 … and 998 more');
});
