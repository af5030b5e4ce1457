/**
 * Cancel: stop a job that has not finished, one by id or every job a filter
 * matches.
 *
 * A scheduled or ready job becomes `cancelled` at once. A leased job is
 * running on a worker, so a cancel records a request (`cancelled_at_ms`,
 * `cancelled_by`) and tells the worker after the commit (the listeners: the
 * rpc layer's Work streams); the job stays `leased` until the attempt ends —
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
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import {
  type BulkCancelResult,
  type CancellableState,
  type CancelNotice,
  type CancelResult,
  cancellableStates,
  type JobFilter,
} from '../control-types.ts';
import { SeppError } from '../errors.ts';
import { eventAbout } from '../events/index.ts';
import { cancelledOutcome } from '../finished-outcomes.ts';
import type { JobState } from '../types.ts';
import { checkFilter, filterDetails, filterParams, type ValidFilter } from './job-filter.ts';
import { chunkRows, type OperatorActions } from './operator-actions.ts';

export type CancelListener = (notices: readonly CancelNotice[]) => void;

export class Canceller {
  private readonly listeners = new Set<CancelListener>();

  constructor(
    private readonly ctx: EngineContext,
    private readonly actions: OperatorActions,
    private readonly audit: AuditLog,
  ) {}

  /** Calls `listener` after each commit that asked for cancels of leased jobs; returns the unsubscribe. */
  onCancelRequested(listener: CancelListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  cancelJob(jobId: string, audit?: AuditInput): Promise<CancelResult> {
    return this.ctx.write((tx) => this.cancelOne(tx, jobId, audit));
  }

  private *cancelOne(tx: StoreTx, jobId: string, audit: AuditInput | undefined): Op<CancelResult> {
    const { clock } = this.ctx;
    const row = yield* tx.jobs.control(jobId);
    if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
    const previousState = row.state as JobState;
    const nowMs = clock.nowMs();
    const by = audit?.actor ?? null;
    let state: JobState = previousState;
    switch (previousState) {
      case 'scheduled':
      case 'ready':
        yield* tx.control.cancelWaiting({ seq: row.seq, nowMs, by });
        yield* this.ctx.count(tx, row.queue, previousState, 'cancelled', 1);
        yield* this.ctx.releaseKey(tx, row.queue, row.idempotency_key, row.id);
        this.ctx.emit(tx, { kind: 'cancelled', queue: row.queue, count: 1 });
        if (this.ctx.events.recording) {
          this.ctx.record(tx, { ...eventAbout(row, nowMs), kind: 'cancelled', previousState });
        }
        if (this.ctx.outcomes.enabled && this.ctx.queues.settingsFor(row.queue).cancelledRetentionMs === 0) {
          this.ctx.keepOutcome(tx, cancelledOutcome({ ...row, cancelled_by: by }, nowMs, null));
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
    const result = { previousState, state };
    if (audit !== undefined) yield* this.audit.write(tx, audit, { jobId, queue: row.queue, ...result });
    return result;
  }

  /**
   * Cancels every job the filter matches (default: scheduled, ready and
   * leased), in chunks of chunkRows per transaction; leased ones get cancel
   * requests. The audit entry is written with the first chunk and carries the
   * running totals.
   */
  async cancelJobs(filter: JobFilter, audit?: AuditInput): Promise<BulkCancelResult> {
    const valid = checkFilter(this.ctx, filter, cancellableStates, 'cancelled');
    const tracked = audit === undefined ? undefined : { input: audit, id: undefined };
    const by = audit?.actor ?? null;
    const totals: BulkCancelResult = { cancelled: 0, cancelRequested: 0 };
    const last = valid.states.at(-1);
    for (const state of valid.states) {
      await this.actions.inChunks(
        tracked,
        0,
        (tx) => this.chunkOf(tx, valid, state, by, totals),
        (_total, done) => ({ ...filterDetails(valid), ...totals, done: done && state === last }),
      );
    }
    return totals;
  }

  /** One chunk of a bulk cancel of `state` jobs, added to `totals`. */
  private *chunkOf(
    tx: StoreTx,
    valid: ValidFilter<CancellableState>,
    state: CancellableState,
    by: string | null,
    totals: BulkCancelResult,
  ): Op<number> {
    if (state === 'leased') {
      const n = yield* this.requestChunk(tx, valid, by);
      totals.cancelRequested += n;
      return n;
    }
    const n = yield* this.cancelChunk(tx, valid, state, by);
    totals.cancelled += n;
    return n;
  }

  /** How many jobs `cancelJobs(filter)` would change now (for a confirmation). */
  *countCancellable(view: StoreView, filter: JobFilter): Op<number> {
    const valid = checkFilter(this.ctx, filter, cancellableStates, 'cancelled');
    let total = 0;
    for (const state of valid.states) {
      if (state === 'leased') {
        total += yield* view.control.countLeasedNotCancelled(filterParams(valid));
      } else if (valid.group !== null || valid.type !== null) {
        total += yield* view.control.countMatching({ ...filterParams(valid), state });
      } else {
        total += yield* view.counts.inState({ queue: valid.queue, state });
      }
    }
    return total;
  }

  private *cancelChunk(
    tx: StoreTx,
    filter: ValidFilter<CancellableState>,
    state: 'scheduled' | 'ready',
    by: string | null,
  ): Op<number> {
    const rows = yield* tx.control.cancelWaitingMany({
      ...filterParams(filter),
      state,
      limit: chunkRows,
      nowMs: this.ctx.clock.nowMs(),
      by,
    });
    yield* this.ctx.count(tx, filter.queue, state, 'cancelled', rows.length);
    for (const row of rows) yield* this.ctx.releaseKey(tx, filter.queue, row.idempotency_key, row.id);
    this.ctx.emit(tx, { kind: 'cancelled', queue: filter.queue, count: rows.length });
    if (this.ctx.events.recording) {
      const nowMs = this.ctx.clock.nowMs();
      for (const row of rows) {
        this.ctx.record(tx, {
          ...eventAbout({ ...row, queue: filter.queue }, nowMs),
          kind: 'cancelled',
          previousState: state,
        });
      }
    }
    return rows.length;
  }

  private *requestChunk(tx: StoreTx, filter: ValidFilter<CancellableState>, by: string | null): Op<number> {
    const nowMs = this.ctx.clock.nowMs();
    const rows = yield* tx.control.requestCancelMany({
      ...filterParams(filter),
      limit: chunkRows,
      nowMs,
      by,
    });
    for (const row of rows) yield* this.ctx.releaseKey(tx, filter.queue, row.idempotency_key, row.id);
    this.notify(
      tx,
      rows.map((row) => ({
        jobId: row.id,
        queue: filter.queue,
        attempt: row.attempt,
        workerId: row.worker_id,
        cancelledBy: by,
        cancelledAtMs: nowMs,
      })),
    );
    return rows.length;
  }

  private notify(tx: StoreTx, notices: readonly CancelNotice[]): void {
    if (notices.length === 0 || this.listeners.size === 0) return;
    tx.afterCommit(() => {
      for (const listener of this.listeners) listener(notices);
    });
  }
}
