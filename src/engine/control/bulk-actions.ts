/**
 * What one slice of a bulk operation writes, by action (bulk-operations.ts drives the
 * operation: its slices, progress, stop and audit). Each action changes the slice's
 * matching jobs as a change by id would: counts, keys released, events, the cancel
 * notices of leased jobs, and what waits on a workflow job that ended.
 */
import type { BulkEndedRow, BulkResidual } from '../../store/job-control.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import type { BulkAction, CancelNotice, JobChanges } from '../control-types.ts';
import { eventAbout } from '../events/index.ts';
import type { JobState } from '../types.ts';
import type { ScanStep } from './bulk-scan.ts';

/** What a slice needs of its operation. */
export interface SliceAction {
  action: BulkAction;
  /** Who started it (a cancel records it as `cancelled_by`), or null. */
  actor: string | null;
  /** For `update`: `runNow` and/or `priority`. */
  changes: JobChanges;
  /** The filter's conditions the index range does not answer. */
  residual: BulkResidual;
}

/** What a slice changed. */
export interface SliceDone {
  changed: number;
  /** Leased jobs a cancel asked to stop (counted in `changed` too). */
  cancelRequested: number;
}

export class BulkActions {
  constructor(
    private readonly ctx: EngineContext,
    /** Tells the workers of leased jobs a cancel asked to stop (the Canceller's listeners), after the commit. */
    private readonly notify: (tx: StoreTx, notices: readonly CancelNotice[]) => void,
  ) {}

  /**
   * Changes the step's matching jobs as the operation's action says; answers how many changed,
   * and of those how many were leased jobs asked to stop (a cancel's `cancelRequested`).
   */
  *apply(tx: StoreTx, operation: SliceAction, step: ScanStep): Op<SliceDone> {
    const { queue, state, seqs } = step;
    const slice = { ...operation.residual, seqs, state };
    const nowMs = this.ctx.clock.nowMs();
    const changed = (n: number): SliceDone => ({ changed: n, cancelRequested: 0 });
    switch (operation.action) {
      case 'cancel': {
        const by = operation.actor;
        if (state === 'leased') {
          const rows = yield* tx.bulk.requestCancel({ ...slice, nowMs, by });
          for (const row of rows) yield* this.ctx.releaseKey(tx, queue, row.idempotency_key, row.id);
          this.notify(
            tx,
            rows.map((row) => ({
              jobId: row.id,
              queue,
              attempt: row.attempt,
              workerId: row.worker_id,
              cancelledBy: by,
              cancelledAtMs: nowMs,
            })),
          );
          return { changed: rows.length, cancelRequested: rows.length };
        }
        const rows = yield* tx.bulk.cancelWaiting({ ...slice, nowMs, by });
        yield* this.ctx.count(tx, queue, state, 'cancelled', rows.length);
        for (const row of rows) yield* this.ctx.releaseKey(tx, queue, row.idempotency_key, row.id);
        this.ctx.emit(tx, { kind: 'cancelled', queue, count: rows.length });
        this.recordEnded(tx, queue, state, rows);
        yield* this.passEndsOn(tx, rows, { state, ended: true, deleted: false });
        return changed(rows.length);
      }
      case 'update': {
        const { priority, runNow } = operation.changes;
        if (runNow === true && state === 'scheduled') {
          const n = yield* tx.bulk.runNow({ ...slice, nowMs, priority: priority ?? null });
          yield* this.ctx.count(tx, queue, 'scheduled', 'ready', n);
          this.ctx.jobsReady(tx, queue, n);
          return changed(n);
        }
        return changed(priority === undefined ? 0 : yield* tx.bulk.setPriority({ ...slice, priority }));
      }
      case 'requeue': {
        const n = yield* tx.bulk.requeue({ ...slice, nowMs });
        yield* this.ctx.count(tx, queue, state, 'ready', n);
        this.ctx.jobsReady(tx, queue, n);
        this.ctx.emit(tx, { kind: 'requeued', queue, count: n });
        return changed(n);
      }
      case 'delete': {
        const rows = yield* tx.bulk.delete(slice);
        // A deleted waiting job or dead letter frees its key; a completed job keeps it for the dedup window.
        if (state !== 'completed') {
          for (const row of rows) yield* this.ctx.releaseKey(tx, queue, row.idempotency_key, row.id);
        }
        yield* this.ctx.count(tx, queue, state, null, rows.length);
        const unended = state === 'scheduled' || state === 'ready';
        if (unended) {
          this.ctx.emit(tx, { kind: 'purged', queue, count: rows.length });
          this.recordEnded(tx, queue, state, rows);
        }
        yield* this.passEndsOn(tx, rows, { state, ended: unended, deleted: true });
        return changed(rows.length);
      }
    }
  }

  /**
   * Jobs in workflows that a bulk cancel or delete ended (`ended`) pass their end on, as a cancel
   * by id does: what waits on them goes on by its policy, their batch counts them cancelled. A
   * deleted job takes its edges and its count of dependents with it (`deleted`), as the retention
   * sweep does, and what still waits on it is cancelled (EngineContext.jobDeleted). `state`: the rows'.
   */
  private *passEndsOn(
    tx: StoreTx,
    rows: readonly BulkEndedRow[],
    how: { state: JobState; ended: boolean; deleted: boolean },
  ): Op<void> {
    for (const row of rows) {
      const flags = row.dependency_flags ?? 0;
      if (flags === 0) continue;
      if (how.ended) yield* this.ctx.jobEnded(tx, { id: row.id, flags }, 'cancelled');
      if (how.deleted && row.seq !== undefined)
        yield* this.ctx.jobDeleted(tx, { seq: row.seq, id: row.id, flags, state: how.state });
    }
  }

  /** Lifecycle events for waiting jobs that ended (cancelled or deleted), while someone subscribes. */
  private recordEnded(
    tx: StoreTx,
    queue: string,
    previousState: JobState,
    rows: readonly { id: string; type: string; attempt: number }[],
  ): void {
    if (!this.ctx.events.recording) return;
    const nowMs = this.ctx.clock.nowMs();
    for (const row of rows) {
      this.ctx.record(tx, { ...eventAbout({ ...row, queue }, nowMs), kind: 'cancelled', previousState });
    }
  }
}
