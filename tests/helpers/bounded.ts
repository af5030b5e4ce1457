/**
 * A guard against a hang, not a timed assertion: a wait that should end (a message a
 * stream should get, a pass that should finish) fails naming what did not happen,
 * long before the runner's kill of the whole file would say nothing about it.
 */

/** A call (or a start, a stop) answered, or failed, within `ms`. */
export const answered = <T>(reply: Promise<T>, what: string, ms = 30_000): Promise<T> =>
  within(reply, `${what} answered`, ms);

/** Settles as `promise` does; rejects with "`what` did not happen within `ms` ms" if it has not by then. */
export function within<T>(promise: Promise<T>, what: string, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
