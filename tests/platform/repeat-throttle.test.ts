/** RepeatThrottle: the first of a run told at once, then one line per period standing for those held back. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RepeatThrottle } from '../../src/platform/repeat-throttle.ts';

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
