/** Small helpers for the SDK tests: promises to resolve by hand and waiting for events instead of sleeping. */
import type { EventEmitter } from 'node:events';
import type { WorkerJob } from '../../clients/typescript/src/index.ts';

export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves once `emitter` has emitted `event` `count` times (counting from now), with the last arguments. */
export function nextEvents<A extends unknown[]>(emitter: EventEmitter, event: string, count = 1): Promise<A> {
  return new Promise((resolve) => {
    let seen = 0;
    const on = (...args: unknown[]) => {
      if (++seen < count) return;
      emitter.off(event, on);
      resolve(args as A);
    };
    emitter.on(event, on);
  });
}

/**
 * A positive witness that the server has handled what a Worker sent before now: a progress
 * report on each of `jobs` (running jobs of the worker), answered. A Worker writes its credit,
 * Reserve calls and settlements in the order it decides on them — on a Work stream in one
 * ordered stream of messages, over unary calls on one HTTP/2 connection — and the server
 * submits each write as it reads it, so once these answers are back, a lease the worker asked
 * for earlier has been committed: a read of the server's counts made now shows it. Waiting a
 * number of event-loop turns instead proves nothing on a loaded machine, where one round
 * trip can outlast them. Report on a job of each lane (each Work stream) the check concerns.
 */
export async function heardBack(jobs: Iterable<WorkerJob>): Promise<void> {
  await Promise.all([...jobs].map((job) => job.progress(1)));
}

/**
 * Waits until `check()` is true, yielding to the event loop between tries (no timers, so mocked
 * ones do not stop it). It gives up after `rounds` tries and at least `atLeastMs` of real time:
 * on a loaded machine a round trip to PostgreSQL can outlast 20,000 quick turns of an idle loop.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  rounds = 20_000,
  atLeastMs = 10_000,
): Promise<void> {
  const startedMs = performance.now();
  for (let i = 0; i < rounds || performance.now() - startedMs < atLeastMs; i++) {
    if (await check()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`gave up waiting for ${what}`);
}
