/**
 * Long-poll waiters. A reserve that finds nothing registers a waiter on its
 * queues inside the same write batch, so a job committed by any later batch
 * wakes it: nothing can slip between "found nothing" and "started waiting".
 * Waking is first-come first-served and wakes only as many waiters as the
 * new jobs can serve.
 */
export type WaitOutcome = 'woken' | 'timeout' | 'aborted' | 'closed';

export interface Waiter {
  readonly queues: readonly string[];
  readonly maxJobs: number;
  /** Queues that had ready jobs a limit held back when this waiter registered (flow control). */
  readonly throttled?: readonly string[];
  /** Settles the waiter; called at most once by the registry's owner. */
  settle(outcome: WaitOutcome): void;
}

export class WaiterRegistry {
  private readonly byQueue = new Map<string, Set<Waiter>>();
  private readonly throttledByQueue = new Map<string, number>();
  private total = 0;

  get size(): number {
    return this.total;
  }

  waitingOn(queue: string): number {
    return this.byQueue.get(queue)?.size ?? 0;
  }

  /** Waiters on `queue` that a limit held back from its ready jobs. */
  throttledOn(queue: string): number {
    return this.throttledByQueue.size === 0 ? 0 : (this.throttledByQueue.get(queue) ?? 0);
  }

  add(waiter: Waiter): void {
    for (const queue of waiter.queues) {
      let set = this.byQueue.get(queue);
      if (set === undefined) {
        set = new Set();
        this.byQueue.set(queue, set);
      }
      set.add(waiter);
    }
    for (const queue of waiter.throttled ?? []) {
      this.throttledByQueue.set(queue, (this.throttledByQueue.get(queue) ?? 0) + 1);
    }
    this.total++;
  }

  /** Removes the waiter; returns false when it was already gone. */
  remove(waiter: Waiter): boolean {
    let found = false;
    for (const queue of waiter.queues) {
      const set = this.byQueue.get(queue);
      if (set?.delete(waiter)) found = true;
      if (set !== undefined && set.size === 0) this.byQueue.delete(queue);
    }
    if (!found) return false;
    this.total--;
    for (const queue of waiter.throttled ?? []) {
      const left = (this.throttledByQueue.get(queue) ?? 1) - 1;
      if (left > 0) this.throttledByQueue.set(queue, left);
      else this.throttledByQueue.delete(queue);
    }
    return true;
  }

  /** Wakes waiters on `queue`, oldest first, until they can take `jobs` jobs between them. */
  notify(queue: string, jobs: number): void {
    const set = this.byQueue.get(queue);
    if (set === undefined) return;
    let remaining = jobs;
    for (const waiter of [...set]) {
      if (remaining <= 0) break;
      this.remove(waiter);
      remaining -= waiter.maxJobs;
      waiter.settle('woken');
    }
  }

  /** Settles every waiter (shutdown). */
  settleAll(outcome: WaitOutcome): void {
    const all = new Set<Waiter>();
    for (const set of this.byQueue.values()) for (const waiter of set) all.add(waiter);
    for (const waiter of all) {
      this.remove(waiter);
      waiter.settle(outcome);
    }
  }
}
