/**
 * KeyRefusalLines (the log's `rpc.answers_refused` and `http.answers_refused`): per key, the
 * first refusal or give-back told at once, what one synchronous run does in one line, then at
 * most one line a minute standing for everything since the last; keys apart, and bounded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyRefusalLines, type KeyRefusals } from '../../src/platform/key-refusal-lines.ts';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function lines(maxKeys?: number) {
  let nowMs = 1_000;
  const told: [string, KeyRefusals][] = [];
  const refusals = new KeyRefusalLines(
    (key, since) => told.push([key, since]),
    () => nowMs,
    60_000,
    maxKeys,
  );
  return { refusals, told, at: (ms: number) => (nowMs = ms) };
}

test("a key's refusals: one line at once for a run, then at most one a minute with the count since", async () => {
  const { refusals, told, at } = lines();
  // A Reserve's answer refused, then its jobs given back: one line.
  refusals.refused('worker');
  refusals.givenBack('worker');
  assert.deepEqual(told, [], 'told once the run is over');
  await tick();
  assert.deepEqual(told, [['worker', { refused: 1, givenBack: 1 }]]);
  // Another key is told on its own terms.
  refusals.refused('reader');
  await tick();
  assert.equal(told.length, 2);
  // Within the minute: held back, then told with what came since.
  at(30_000);
  refusals.refused('worker');
  refusals.refused('worker');
  await tick();
  assert.equal(told.length, 2);
  at(61_000);
  refusals.givenBack('worker');
  await tick();
  assert.deepEqual(told.at(-1), ['worker', { refused: 2, givenBack: 1 }]);
});

test('at most maxKeys keys are followed: past them, all are forgotten and told at once again', async () => {
  const { refusals, told } = lines(2);
  for (const key of ['a', 'b', 'c', 'a']) refusals.refused(key);
  await tick();
  assert.deepEqual(
    told.map(([key]) => key),
    ['a', 'b', 'c', 'a'],
  );
});
