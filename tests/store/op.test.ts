/**
 * How a store runs an operation (src/store/op.ts): a synchronous store runs it at
 * once and refuses a suspension; an asynchronous store resumes it with what each
 * suspension settled to, and throws a rejection into it, so the engine's own
 * try/finally and error handling work across the network.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { just, nothing, type Op, resume, runAtOnce } from '../../src/store/op.ts';

/** An operation of an asynchronous store: it suspends on the statement's promise. */
function* remote<T>(answer: Promise<T>): Op<T> {
  return (yield answer) as T;
}

/** Engine code: composes operations with yield*, never awaits. */
function* transfer(log: string[], fail: boolean): Op<number> {
  try {
    const a = yield* remote(Promise.resolve(2));
    const b = yield* remote(fail ? Promise.reject(new Error('the network failed')) : Promise.resolve(3));
    log.push(`got ${a} and ${b}`);
    return a * b;
  } finally {
    log.push('finally ran');
  }
}

test('an asynchronous store resumes a unit with each answer, and throws a failure into it', async () => {
  const log: string[] = [];
  assert.equal(await resume(transfer(log, false)), 6);
  assert.deepEqual(log, ['got 2 and 3', 'finally ran']);
  log.length = 0;
  await assert.rejects(resume(transfer(log, true)), /the network failed/);
  assert.deepEqual(log, ['finally ran'], 'the unit saw the failure where it waited');
});

test('a synchronous store runs a unit at once and refuses one that suspends', () => {
  assert.equal(runAtOnce(just(7)), 7);
  assert.equal(runAtOnce(nothing), undefined);
  assert.equal(runAtOnce(nothing), undefined, 'nothing can be used again');
  const log: string[] = [];
  assert.throws(() => runAtOnce(transfer(log, false)), /asked to suspend/);
  assert.deepEqual(log, ['finally ran'], 'the refused unit was closed');
});
