/**
 * Actions on jobs chosen by id across queues (the admin UI's selected rows):
 * requeue, cancel, dead-letter or delete each one the action applies to, in one write and
 * with one audit entry that counts them. A job in another state, or gone, is
 * left as it is and counted as skipped; the list is bounded by maxBatchJobs.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import { checkIdsPerCall } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import type { JobState } from '../types.ts';
import type { Canceller } from './cancel.ts';
import type { DeadLetters } from './dead-letters.ts';
import type { OperatorActions } from './operator-actions.ts';

export type SelectedJobsAction = 'requeue' | 'cancel' | 'dead-letter' | 'delete';

/** What a change of selected jobs did: `changed` + `skipped` is how many ids were given. */
export interface SelectedJobsResult {
  changed: number;
  skipped: number;
}

const requeueable: readonly JobState[] = ['dead', 'completed', 'cancelled'];

export class SelectedJobs {
  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
    private readonly actions: OperatorActions,
    private readonly canceller: Canceller,
    private readonly deadLetters: DeadLetters,
  ) {}

  change(
    action: SelectedJobsAction,
    jobIds: readonly string[],
    audit: AuditInput | undefined,
  ): Promise<SelectedJobsResult> {
    if (jobIds.length === 0) throw new SeppError('invalid_argument', 'job_ids: name at least one job');
    checkIdsPerCall('job_ids', jobIds.length, this.ctx.limits.maxBatchJobs);
    const ids = [...new Set(jobIds)];
    return this.ctx.write((tx) => this.changeIn(tx, action, ids, audit));
  }

  private *changeIn(
    tx: StoreTx,
    action: SelectedJobsAction,
    jobIds: readonly string[],
    audit: AuditInput | undefined,
  ): Op<SelectedJobsResult> {
    let changed = 0;
    if (action === 'cancel') {
      const done = yield* this.canceller.cancelEach(tx, jobIds, audit?.actor ?? null);
      changed = done.cancelled + done.cancelRequested;
    } else if (action === 'requeue') {
      for (const id of jobIds) {
        const row = yield* tx.jobs.attempt(id);
        if (row === undefined || !requeueable.includes(row.state as JobState)) continue;
        yield* this.actions.requeueOne(tx, id, undefined);
        changed++;
      }
    } else if (action === 'dead-letter') {
      for (const id of jobIds) {
        if (yield* this.actions.deadLetterIfWaiting(tx, id)) changed++;
      }
    } else {
      // Only dead letters are deleted here (deleting any job a filter matches is a bulk operation).
      const byQueue = new Map<string, string[]>();
      for (const id of jobIds) {
        const row = yield* tx.jobs.attempt(id);
        if (row === undefined || row.state !== 'dead') continue;
        byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), id]);
      }
      for (const [queue, ids] of byQueue) {
        changed += yield* this.deadLetters.changeSome(tx, queue, ids, 'delete', undefined);
      }
    }
    const result = { changed, skipped: jobIds.length - changed };
    if (audit !== undefined)
      yield* this.audit.write(tx, audit, { selected: jobIds.length, ...result, jobIds });
    return result;
  }
}
