/**
 * Each caller's share of the store's read queue (src/engine/read-shares.ts), against a
 * stand-in for the store's queue: a caller past its share is refused only while reads wait,
 * counting out gives the place back (once), and a store whose reads never wait counts nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeppError } from '../../src/engine/errors.ts';
import { ReadShares } from '../../src/engine/read-shares.ts';

const refused = (error: unknown) =>
  error instanceof SeppError &&
  error.code === 'resource_exhausted' &&
  /^a has \d+ read calls in flight .*; its share is 2 \(store\.max_waiting_reads_per_key\); nothing was read, retry shortly$/.test(
    error.message,
  );

test('past its share a caller is refused while reads wait, and only then; others still enter', () => {
  const queue = { waiting: 0, sharePerCaller: 2, refusedTotal: 0 };
  const shares = new ReadShares(queue);
  const leaves = [shares.enter('a'), shares.enter('a'), shares.enter('a')];
  assert.equal(leaves.length, 3, 'no read waits: no share is enforced');
  queue.waiting = 1;
  assert.throws(() => shares.enter('a'), refused);
  const b = shares.enter('b');
  leaves[0]?.();
  leaves[0]?.();
  assert.throws(() => shares.enter('a'), refused, 'a second count-out gives nothing back');
  leaves[1]?.();
  const again = shares.enter('a');
  assert.deepEqual(shares.stats, { waiting: 1, refusedQueueFull: 0, refusedKeyShare: 2 });
  for (const leave of [again, b, leaves[2]]) leave?.();
  queue.waiting = 5;
  shares.enter('a');
  shares.enter('a');
  assert.throws(() => shares.enter('a'), refused, 'every count was given back');
});

test('a store whose reads never wait: nothing counted, nothing refused', () => {
  const shares = new ReadShares(undefined);
  for (let i = 0; i < 1000; i++) shares.enter('a');
  assert.equal(shares.stats, null);
});
