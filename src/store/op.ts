/**
 * How storage work is written: as generators the store runs.
 *
 * A store operation (`tx.leases.leaseReady(…)`) is a generator function; the
 * engine composes operations with `yield*` inside its own generator functions,
 * and hands the outermost, a unit of work, to the store (`store.write(unit)`,
 * `store.read(unit)`). The engine never calls a driver and never awaits inside
 * a unit: it only delegates. What a store does at each step is its own:
 *
 * - a synchronous store (SQLite) answers every operation at once and never
 *   yields; it runs a unit to its end with one `next()`, so no other JavaScript
 *   runs inside a transaction;
 * - an asynchronous store (a network database) yields the promise of each
 *   statement it sends, and drives the unit by resuming it with the answer
 *   (`resume` below), so the same engine code waits for the network.
 *
 * Only a store yields: engine code that yields anything itself is a bug.
 */

/** What an asynchronous store suspends an operation on; the SQLite store never yields one. */
export type Suspension = PromiseLike<unknown>;

/** Storage work: `yield*` it inside another Op; a store runs the outermost one. */
export type Op<T> = Generator<Suspension, T, unknown>;

/**
 * An Op with nothing to do, already finished: `yield*` it returns at once. One
 * shared object, so a branch that has no storage work allocates nothing.
 */
export const nothing: Op<void> = (function* () {})();
nothing.next();

/** An Op whose answer is known without storage work: `value`. */
// biome-ignore lint/correctness/useYield: an answer known at once needs no suspension, by design.
export function* just<T>(value: T): Op<T> {
  return value;
}

/**
 * Runs `op` to its end without suspending: for a synchronous store. A yield
 * (a suspension) is a bug there, so the generator is closed and the call throws.
 */
export function runAtOnce<T>(op: Op<T>): T {
  const step = op.next();
  if (step.done === true) return step.value;
  op.return(undefined as T);
  throw new Error('a synchronous store was asked to suspend an operation: only an asynchronous store yields');
}

/**
 * Runs `op` to its end, awaiting every suspension and resuming the operation with
 * what it settled to (or throwing its rejection into it): for an asynchronous store.
 */
export async function resume<T>(op: Op<T>): Promise<T> {
  let step = op.next();
  while (step.done !== true) {
    let answer: unknown;
    try {
      answer = await step.value;
    } catch (error) {
      step = op.throw(error);
      continue;
    }
    step = op.next(answer);
  }
  return step.value;
}
