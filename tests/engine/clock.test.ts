import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';

test('FakeClock fires due timers in due order with the clock at their due time', () => {
  const clock = new FakeClock(1000);
  const fired: string[] = [];
  clock.setTimer(30, () => fired.push(`b@${clock.nowMs()}`));
  clock.setTimer(10, () => fired.push(`a@${clock.nowMs()}`));
  const cancelled = clock.setTimer(20, () => fired.push('never'));
  cancelled.cancel();
  clock.advance(25);
  assert.deepEqual(fired, ['a@1010']);
  assert.equal(clock.nowMs(), 1025);
  clock.advance(5);
  assert.deepEqual(fired, ['a@1010', 'b@1030']);
  assert.equal(clock.pendingTimers, 0);
});

test('FakeClock runs timers scheduled by timers within the same advance', () => {
  const clock = new FakeClock(0);
  const fired: number[] = [];
  clock.setTimer(10, () => {
    fired.push(clock.nowMs());
    clock.setTimer(10, () => fired.push(clock.nowMs()));
  });
  clock.advance(100);
  assert.deepEqual(fired, [10, 20]);
});
