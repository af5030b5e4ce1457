/**
 * Each caller's share of the store's read queue. On a store whose reads can wait for a
 * connection (PostgreSQL: `store.max_waiting_reads` of them at most), one caller's flood of
 * reads could fill that queue, and every other caller's reads would be refused with it. So
 * while reads wait (the store's queue is not empty), a caller — an API key; the callers
 * without a key count as one — that has `sharePerCaller` read calls in flight already
 * (`store.max_waiting_reads_per_key`) is refused at once, RESOURCE_EXHAUSTED, and the others'
 * reads still find room in the queue. While no read waits, nothing is refused: a caller may
 * have any number of reads in flight while the store keeps up. On a store whose reads never
 * wait (SQLite) nothing is counted.
 *
 * The doors call `enter` for the calls that read (gRPC's calls of the `read` permission, the
 * HTTP API's GET operations, the admin API's GET requests as their user) and the function it
 * answers when the call is over.
 */
import type { Store } from '../store/store.ts';
import { SeppError } from './errors.ts';

const nothing = () => {};

export class ReadShares {
  private readonly inFlight = new Map<string, number>();
  /** Read calls refused since the engine opened, a caller holding its share. */
  private refusedTotal = 0;

  constructor(private readonly queue: Store['readQueue']) {}

  /**
   * The store's read queue for the metrics: reads waiting now, and the reads refused since
   * the start, because the queue was full or a caller held its share; null when reads never wait.
   */
  get stats(): { waiting: number; refusedQueueFull: number; refusedKeyShare: number } | null {
    const queue = this.queue;
    if (queue === undefined) return null;
    return {
      waiting: queue.waiting,
      refusedQueueFull: queue.refusedTotal,
      refusedKeyShare: this.refusedTotal,
    };
  }

  /** Counts a read call of `caller` in; answers the function that counts it out (once). */
  enter(caller: string): () => void {
    const queue = this.queue;
    if (queue === undefined) return nothing;
    const held = this.inFlight.get(caller) ?? 0;
    if (held >= queue.sharePerCaller && queue.waiting > 0) {
      this.refusedTotal++;
      throw new SeppError(
        'resource_exhausted',
        `${caller} has ${held} read calls in flight while this server's reads wait for a connection; ` +
          `its share is ${queue.sharePerCaller} (store.max_waiting_reads_per_key); nothing was read, retry shortly`,
      );
    }
    this.inFlight.set(caller, held + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const rest = (this.inFlight.get(caller) ?? 0) - 1;
      if (rest < 0) throw new Error('bug: a read counted out that was not counted in');
      if (rest === 0) this.inFlight.delete(caller);
      else this.inFlight.set(caller, rest);
    };
  }
}
