/**
 * RepeatThrottle: the first of a run told at once, then one line per period standing for those
 * held back; RepeatThrottles: one such run per distinct key, a bounded number of them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RepeatThrottle, RepeatThrottles } from '../../src/platform/repeat-throttle.ts';

test('the first at once, then at most one line per period with the count since the last; a reset starts a new run', () => {
  const lines = new RepeatThrottle(60_000);
  assert.equal(lines.occurred(1_000), 1, 'the first is told at once');
  assert.equal(lines.occurred(2_000), 0);
  assert.equal(lines.occurred(60_999), 0, 'not before the period has passed');
  assert.equal(lines.occurred(61_000), 3, 'one line for the two held back and this one');
  assert.equal(lines.occurred(61_001), 0);
  lines.reset();
  assert.equal(lines.occurred(61_002), 1, 'a new run is told at once, for itself alone');
  assert.equal(lines.occurred(121_002), 1);
});

test('per key: each distinct thing is its own run; past the bound all are forgotten and told again', () => {
  const lines = new RepeatThrottles(60_000, 2);
  assert.equal(lines.occurred('collector down', 1_000), 1);
  assert.equal(lines.occurred('payload rejected', 1_001), 1, 'another message is told at once');
  assert.equal(lines.occurred('collector down', 2_000), 0);
  assert.equal(lines.occurred('collector down', 61_000), 2, 'one line for the one held back and this one');
  assert.equal(lines.occurred('payload rejected', 30_000), 0);
  assert.equal(lines.occurred('a third', 30_001), 1, 'a third key: the two followed are forgotten');
  assert.equal(lines.occurred('payload rejected', 30_002), 1, 'told at once again, for itself alone');
});
