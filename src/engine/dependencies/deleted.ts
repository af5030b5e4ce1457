/**
 * A job deleted before the retention sweep would have taken it (a bulk delete, a dead letter
 * deleted, an expiry with `expired_action = delete`, the ack of a job in a workflow on a queue
 * that keeps no completed jobs): what it holds in the dependency tables goes with it, in the
 * unit that deletes it. The retention sweep's own statements do the same for the jobs they delete.
 */
import { dependedOn, waitsOnOthers } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';

/**
 * Forgets the edges of a deleted job that waited on others, and the count of dependents
 * (limits.max_dependents_per_job) of one others waited on. `flags` are its dependency_flags,
 * read before it was deleted: a job outside workflows (0) reaches no statement.
 */
export function* forgetDeletedJob(tx: StoreTx, job: { seq: number; id: string; flags: number }): Op<void> {
  const deps = tx.dependencies;
  if (job.flags === 0 || deps === undefined) return;
  if (waitsOnOthers(job.flags)) yield* deps.forget(job.seq);
  if (dependedOn(job.flags)) yield* deps.forgetDependents(job.id);
}
