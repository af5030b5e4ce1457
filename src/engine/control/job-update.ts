/**
 * Changing a waiting job: its priority, its group and when it runs — "run
 * now" makes a scheduled (or retrying) job ready at once. Only jobs that wait
 * (scheduled or ready) change; a leased job is running on a worker and is
 * refused with failed_precondition. In bulk (every waiting job a filter
 * matches: a bulk operation, bulk-operations.ts), priority and run-now only.
 *
 * A new group needs nothing more from flow control: its turns and per-group
 * counts are read from the jobs table inside each lease (jobs_group_ready,
 * jobs_group_leased), so the job is served under its new group from the
 * change's commit on. Only the queue's "has groups" mark is set, in the same
 * transaction, when the job brings the queue its first group.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import type { JobChanges } from '../control-types.ts';
import { SeppError } from '../errors.ts';
import type { FlowControl } from '../flow-control/index.ts';
import { jobInfoFromRow } from '../jobs/index.ts';
import type { EngineLimits } from '../settings.ts';
import type { JobInfo, JobState } from '../types.ts';

export class JobUpdater {
  constructor(
    private readonly ctx: EngineContext,
    private readonly flow: FlowControl,
    private readonly audit: AuditLog,
  ) {}

  /** Changes one waiting job; returns it as it is now. */
  async updateJob(jobId: string, changes: JobChanges, audit?: AuditInput): Promise<JobInfo> {
    checkChanges(changes, false, this.ctx.limits);
    return this.ctx.write((tx) => this.updateOne(tx, jobId, changes, audit));
  }

  private *updateOne(
    tx: StoreTx,
    jobId: string,
    changes: JobChanges,
    audit: AuditInput | undefined,
  ): Op<JobInfo> {
    const { clock, limits } = this.ctx;
    const row = yield* tx.jobs.control(jobId);
    if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
    const from = row.state as JobState;
    if (from === 'leased') {
      throw new SeppError(
        'failed_precondition',
        `job ${jobId} is leased${row.worker_id === null ? '' : ` by worker ${row.worker_id}`}: a running job cannot be changed; wait until it is settled or its lease ends, or cancel it`,
      );
    }
    if (from !== 'scheduled' && from !== 'ready') {
      throw new SeppError(
        'failed_precondition',
        `job ${jobId} is ${from}; only scheduled or ready jobs can be changed`,
      );
    }
    const nowMs = clock.nowMs();
    const priority = changes.priority ?? row.priority;
    const group = changes.group === undefined ? row.group_key : changes.group;
    let runAtMs = row.run_at_ms;
    if (changes.runNow === true) runAtMs = nowMs;
    else if (changes.runAtMs !== undefined) runAtMs = Math.max(nowMs, changes.runAtMs);
    else if (changes.delayMs !== undefined) runAtMs = nowMs + changes.delayMs;
    if (runAtMs - nowMs > limits.maxScheduleAheadMs) {
      throw new SeppError(
        'invalid_argument',
        `run_at_ms is ${Math.ceil((runAtMs - nowMs) / 86_400_000)} days ahead, the limit is ${Math.round(limits.maxScheduleAheadMs / 86_400_000)} days (limits.max_schedule_ahead_ms)`,
      );
    }
    const rescheduled =
      changes.runNow === true || changes.runAtMs !== undefined || changes.delayMs !== undefined;
    if (rescheduled && row.expires_at_ms !== null && runAtMs >= row.expires_at_ms) {
      throw new SeppError(
        'invalid_argument',
        `run_at_ms is not before the job's expiry (${new Date(row.expires_at_ms).toISOString()}): it could never run`,
      );
    }
    // A change of priority alone leaves the state as it is.
    const state = !rescheduled ? from : runAtMs > nowMs ? 'scheduled' : 'ready';
    yield* tx.control.updateWaiting({ seq: row.seq, state, priority, runAtMs, groupKey: group });
    if (group !== null) yield* this.flow.groupedJobAdded(tx, row.queue);
    if (state !== from) yield* this.ctx.count(tx, row.queue, from, state, 1);
    // A ready job in a new group may be leased where its old group's limit held it back: wake a reserve.
    const regrouped = group !== row.group_key;
    if (state === 'ready' && (from === 'scheduled' || regrouped)) this.ctx.jobsReady(tx, row.queue, 1);
    if (state === 'scheduled') this.ctx.wakeAt(tx, runAtMs);
    if (audit !== undefined) {
      const groups = changes.group === undefined ? {} : { previousGroup: row.group_key };
      yield* this.audit.write(tx, audit, {
        jobId,
        queue: row.queue,
        ...changes,
        ...groups,
        previousState: from,
        state,
      });
    }
    return jobInfoFromRow((yield* tx.jobs.get(jobId))!);
  }
}

/** Refuses changes that are malformed or (`bulk`) that change one job at a time only. */
export function checkChanges(changes: JobChanges, bulk: boolean, limits: EngineLimits): void {
  const { priority, runAtMs, delayMs, runNow, group } = changes;
  const schedules = [runAtMs !== undefined, delayMs !== undefined, runNow === true].filter(Boolean).length;
  if (priority === undefined && schedules === 0 && group === undefined) {
    throw new SeppError(
      'invalid_argument',
      bulk
        ? 'changes: give a priority or run_now'
        : 'changes: give a priority, a run time (run_at_ms, delay_ms), run_now or a group',
    );
  }
  if (group !== undefined && bulk) {
    throw new SeppError('invalid_argument', 'group changes one job at a time (UpdateJob)');
  }
  if (group !== undefined && group !== null) {
    const problem = checkName('group', group, limits);
    if (problem) throw new SeppError('invalid_argument', problem.message);
  }
  if (schedules > 1) throw new SeppError('invalid_argument', 'give one of run_at_ms, delay_ms and run_now');
  if (priority !== undefined && (!Number.isInteger(priority) || priority < 0 || priority > 9)) {
    throw new SeppError(
      'invalid_argument',
      `priority is ${priority}; it must be an integer from 0 to 9 (9 runs first)`,
    );
  }
  if (bulk && (runAtMs !== undefined || delayMs !== undefined)) {
    throw new SeppError(
      'invalid_argument',
      'run_at_ms and delay_ms change one job at a time (UpdateJob); in bulk give run_now or a priority',
    );
  }
  if (runAtMs !== undefined && !Number.isSafeInteger(runAtMs)) {
    throw new SeppError('invalid_argument', 'run_at_ms must be an integer (ms since epoch)');
  }
  if (delayMs !== undefined && (!Number.isSafeInteger(delayMs) || delayMs < 0)) {
    throw new SeppError('invalid_argument', `delay_ms is ${delayMs}; it must be a non-negative integer`);
  }
}
