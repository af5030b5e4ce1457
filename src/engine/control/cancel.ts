/**
 * Cancel: stop a job that has not finished, one by id (every job a filter
 * matches is a bulk operation, bulk-operations.ts, with the same rules).
 *
 * A scheduled or ready job becomes `cancelled` at once. A leased job is
 * running on a worker, so a cancel records a request (`cancelled_at_ms`,
 * `cancelled_by`) and tells the worker after the commit (the listeners: the
 * rpc layer's Work streams, and push deliveries; on a store several servers
 * share, the other servers' too, through its signals); the job stays `leased` until the attempt ends —
 * the worker's nack or ack, or the lease running out — and that end makes it
 * `cancelled`, never a retry (finishCancelled, called by settle.ts and
 * maintenance.ts). The request is durable before anyone is told, so a crash
 * in between still ends the job cancelled.
 *
 * Cancelled jobs are kept for the queue's cancelled_retention_ms with who and
 * when, and release their idempotency key at once (idempotency.ts). Dead and
 * completed jobs have finished: there is nothing to cancel.
 */

import type { Op } from '../../store/op.ts';
import type { ControlRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import type { CancelNotice, CancelResult } from '../control-types.ts';
import { SeppError } from '../errors.ts';
import { eventAbout } from '../events/index.ts';
import { cancelledOutcome } from '../finished-outcomes.ts';
import type { JobState } from '../types.ts';

export type CancelListener = (notices: readonly CancelNotice[]) => void;

export class Canceller {
  private readonly listeners = new Set<CancelListener>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
    /** Tells the other servers sharing the store (their workers may hold the jobs). */
    private readonly remote?: (notices: readonly CancelNotice[]) => void,
  ) {}

  /** Calls `listener` after each commit that asked for cancels of leased jobs; returns the unsubscribe. */
  onCancelRequested(listener: CancelListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  cancelJob(jobId: string, audit?: AuditInput): Promise<CancelResult> {
    return this.ctx.write((tx) => this.cancelOne(tx, jobId, audit));
  }

  /**
   * Cancels each of `jobIds` that has not ended, in `tx` (a flow or a batch as one act):
   * waiting, scheduled and ready jobs at once, leased ones by a request to their worker.
   * Jobs that ended, are gone, or were asked to stop already are left as they are.
   */
  *cancelEach(
    tx: StoreTx,
    jobIds: readonly string[],
    by: string | null,
  ): Op<{ cancelled: number; cancelRequested: number }> {
    let cancelled = 0;
    let cancelRequested = 0;
    for (const jobId of jobIds) {
      const row = yield* tx.jobs.control(jobId);
      if (row === undefined) continue;
      if (row.state === 'leased' && row.cancelled_at_ms !== null) continue;
      if (row.state === 'leased') cancelRequested++;
      else if (row.state === 'scheduled' || row.state === 'ready' || row.state === 'waiting') cancelled++;
      else continue;
      yield* this.cancelRow(tx, row, by);
    }
    return { cancelled, cancelRequested };
  }

  private *cancelOne(tx: StoreTx, jobId: string, audit: AuditInput | undefined): Op<CancelResult> {
    const row = yield* tx.jobs.control(jobId);
    if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
    const previousState = row.state as JobState;
    const state = yield* this.cancelRow(tx, row, audit?.actor ?? null);
    const result = { previousState, state };
    if (audit !== undefined) yield* this.audit.write(tx, audit, { jobId, queue: row.queue, ...result });
    return result;
  }

  /** Cancels the job of `row` by its state; returns its state after (a leased job stays leased). */
  private *cancelRow(tx: StoreTx, row: ControlRow, by: string | null): Op<JobState> {
    const jobId = row.id;
    const previousState = row.state as JobState;
    const nowMs = this.ctx.clock.nowMs();
    let state: JobState = previousState;
    switch (previousState) {
      case 'scheduled':
      case 'ready':
      case 'waiting':
        yield* tx.control.cancelWaiting({ seq: row.seq, nowMs, by });
        // Edges it kept pending on failed jobs (the `wait` policy) say they failed; those on jobs
        // that have not ended say so when they end (releaseDependents).
        if (previousState === 'waiting' && tx.dependencies !== undefined)
          yield* tx.dependencies.failFromFailed(row.seq);
        yield* this.ctx.count(tx, row.queue, previousState, 'cancelled', 1);
        yield* this.ctx.releaseKey(tx, row.queue, row.idempotency_key, row.id);
        this.ctx.emit(tx, { kind: 'cancelled', queue: row.queue, count: 1 });
        if (this.ctx.events.recording) {
          this.ctx.record(tx, { ...eventAbout(row, nowMs), kind: 'cancelled', previousState });
        }
        if (this.ctx.outcomes.enabled && this.ctx.queues.settingsFor(row.queue).cancelledRetentionMs === 0) {
          this.ctx.keepOutcome(tx, cancelledOutcome({ ...row, cancelled_by: by }, nowMs, null));
        }
        if (row.dependency_flags !== 0) {
          yield* this.ctx.jobEnded(tx, { id: row.id, flags: row.dependency_flags }, 'cancelled');
        }
        state = 'cancelled';
        break;
      case 'leased': {
        // A repeated cancel tells the worker again (it may have missed the first notice) but keeps who and when.
        if (row.cancelled_at_ms === null) {
          yield* tx.control.requestCancel({ seq: row.seq, nowMs, by });
          yield* this.ctx.releaseKey(tx, row.queue, row.idempotency_key, row.id);
        }
        this.notify(tx, [
          {
            jobId: row.id,
            queue: row.queue,
            attempt: row.attempt,
            workerId: row.worker_id,
            cancelledBy: row.cancelled_at_ms === null ? by : row.cancelled_by,
            cancelledAtMs: row.cancelled_at_ms ?? nowMs,
          },
        ]);
        break;
      }
      case 'cancelled':
        break;
      case 'dead':
        throw new SeppError(
          'failed_precondition',
          `job ${jobId} is a dead letter, it is not running or waiting: delete it (DeleteDeadLetters, sepp dlq delete) or requeue it`,
        );
      case 'completed':
        throw new SeppError(
          'failed_precondition',
          `job ${jobId} already completed${row.completed_at_ms === null ? '' : ` at ${new Date(row.completed_at_ms).toISOString()}`}; there is nothing to cancel`,
        );
    }
    return state;
  }

  /** Tells the listeners (the workers holding the jobs) after the commit of `tx`. */
  notify(tx: StoreTx, notices: readonly CancelNotice[]): void {
    if (notices.length === 0 || (this.listeners.size === 0 && this.remote === undefined)) return;
    tx.afterCommit(() => {
      this.deliver(notices);
      this.remote?.(notices);
    });
  }

  /** Tells this server's listeners of cancels committed (here, or by another server sharing the store). */
  deliver(notices: readonly CancelNotice[]): void {
    for (const listener of this.listeners) listener(notices);
  }
}
