/** Small helpers for the SDK tests: promises to resolve by hand and waiting for events instead of sleeping. */
import type { EventEmitter } from 'node:events';

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

/** Lets pending I/O and timers of zero delay run (a round trip to the in-process server and back). */
export async function settle(rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((r) => setImmediate(r));
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
