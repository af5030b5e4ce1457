/**
 * What an operator can do to one job beyond the protocol's calls: requeue
 * it, or dead-letter it. Each is a write operation (group commit) and may
 * carry an audit entry written in the same transaction. Changes of many jobs
 * (a purge, "all matching") are bulk operations (bulk-operations.ts).
 */

import type { Op } from '../../store/op.ts';
import type { AttemptRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { eventAbout } from '../events/index.ts';
import type { JobState } from '../types.ts';

export class OperatorActions {
  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
  ) {}

  /** A dead, completed or cancelled job back to ready now, with a fresh attempt budget. */
  requeueJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.ctx.write((tx) => this.requeueOne(tx, jobId, audit));
  }

  /** requeueJob in `tx`: throws failed_precondition for a job in another state. */
  *requeueOne(tx: StoreTx, jobId: string, audit: AuditInput | undefined): Op<{ previousState: JobState }> {
    const row = yield* this.find(tx, jobId);
    if (row.state !== 'dead' && row.state !== 'completed' && row.state !== 'cancelled') {
      throw new SeppError(
        'failed_precondition',
        `job ${jobId} is ${row.state}; only dead, completed or cancelled jobs can be requeued`,
      );
    }
    const changed = yield* tx.control.requeue({ seq: row.seq, nowMs: this.ctx.clock.nowMs() });
    yield* this.ctx.count(tx, row.queue, row.state, 'ready', changed ? 1 : 0);
    this.ctx.jobsReady(tx, row.queue, 1);
    this.ctx.emit(tx, { kind: 'requeued', queue: row.queue, count: 1 });
    const outcome = { previousState: row.state };
    if (audit) yield* this.audit.write(tx, audit, outcome);
    return outcome;
  }

  /** A ready or scheduled job to the dead letters now (reason dead_lettered). */
  deadLetterJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.ctx.write((tx) => this.deadLetterOne(tx, jobId, audit));
  }

  private *deadLetterOne(
    tx: StoreTx,
    jobId: string,
    audit: AuditInput | undefined,
  ): Op<{ previousState: JobState }> {
    const row = yield* this.find(tx, jobId);
    if (row.state !== 'ready' && row.state !== 'scheduled') {
      const why =
        row.state === 'leased'
          ? 'a worker holds its lease; the worker can nack it with dead-letter, or wait for the lease to end'
          : 'only ready or scheduled jobs can be dead-lettered';
      throw new SeppError('failed_precondition', `job ${jobId} is ${row.state}: ${why}`);
    }
    yield* this.deadLetterRow(tx, row);
    const outcome = { previousState: row.state };
    if (audit) yield* this.audit.write(tx, audit, outcome);
    return outcome;
  }

  /**
   * deadLetterJob of one job among many (selected rows): a job that is gone or
   * not ready or scheduled is left as it is; answers whether it changed.
   */
  *deadLetterIfWaiting(tx: StoreTx, jobId: string): Op<boolean> {
    const row = yield* tx.jobs.attempt(jobId);
    if (row === undefined || (row.state !== 'ready' && row.state !== 'scheduled')) return false;
    return yield* this.deadLetterRow(tx, { ...row, state: row.state });
  }

  private *deadLetterRow(tx: StoreTx, row: AttemptRow & { state: JobState }): Op<boolean> {
    const nowMs = this.ctx.clock.nowMs();
    const changed = yield* tx.control.deadLetter({ seq: row.seq, nowMs });
    yield* this.ctx.count(tx, row.queue, row.state, 'dead', changed ? 1 : 0);
    if (changed && row.dependency_flags !== 0) {
      yield* this.ctx.jobEnded(tx, { id: row.id, flags: row.dependency_flags }, 'dead');
    }
    this.ctx.emit(tx, { kind: 'dead_lettered', queue: row.queue, reason: 'dead_lettered', count: 1 });
    if (changed)
      this.ctx.attemptsEnded(
        tx,
        [{ queue: row.queue, type: row.type, run_at_ms: 0, leased_at_ms: null }],
        'dead',
      );
    if (this.ctx.events.recording) {
      this.ctx.record(tx, {
        ...eventAbout(row, nowMs),
        kind: 'dead_lettered',
        reason: 'dead_lettered',
        error: null,
      });
    }
    return changed;
  }

  private *find(tx: StoreTx, jobId: string): Op<AttemptRow & { state: JobState }> {
    const row = yield* tx.jobs.attempt(jobId);
    if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
    return { ...row, state: row.state as JobState };
  }
}
