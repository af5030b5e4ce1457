/**
 * Expiry (TTL): a job that carries `expires_at_ms` is never handed out at or
 * after that time. Once it passes with the job still waiting (scheduled or
 * ready — a first attempt or a retry), the job goes to the dead letters with
 * reason `expired`, or is deleted when its queue's `expired_action` is
 * `delete` (which releases its idempotency key).
 *
 * Two places do it, so that the lease never scans for expired jobs:
 * maintenance expires waiting jobs through the partial index jobs_expiry
 * (which holds only jobs that have an expiry, and is woken for the earliest),
 * and a lease checks the `expires_at_ms` of the rows it just took — one
 * comparison per job — for those that expired since the last pass, and takes
 * them back out of its answer.
 */

import type { Op } from '../../store/op.ts';
import type { ExpiredRow, LeasedRow } from '../../store/rows.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { eventAbout } from '../events/index.ts';
import { deadOutcome } from '../finished-outcomes.ts';
import type { JobState } from '../types.ts';

type ExpiringRow = Pick<
  ExpiredRow,
  'seq' | 'id' | 'queue' | 'type' | 'attempt' | 'idempotency_key' | 'expires_at_ms'
> & {
  /** Absent for a job just leased (the lease does not return it). */
  dependency_flags?: number;
};

export class Expiry {
  constructor(private readonly ctx: EngineContext) {}

  /** Maintenance: up to `limit` waiting jobs whose expiry has passed. Returns how many. */
  *expireWaiting(tx: StoreTx, nowMs: number, limit: number): Op<number> {
    const rows = yield* tx.control.expiredWaiting({ nowMs, limit });
    for (const row of rows) yield* this.expire(tx, row, row.state as JobState, nowMs, false);
    return rows.length;
  }

  /**
   * Lease time: `rows` were just leased; those whose expiry has passed are
   * dead-lettered or deleted (the lease's attempt given back) and left out of
   * the answer. Call only when `hasExpired(rows, nowMs)`.
   */
  *dropExpired(tx: StoreTx, rows: LeasedRow[], nowMs: number): Op<LeasedRow[]> {
    const live: LeasedRow[] = [];
    for (const row of rows) {
      if (row.expires_at_ms === null || row.expires_at_ms > nowMs) live.push(row);
      else yield* this.expire(tx, { ...row, expires_at_ms: row.expires_at_ms }, 'leased', nowMs, true);
    }
    return live;
  }

  /** Whether any of `rows`, just leased, expired by `nowMs`: one comparison per row, no store call. */
  static hasExpired(rows: readonly LeasedRow[], nowMs: number): boolean {
    for (const row of rows) if (row.expires_at_ms !== null && row.expires_at_ms <= nowMs) return true;
    return false;
  }

  /** The earliest expiry among waiting jobs (an index probe), or +Infinity. */
  *nextExpiryMs(view: StoreView): Op<number> {
    return (yield* view.control.nextExpiryMs()) ?? Number.POSITIVE_INFINITY;
  }

  private *expire(
    tx: StoreTx,
    row: ExpiringRow,
    from: JobState,
    nowMs: number,
    undoLease: boolean,
  ): Op<void> {
    const { queue } = row;
    const error = `expired: not started before ${new Date(row.expires_at_ms).toISOString()} (expires_at_ms)`;
    const settings = this.ctx.queues.settingsFor(queue);
    // Deleted now, or a dead letter swept at the next pass: its outcome outlives the row.
    if (
      this.ctx.outcomes.enabled &&
      (settings.expiredAction === 'delete' || settings.deadRetentionMs === 0)
    ) {
      const attempt = undoLease ? row.attempt - 1 : row.attempt;
      this.ctx.keepOutcome(tx, deadOutcome(row, attempt, nowMs, error, 'expired'));
    }
    // A job just leased carries no `dependency_flags`: read them (an expiry at lease time is rare),
    // before a delete takes the row.
    const flags = row.dependency_flags ?? (yield* tx.jobs.attempt(row.id))?.dependency_flags ?? 0;
    const deleted = settings.expiredAction === 'delete';
    if (deleted) {
      yield* tx.jobs.delete(row.seq);
      yield* this.ctx.count(tx, queue, from, null, 1);
      yield* this.ctx.releaseKey(tx, queue, row.idempotency_key, row.id);
    } else {
      yield* tx.control.expire({ seq: row.seq, nowMs, error, undoLease });
      yield* this.ctx.count(tx, queue, from, 'dead', 1);
      this.ctx.emit(tx, { kind: 'dead_lettered', queue, reason: 'expired', count: 1 });
      this.ctx.attemptsEnded(
        tx,
        [{ queue: row.queue, type: row.type, run_at_ms: 0, leased_at_ms: null }],
        'dead',
      );
    }
    if (this.ctx.events.recording) {
      // Subscribers (and waits for the job) learn it ended, whether kept as a dead letter
      // or deleted (expired_action = delete); a lease taken back reports the attempt it had.
      const attempt = undoLease ? row.attempt - 1 : row.attempt;
      this.ctx.record(tx, {
        ...eventAbout({ ...row, attempt }, nowMs),
        kind: 'dead_lettered',
        reason: 'expired',
        error,
      });
    }
    this.ctx.emit(tx, { kind: 'ttl_expired', queue, count: 1 });
    if (flags === 0) return;
    yield* this.ctx.jobEnded(tx, { id: row.id, flags }, 'dead');
    // Deleted, it is gone for good: what its end left waiting (the `wait` policy) is cancelled.
    if (deleted) yield* this.ctx.jobDeleted(tx, { seq: row.seq, id: row.id, flags, state: 'dead' });
  }
}
