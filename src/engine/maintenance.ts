/**
 * Time-driven work: expire waiting jobs whose expiry (TTL) has passed, promote
 * scheduled jobs whose run-at has come, end leases past their deadline (a
 * job with a cancel request ends cancelled, others are retried or die), sweep
 * what retention says to forget (dead letters, completed and cancelled jobs,
 * idempotency keys, rate-limit buckets that are full again), and run the
 * schedules' ticks.
 *
 * One timer, set through the injected clock to the earliest thing due: the
 * next run-at, the next lease deadline, the next expiry, the next sweep, or
 * the next tick. Operations that create an earlier deadline pull the timer
 * forward after their commit.
 */
import type { Transaction } from '../store/sqlite/group-commit.ts';
import { finishCancelled } from './cancel.ts';
import type { TimerHandle } from './clock.ts';
import type { EngineContext } from './context.ts';
import { type SeppError, toSeppError } from './errors.ts';
import type { Expiry } from './expiry.ts';
import type { Settler } from './settle.ts';

/** More time-driven work a pass runs (the schedules' ticks), cheap to ask about when nothing is due. */
export interface TimedWork {
  /** When it is next due (+Infinity: never), from memory. */
  dueMs(): number;
  /** Does what is due inside the pass's write; says whether more is due at once, and when the next is. */
  runDue(tx: Transaction, nowMs: number): { more: boolean; nextDueMs: number };
}

export interface MaintenanceReport {
  promoted: number;
  /** Leases that ran out. */
  expired: number;
  /** Waiting jobs whose expiry (TTL) passed. */
  jobsExpired: number;
  swept: number;
}

/** Rows one maintenance pass touches per kind; more waits for the next pass, which comes at once. */
const chunkRows = 1000;
const sweepIntervalMs = 60_000;
/** The timer never sleeps longer than this, so a missed wake-up costs at most this much. */
const maxSleepMs = 60_000;
const retryAfterFailureMs = 1000;

export class Maintenance {
  private timer: TimerHandle | undefined;
  private timerAtMs = Number.POSITIVE_INFINITY;
  private nextSweepMs = 0;
  private running = false;
  private stopped = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly settler: Settler,
    private readonly expiry: Expiry,
    private readonly onError: ((error: SeppError) => void) | undefined,
    private readonly timed: TimedWork | undefined = undefined,
  ) {}

  start(): void {
    this.wakeAt(this.ctx.clock.nowMs());
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Makes sure a pass runs no later than `atMs`. */
  wakeAt(atMs: number): void {
    if (this.stopped || atMs >= this.timerAtMs) return;
    this.timer?.cancel();
    this.timerAtMs = atMs;
    this.timer = this.ctx.clock.setTimer(atMs - this.ctx.clock.nowMs(), () => this.fire());
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAtMs = Number.POSITIVE_INFINITY;
    if (this.stopped || this.running) return;
    this.running = true;
    this.ctx.writer
      .submit((tx) => this.run(tx))
      .catch((error: unknown) => {
        this.onError?.(toSeppError(error));
        this.wakeAt(this.ctx.clock.nowMs() + retryAfterFailureMs);
      })
      .finally(() => {
        this.running = false;
      });
  }

  /** One pass, inside a write. Schedules the next pass after the commit. */
  run(tx: Transaction): MaintenanceReport {
    const { sql, clock, queues } = this.ctx;
    const nowMs = clock.nowMs();
    let more = false;

    const expired = sql.expiredLeases.all({ now_ms: nowMs, limit: chunkRows });
    for (const row of expired) {
      this.ctx.emit(tx, { kind: 'expired', queue: row.queue, count: 1 });
      // A cancel was asked for and the worker never answered: the attempt ends the job, not a retry.
      if (row.cancelled_at_ms !== null) finishCancelled(this.ctx, tx, row, 'lease expired after a cancel');
      else this.settler.failAttempt(tx, row, 'lease expired', { kind: 'delay', delayMs: 0 }, 'lease_expired');
    }
    more ||= expired.length === chunkRows;

    // After the leases (a lease that ran out may leave a retry whose expiry has passed) and before
    // promotion (an expired scheduled job goes straight to its end without waking anyone): so one
    // pass leaves no waiting job past its expiry, and two passes at one time do what one does.
    const jobsExpired = this.expiry.expireWaiting(tx, nowMs, chunkRows);
    more ||= jobsExpired === chunkRows;

    const promotedByQueue = new Map<string, number>();
    const promoted = sql.promoteDue.all({ now_ms: nowMs, limit: chunkRows });
    for (const { queue } of promoted) promotedByQueue.set(queue, (promotedByQueue.get(queue) ?? 0) + 1);
    for (const [queue, jobs] of promotedByQueue) this.ctx.count(queue, 'scheduled', 'ready', jobs);
    more ||= promoted.length === chunkRows;

    let swept = 0;
    if (nowMs >= this.nextSweepMs) {
      for (const queue of queues.names()) {
        const settings = queues.settingsFor(queue);
        const dead = sql.sweepDead.run({
          queue,
          before_ms: nowMs - settings.deadRetentionMs,
          limit: chunkRows,
        });
        const done = sql.sweepCompleted.run({
          queue,
          before_ms: nowMs - settings.completedRetentionMs,
          limit: chunkRows,
        });
        const cancelled = this.ctx.control.sweepCancelled.run({
          queue,
          before_ms: nowMs - settings.cancelledRetentionMs,
          limit: chunkRows,
        });
        this.ctx.count(queue, 'dead', null, dead.changes);
        this.ctx.count(queue, 'completed', null, done.changes);
        this.ctx.count(queue, 'cancelled', null, cancelled.changes);
        const buckets = this.ctx.flow.sweep(queue, nowMs, chunkRows);
        swept += dead.changes + done.changes + cancelled.changes + buckets;
        more ||=
          dead.changes === chunkRows ||
          done.changes === chunkRows ||
          cancelled.changes === chunkRows ||
          buckets === chunkRows;
      }
      const keys = sql.sweepIdempotencyKeys.run({ now_ms: nowMs, limit: chunkRows });
      swept += keys.changes;
      more ||= keys.changes === chunkRows;
      if (!more) this.nextSweepMs = nowMs + sweepIntervalMs;
    }

    let nextTickMs = this.timed?.dueMs() ?? Number.POSITIVE_INFINITY;
    if (this.timed !== undefined && nextTickMs <= nowMs) {
      const ticks = this.timed.runDue(tx, nowMs);
      more ||= ticks.more;
      nextTickMs = ticks.nextDueMs;
    }

    const nextRunAt = sql.nextRunAt.get() ?? Number.POSITIVE_INFINITY;
    const nextDeadline = sql.nextLeaseDeadline.get() ?? Number.POSITIVE_INFINITY;
    const nextExpiry = this.expiry.nextExpiryMs();
    const nextMs = more
      ? nowMs
      : Math.min(nextRunAt, nextDeadline, nextExpiry, this.nextSweepMs, nextTickMs, nowMs + maxSleepMs);

    for (const [queue, n] of promotedByQueue) this.ctx.jobsReady(tx, queue, n);
    tx.afterCommit(() => this.wakeAt(nextMs));
    return { promoted: promoted.length, expired: expired.length, jobsExpired, swept };
  }
}
