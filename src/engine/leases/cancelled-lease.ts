/**
 * The end of a cancelled job's lease. A cancel of a leased job (control/cancel.ts)
 * records a request; the attempt ends when its worker answers (ack or nack) or
 * its lease runs out (maintenance), and that end makes the job `cancelled`,
 * never a retry. Kept with the leases: it is how a settlement ends.
 */
import type { Op } from '../../store/op.ts';
import type { AttemptRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { eventAbout } from '../events/index.ts';
import { cancelledOutcome } from '../finished-outcomes.ts';
import { appendError, errorEntry } from '../jobs/index.ts';
import type { ErrorDetail } from '../types.ts';

/**
 * Ends the attempt of a leased job that has a cancel request: the job becomes
 * `cancelled` (never a retry). `error` (a nack's message, or why the lease
 * ended) joins the job's error history when given. Inside a write.
 */
export function* finishCancelled(
  ctx: EngineContext,
  tx: StoreTx,
  row: AttemptRow,
  error: string | null,
  detail: ErrorDetail | null = null,
): Op<void> {
  const errorsJson =
    error === null
      ? null
      : appendError(
          row.errors_json,
          errorEntry(row.attempt, ctx.clock.nowMs(), error, detail),
          ctx.limits.maxErrorHistory,
        );
  yield* tx.leases.finishCancelled({ seq: row.seq, lastError: error, errorsJson });
  yield* ctx.count(tx, row.queue, 'leased', 'cancelled', 1);
  ctx.emit(tx, { kind: 'cancelled', queue: row.queue, count: 1 });
  if (ctx.events.recording) {
    ctx.record(tx, { ...eventAbout(row, ctx.clock.nowMs()), kind: 'cancelled', previousState: 'leased' });
  }
  if (ctx.outcomes.enabled && ctx.queues.settingsFor(row.queue).cancelledRetentionMs === 0) {
    ctx.keepOutcome(tx, cancelledOutcome(row, ctx.clock.nowMs(), error));
  }
  if (row.dependency_flags !== 0)
    yield* ctx.jobEnded(tx, { id: row.id, flags: row.dependency_flags }, 'cancelled');
}

/** What a settlement of a cancelled job's lease is told. */
export function cancelledMessage(row: AttemptRow): string {
  const by = row.cancelled_by === null ? '' : ` by ${row.cancelled_by}`;
  const at = row.cancelled_at_ms === null ? '' : ` at ${new Date(row.cancelled_at_ms).toISOString()}`;
  return `job ${row.id} was cancelled${by}${at}: stop working on it; it will not be retried`;
}
