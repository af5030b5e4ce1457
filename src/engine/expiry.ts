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
import type { ExpiredRow } from '../store/sqlite/control-statements.ts';
import type { Transaction } from '../store/sqlite/group-commit.ts';
import type { LeasedRow } from '../store/sqlite/statements.ts';
import type { EngineContext } from './context.ts';
import { eventAbout } from './events/lifecycle-event.ts';
import type { JobState } from './types.ts';

type ExpiringRow = Pick<
  ExpiredRow,
  'seq' | 'id' | 'queue' | 'type' | 'attempt' | 'idempotency_key' | 'expires_at_ms'
>;

export class Expiry {
  constructor(private readonly ctx: EngineContext) {}

  /** Maintenance: up to `limit` waiting jobs whose expiry has passed. Returns how many. */
  expireWaiting(tx: Transaction, nowMs: number, limit: number): number {
    const rows = this.ctx.control.expiredWaiting.all({ now_ms: nowMs, limit });
    for (const row of rows) this.expire(tx, row, row.state as JobState, nowMs, false);
    return rows.length;
  }

  /**
   * Lease time: `rows` were just leased; those whose expiry has passed are
   * dead-lettered or deleted (the lease's attempt given back) and left out of
   * the answer. Returns `rows` itself when none had expired.
   */
  dropExpired(tx: Transaction, rows: LeasedRow[], nowMs: number): LeasedRow[] {
    let expired: Set<LeasedRow> | undefined;
    for (const row of rows) {
      if (row.expires_at_ms === null || row.expires_at_ms > nowMs) continue;
      expired ??= new Set();
      expired.add(row);
    }
    if (expired === undefined) return rows;
    for (const row of expired) {
      this.expire(tx, { ...row, expires_at_ms: row.expires_at_ms ?? nowMs }, 'leased', nowMs, true);
    }
    return rows.filter((row) => !expired.has(row));
  }

  /** The earliest expiry among waiting jobs (an index probe), or +Infinity. */
  nextExpiryMs(): number {
    return this.ctx.control.nextExpiry.get() ?? Number.POSITIVE_INFINITY;
  }

  private expire(tx: Transaction, row: ExpiringRow, from: JobState, nowMs: number, undoLease: boolean): void {
    const { queue } = row;
    const error = `expired: not started before ${new Date(row.expires_at_ms).toISOString()} (expires_at_ms)`;
    if (this.ctx.queues.settingsFor(queue).expiredAction === 'delete') {
      this.ctx.sql.deleteJob.run(row.seq);
      this.ctx.count(queue, from, null, 1);
      this.ctx.releaseKey(queue, row.idempotency_key, row.id);
    } else {
      this.ctx.control.deadLetterExpired.run({
        seq: row.seq,
        now_ms: nowMs,
        error,
        undo_lease: undoLease ? 1 : 0,
      });
      this.ctx.count(queue, from, 'dead', 1);
      this.ctx.emit(tx, { kind: 'dead_lettered', queue, reason: 'expired', count: 1 });
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
  }
}
