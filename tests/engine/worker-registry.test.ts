/**
 * The worker registry's unary callers: kept in the order they were last
 * seen, so forgetting the silent ones stops at the first fresh one (a touch
 * costs O(1) however many workers are known: bench/worker-registry.ts). These
 * check that the order is kept right: a worker seen again is never forgotten
 * for the silence of one seen before it, and a silent one behind a busy one is
 * still forgotten.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { WorkerRegistry } from '../../src/engine/operators/worker-registry.ts';

const forgetAfterMs = 60_000;
const unary = (workerId: string) => ({ workerId, address: 'ipv4:10.0.0.1:5000', queues: ['q'] });
const listed = (registry: WorkerRegistry) => registry.list(new Map()).map((w) => w.workerId);

test('a unary worker silent for longer than forgetAfterMs is forgotten, one seen since is kept', () => {
  const clock = new FakeClock(0);
  const registry = new WorkerRegistry(clock, { maxWorkers: 100, forgetAfterMs });
  registry.touch(unary('busy'));
  registry.touch(unary('silent'));
  clock.advance(forgetAfterMs - 1);
  registry.touch(unary('busy'));
  clock.advance(2);
  // 'busy' was first in; it is fresh, and 'silent' behind it is not.
  registry.touch(unary('late'));
  assert.deepEqual(listed(registry), ['busy', 'late']);
  clock.advance(forgetAfterMs);
  assert.deepEqual(listed(registry), ['late']);
  clock.advance(1);
  assert.deepEqual(listed(registry), []);
});

test('a forgotten worker frees its place under maxWorkers', () => {
  const clock = new FakeClock(0);
  const registry = new WorkerRegistry(clock, { maxWorkers: 2, forgetAfterMs });
  registry.touch(unary('a'));
  registry.touch(unary('b'));
  registry.touch(unary('c'));
  assert.deepEqual(listed(registry), ['a', 'b'], 'past the bound a worker works but is not listed');
  clock.advance(forgetAfterMs / 2);
  registry.touch(unary('b'));
  clock.advance(forgetAfterMs / 2 + 1);
  registry.touch(unary('c'));
  assert.deepEqual(listed(registry), ['b', 'c'], "'a' was forgotten; 'b', seen again, was not");
});
