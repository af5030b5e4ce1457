/**
 * The admin UI's time formatting never prints NaN (issue 29, item 11): a time
 * no date can hold (a schedule's start before the engine refused such times,
 * or any other field) reads as out of range, and the rest as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dateOf, fmtClock, fmtTime } from '../../ui/src/format.ts';

test('a time no date can hold reads "out of range", never NaN', () => {
  for (const ms of [9_000_000_000_000_000, Number.MAX_SAFE_INTEGER, -9_000_000_000_000_000, Number.NaN]) {
    assert.equal(dateOf(ms), null);
    for (const text of [fmtTime(ms), fmtClock(ms)]) {
      assert.doesNotMatch(text, /NaN/, `${ms}: ${text}`);
      assert.match(text, /^out of range \(/);
    }
  }
});

test('times a date can hold read as before', () => {
  const ms = Date.UTC(2026, 11, 3, 14, 5, 9);
  assert.match(fmtTime(ms), /^2026-12-0[34] \d\d:\d\d:09 UTC/);
  assert.match(fmtClock(ms), /^\d\d:\d\d$/);
  assert.equal(fmtTime(null), '—');
  assert.equal(dateOf(ms)?.getTime(), ms);
});

test('issue 36: something that happened never reads "in 2 s", and server text shows times in the UI format', async () => {
  const { fmtRelative, localTimes } = await import('../../ui/src/format.ts');
  const now = Date.UTC(2026, 11, 3, 14, 5, 9);
  // The browser learns the server's clock to about 2 s: an event just now may seem ahead of it.
  assert.equal(fmtRelative(now + 1900, now, { past: true }), 'now');
  assert.equal(fmtRelative(now + 30_000, now, { past: true }), 'now');
  assert.equal(fmtRelative(now - 12_000, now, { past: true }), '12 s ago');
  // Far ahead is a clock worth seeing; a time to come (a due time) reads as before.
  assert.equal(fmtRelative(now + 5 * 60_000, now, { past: true }), 'in 5 min');
  assert.equal(fmtRelative(now + 1900, now), 'in 1 s');
  const text = localTimes('job x was cancelled by ops at 2026-12-03T14:05:09.123Z: stop working on it');
  assert.doesNotMatch(text, /T14:05:09|Z:/);
  assert.match(
    text,
    /cancelled by ops at 2026-12-0[34] \d\d:\d\d:09 UTC[+-]?\d*(:\d\d)?: stop working on it$/,
  );
});
