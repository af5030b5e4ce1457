/**
 * What an idempotency key means (docs/protocol.md, "Producing"; docs/cli.md,
 * "Job control").
 *
 * By default a key is a duplicate for the queue's dedup window after its job
 * was enqueued — and, beyond the window, for as long as that job is still
 * unfinished (waiting on dependencies, scheduled, ready or leased), so a job
 * scheduled far ahead, waiting or retrying for days is never enqueued twice. A completed job keeps its key
 * for the window: a repeat gets the completed job's id. A cancelled job and a
 * deleted dead letter release their key at once (ctx.releaseKey), so the
 * same work can be enqueued again; a dead letter that is kept keeps it.
 *
 * With `uniqueWhileActive` the window plays no part: the key is a duplicate
 * exactly while a job holding it is unfinished, and free once it completed,
 * died or was cancelled.
 *
 * Both answer with the original job's id. A keyed enqueue costs one or two
 * primary-key or index probes; an enqueue without a key costs nothing here.
 */
import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import type { ValidJob } from './enqueue-validation.ts';

export class IdempotencyKeys {
  /** The id of the job that makes `job` (which has a key) a duplicate, or null when it is new. */
  *duplicateOf(tx: StoreView, job: ValidJob, nowMs: number): Op<string | null> {
    const key = job.idempotencyKey;
    if (key === null) return null;
    if (!job.uniqueWhileActive) {
      // A queue with no dedup window remembers no keys at all.
      if (job.settings.dedupWindowMs <= 0) return null;
      const seen = yield* tx.keys.remembered({ queue: job.queue, key });
      if (seen !== undefined && seen.expires_at_ms > nowMs) return seen.job_id;
    }
    return (yield* tx.keys.activeJob({ queue: job.queue, key })) ?? null;
  }

  /** Whether a second job with the same key in one batch is a duplicate of the first. */
  static dedupsWithinBatch(job: ValidJob): boolean {
    return job.idempotencyKey !== null && (job.uniqueWhileActive || job.settings.dedupWindowMs > 0);
  }

  /** Whether a new job's key is remembered for the queue's window (keys unique while active need no record). */
  static remembers(job: ValidJob): boolean {
    return job.idempotencyKey !== null && !job.uniqueWhileActive && job.settings.dedupWindowMs > 0;
  }
}
