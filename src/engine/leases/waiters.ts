/**
 * Long-poll waiters. A reserve that finds nothing registers a waiter on its
 * queues inside the same write batch, so a job committed by any later batch
 * wakes it: nothing can slip between "found nothing" and "started waiting".
 * Waking is first-come first-served and wakes only as many waiters as the
 * new jobs can serve. The waiters new jobs can serve lease them in the same
 * commit that made them ready (`handOff`), so a long-poll costs no commit of
 * its own.
 */
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { LeasedJob } from '../types.ts';

/** How a wait ended; `{ jobs }`: jobs were leased for the waiter by a hand-off, and are durable. */
export type WaitOutcome = 'woken' | 'timeout' | 'aborted' | 'closed' | { jobs: LeasedJob[] };

export interface Waiter {
  readonly queues: readonly string[];
  readonly maxJobs: number;
  /** Queues that had ready jobs a limit held back when this waiter registered (flow control). */
  readonly throttled?: readonly string[];
  /** Leases what this waiter's reserve would, within its queues' limits, inside a write unit (a hand-off). */
  take(tx: StoreTx): Op<LeasedJob[]>;
  /** Settles the waiter; called at most once by the registry's owner. */
  settle(outcome: WaitOutcome): void;
}

/** New ready jobs of one unit and queue, handed to the waiters its follow-up claims. */
interface HandOff {
  readonly queue: string;
  /** Counted as the unit adds them. */
  jobs: number;
  claimed: Waiter[];
}

export class WaiterRegistry {
  private readonly byQueue = new Map<string, Set<Waiter>>();
  private readonly throttledByQueue = new Map<string, number>();
  /** Hand-offs queued by an operation and not yet run: its jobs per queue, counted as they come. */
  private readonly pendingHandOffs = new WeakMap<StoreTx, Map<string, HandOff>>();
  private total = 0;

  get size(): number {
    return this.total;
  }

  /** The queues someone waits on now. */
  waitedQueues(): string[] {
    return [...this.byQueue.keys()];
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
    for (const waiter of this.claim(queue, jobs)) waiter.settle('woken');
  }

  /** Removes and returns waiters on `queue`, oldest first, until they can take `jobs` jobs between them. */
  claim(queue: string, jobs: number): Waiter[] {
    const set = this.byQueue.get(queue);
    if (set === undefined) return [];
    const claimed: Waiter[] = [];
    let remaining = jobs;
    // Deleting the entry being visited is safe in a Set's iteration: no copy of a long wait list per job.
    for (const waiter of set) {
      if (remaining <= 0) break;
      this.remove(waiter);
      remaining -= waiter.maxJobs;
      claimed.push(waiter);
    }
    return claimed;
  }

  /**
   * `jobs` jobs of `queue` became ready in the operation `tx`: the waiters they can serve
   * lease them in a follow-up of that operation, in the same commit (one fsync where a
   * wake-up and a retried reserve took two), and get them once that commit is durable.
   * One follow-up per operation and queue, however many jobs it adds. A waiter the
   * follow-up leased nothing for (its queue is paused, or created in this batch; its call
   * was aborted; earlier waiters took the jobs) is woken to try again, as is every claimed
   * waiter when the follow-up or the batch fails.
   */
  handOff(tx: StoreTx, queue: string, jobs: number): void {
    if (jobs <= 0) return;
    if (this.waitingOn(queue) === 0) {
      // A reserve later in this batch may still wait (on a queue this batch creates, say):
      // wake whoever waits once the commit is durable.
      tx.afterCommit(() => this.notify(queue, jobs));
      return;
    }
    let perQueue = this.pendingHandOffs.get(tx);
    const queued = perQueue?.get(queue);
    if (queued !== undefined) {
      queued.jobs += jobs;
      return;
    }
    if (perQueue === undefined) {
      perQueue = new Map();
      this.pendingHandOffs.set(tx, perQueue);
    }
    const handOff: HandOff = { queue, jobs, claimed: [] };
    perQueue.set(queue, handOff);
    const pending = perQueue;
    tx.followUp((inner) => this.take(inner, pending, handOff)).then(
      (taken) =>
        handOff.claimed.forEach((waiter, i) => {
          const leased = taken[i] ?? [];
          waiter.settle(leased.length > 0 ? { jobs: leased } : 'woken');
        }),
      () => {
        for (const waiter of handOff.claimed) waiter.settle('woken');
      },
    );
  }

  /** The follow-up of a hand-off: claims the waiters its jobs can serve and leases for each, in order. */
  private *take(tx: StoreTx, pending: Map<string, HandOff>, handOff: HandOff): Op<LeasedJob[][]> {
    pending.delete(handOff.queue);
    handOff.claimed = this.claim(handOff.queue, handOff.jobs);
    const taken: LeasedJob[][] = [];
    for (const waiter of handOff.claimed) taken.push(yield* waiter.take(tx));
    return taken;
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
