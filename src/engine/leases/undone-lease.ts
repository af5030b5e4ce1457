/**
 * Undone leases: jobs leased for an answer that never reached a worker (a Reserve whose
 * answer was refused before it was sent: rpc/refused-answers.ts) go back as if that lease
 * had not been taken. It is not a failed attempt: the attempt is given back (the next lease
 * takes the same number again), nothing joins the job's errors, the job history counts no
 * attempt, and a job on its last attempt is not dead-lettered.
 *
 * The job is ready again at its old place in its queue (due time, priority and group as they
 * were), so flow control sees it as any ready job: the queue's leased count (max_leased) and
 * its group's leased jobs (group_max_leased) drop in the same unit, and waiting long-polls
 * are handed it. Fenced by the attempt: a job settled, expired or leased again since is left
 * alone. A job asked to stop meanwhile (a cancel request) ends cancelled, as a nack would
 * end it. What is not undone: the rate-limit token the lease took (a bucket refills in
 * time), the `reserved` count of the metrics, and the `leased` lifecycle event already
 * published (the vocabulary has no kind for an undone lease; a subscriber sees the job
 * leased again later, at the same attempt).
 */
import type { AttemptKey } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { finishCancelled } from './cancelled-lease.ts';

/** Undoes the leases of `keys` (job ids distinct) inside a write; returns how many jobs went back to ready. */
export function* undoLeasesIn(ctx: EngineContext, tx: StoreTx, keys: readonly AttemptKey[]): Op<number> {
  const undone = yield* tx.leases.undoLeases(keys);
  const perQueue = new Map<string, number>();
  for (const row of undone) perQueue.set(row.queue, (perQueue.get(row.queue) ?? 0) + 1);
  for (const [queue, jobs] of perQueue) {
    yield* ctx.count(tx, queue, 'leased', 'ready', jobs);
    ctx.jobsReady(tx, queue, jobs);
  }
  if (undone.length === keys.length) return undone.length;
  // Left alone by the store: ended or leased again since (nothing to do), or asked to stop.
  const back = new Set(undone.map((row) => row.id));
  for (const key of keys) {
    if (back.has(key.jobId)) continue;
    const row = yield* tx.jobs.attempt(key.jobId);
    if (row?.state === 'leased' && row.attempt === key.attempt && row.cancelled_at_ms !== null) {
      yield* finishCancelled(ctx, tx, row, null);
    }
  }
  return undone.length;
}
