/**
 * Single-job enqueues that arrive in the same turn of the event loop are
 * handed to the engine as one best-effort batch — what the SDK does on the
 * client for gRPC (it coalesces the `enqueue()` calls of one turn into one
 * Produce message), done here on the server because HTTP clients each send
 * their own request.
 *
 * Why: one engine operation per job costs a savepoint, a promise and a
 * result of its own; measured with the engine alone (50 callers, durability
 * full, under load), single enqueues took 100 µs of CPU per job against 40 µs
 * in batches of 50. What each caller gets is unchanged: `enqueue` is a
 * one-job `enqueueBatch` in the engine too, so a batch of them answers each
 * job exactly as its own call would (its id, deduplicated or not, or its
 * rejection thrown as SeppError.rejected); a failure of the whole operation
 * (storage unavailable, the disk full) fails every job of that turn, as it
 * fails every operation of that commit anyway.
 *
 * A turn ends when Node has handled every request its poll phase read:
 * `setImmediate` runs then, so no request waits for a later one.
 */
import { SeppError, toSeppError } from '../engine/errors.ts';
import type { EnqueueAccepted, EnqueueRequest, EnqueueResult } from '../engine/types.ts';

interface Pending {
  request: EnqueueRequest;
  resolve(accepted: EnqueueAccepted): void;
  reject(error: SeppError): void;
}

export class EnqueueCoalescer {
  private pending: Pending[] = [];
  private scheduled = false;

  constructor(
    private readonly enqueueBatch: (requests: readonly EnqueueRequest[]) => Promise<EnqueueResult[]>,
    /** At most this many jobs per batch (limits.max_batch_jobs). */
    private readonly maxBatchJobs: () => number,
  ) {}

  /** Enqueues one job with the others of this turn; resolves or rejects as the engine's `enqueue` would. */
  enqueue(request: EnqueueRequest): Promise<EnqueueAccepted> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const all = this.pending;
    this.pending = [];
    const size = Math.max(1, this.maxBatchJobs());
    for (let start = 0; start < all.length; start += size) this.send(all.slice(start, start + size));
  }

  private send(batch: Pending[]): void {
    let answered: Promise<EnqueueResult[]>;
    try {
      answered = this.enqueueBatch(batch.map((p) => p.request));
    } catch (error) {
      answered = Promise.reject(error);
    }
    answered.then(
      (results) => {
        batch.forEach((pending, i) => {
          const result = results[i];
          if (result === undefined) pending.reject(new SeppError('internal', 'enqueue returned no result'));
          else if (result.ok) pending.resolve(result);
          else pending.reject(SeppError.rejected(result));
        });
      },
      (error: unknown) => {
        const e = toSeppError(error);
        for (const pending of batch) pending.reject(e);
      },
    );
  }
}
