/**
 * Where a push-based worker library meets the harness's pull interface: the library's job
 * handler `offer`s each delivery, a bench worker's `reserve()` `take`s one, whichever comes
 * first waits for the other. Deliveries are handed out in arrival order, to waiting takers
 * in the order they asked.
 */
export class Handoff<T> {
  private readonly ready: T[] = [];
  private readonly waiting: ((item: T | null) => void)[] = [];

  /** Hands `item` to the longest-waiting taker, or keeps it for the next one. */
  offer(item: T): void {
    const waiter = this.waiting.shift();
    if (waiter === undefined) this.ready.push(item);
    else waiter(item);
  }

  /** The next delivery, waiting up to `waitMs`; null if none came in time. */
  take(waitMs: number): Promise<T | null> {
    const item = this.ready.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise<T | null>((resolve) => {
      const give = (found: T | null) => {
        clearTimeout(timer);
        resolve(found);
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(give);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(null);
      }, waitMs);
      this.waiting.push(give);
    });
  }

  /** Up to `max` deliveries that are already here, without waiting. */
  takeReady(max: number): T[] {
    return this.ready.splice(0, max);
  }

  /** Ends every wait with null and returns the deliveries nobody took. */
  drain(): T[] {
    for (const waiter of this.waiting.splice(0)) waiter(null);
    return this.ready.splice(0);
  }
}
