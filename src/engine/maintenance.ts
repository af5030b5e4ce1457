/**
 * Time-driven work: expire waiting jobs whose expiry (TTL) has passed, promote
 * scheduled jobs whose run-at has come, end leases past their deadline (a
 * job with a cancel request ends cancelled, others are retried or die), sweep
 * what retention says to forget (dead letters, completed and cancelled jobs,
 * idempotency keys, rate-limit buckets that are full again, ended batches), and run the
 * schedules' ticks.
 *
 * One timer, set through the injected clock to the earliest thing due: the
 * next run-at, the next lease deadline, the next expiry, the next sweep, or
 * the next tick. Operations that create an earlier deadline pull the timer
 * forward after their commit.
 */

import type { Op } from '../store/op.ts';
import type { StoreTx } from '../store/store.ts';
import type { TimerHandle } from './clock.ts';
import type { EngineContext } from './context.ts';
import type { TimeoutNotice } from './control-types.ts';
import { type SeppError, toSeppError } from './errors.ts';
import type { FlowControl } from './flow-control/index.ts';
import { type Expiry, finishCancelled, finishTimedOut, pastTimeout, type Settler } from './leases/index.ts';

/** A sweep of rows retention says to forget that are not a queue's (ended batches, src/engine/batches). */
export interface RetentionSweep {
  /** Deletes up to `limit` rows of each kind it sweeps, inside the pass's write; says whether a chunk was full. */
  sweep(tx: StoreTx, nowMs: number, limit: number): Op<{ swept: number; more: boolean }>;
}

/** More time-driven work a pass runs (the schedules' ticks), cheap to ask about when nothing is due. */
export interface TimedWork {
  /** When it is next due (+Infinity: never), from memory. */
  dueMs(): number;
  /** Does what is due inside the pass's write; says whether more is due at once, and when the next is. */
  runDue(tx: StoreTx, nowMs: number): Op<{ more: boolean; nextDueMs: number }>;
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

/** Told how passes end: each failure (the pass is retried a second later) and each committed pass. */
export interface MaintenanceObserver {
  failed?(error: SeppError): void;
  passed?(): void;
}

export class Maintenance {
  private timer: TimerHandle | undefined;
  private timerAtMs = Number.POSITIVE_INFINITY;
  private nextSweepMs = 0;
  private running = false;
  /** The timer fired while a pass ran: another pass follows it at once. */
  private again = false;
  private stopped = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly settler: Settler,
    private readonly expiry: Expiry,
    /** Sweeps the rate-limit buckets that are full again. */
    private readonly flow: FlowControl,
    private readonly observer: MaintenanceObserver | undefined,
    private readonly timed: TimedWork | undefined = undefined,
    /** Ended batches past limits.batch_retention_ms. */
    private readonly batches: RetentionSweep | undefined = undefined,
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
    if (this.stopped) return;
    if (this.running) {
      // Due while a pass is still being answered: run again right after it, not a sleep later.
      this.again = true;
      return;
    }
    this.running = true;
    this.ctx
      .write((tx) => this.run(tx))
      .then(
        () => this.observer?.passed?.(),
        (error: unknown) => {
          this.observer?.failed?.(toSeppError(error));
          this.wakeAt(this.ctx.clock.nowMs() + retryAfterFailureMs);
        },
      )
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.fire();
        }
      });
  }

  /** One pass, inside a write. Schedules the next pass after the commit. */
  *run(tx: StoreTx): Op<MaintenanceReport> {
    const { clock, queues } = this.ctx;
    const nowMs = clock.nowMs();
    let more = false;

    const expired = yield* tx.leases.expired({ nowMs, limit: chunkRows });
    const timedOut: TimeoutNotice[] = [];
    for (const row of expired) {
      // A cancel was asked for and the worker never answered: the attempt ends the job, not a retry.
      if (row.cancelled_at_ms !== null) {
        this.ctx.emit(tx, { kind: 'expired', queue: row.queue, count: 1 });
        yield* finishCancelled(this.ctx, tx, row, 'lease expired after a cancel');
      } else if (pastTimeout(row, nowMs)) {
        // The lease was capped at the attempt's hard timeout: a timeout, not a lost worker.
        timedOut.push(
          yield* finishTimedOut(this.ctx, tx, row, (t, r, error) =>
            this.settler.failAttempt(t, r, error, { kind: 'backoff' }, 'timeout'),
          ),
        );
      } else {
        this.ctx.emit(tx, { kind: 'expired', queue: row.queue, count: 1 });
        yield* this.settler.failAttempt(
          tx,
          row,
          'lease expired',
          { kind: 'delay', delayMs: 0 },
          'lease_expired',
        );
      }
    }
    more ||= expired.length === chunkRows;
    this.settler.timeouts.notify(tx, timedOut);

    // After the leases (a lease that ran out may leave a retry whose expiry has passed) and before
    // promotion (an expired scheduled job goes straight to its end without waking anyone): so one
    // pass leaves no waiting job past its expiry, and two passes at one time do what one does.
    const jobsExpired = yield* this.expiry.expireWaiting(tx, nowMs, chunkRows);
    more ||= jobsExpired === chunkRows;

    const promotedByQueue = new Map<string, number>();
    const promoted = yield* tx.jobs.promoteDue({ nowMs, limit: chunkRows });
    for (const { queue } of promoted) promotedByQueue.set(queue, (promotedByQueue.get(queue) ?? 0) + 1);
    for (const [queue, jobs] of promotedByQueue) yield* this.ctx.count(tx, queue, 'scheduled', 'ready', jobs);
    more ||= promoted.length === chunkRows;

    let swept = 0;
    if (nowMs >= this.nextSweepMs) {
      for (const queue of queues.names()) {
        const settings = queues.settingsFor(queue);
        const ctx = this.ctx;
        const sweep = function* (state: 'dead' | 'completed' | 'cancelled', retentionMs: number): Op<number> {
          const { swept, dependedOn } = yield* tx.jobs.sweep({
            queue,
            state,
            beforeMs: nowMs - retentionMs,
            limit: chunkRows,
          });
          // What still waits on a swept dead or cancelled job is cancelled, as when it is deleted
          // (bounded as any failure passed on); a swept completed job has none left waiting. The
          // sweep's statements dropped its edges and count of dependents already.
          for (const job of dependedOn) {
            const deleted = {
              seq: job.seq,
              id: job.id,
              flags: job.dependency_flags,
              state,
              rowsForgotten: true,
            };
            yield* ctx.jobDeleted(tx, deleted);
          }
          return swept;
        };
        const dead = yield* sweep('dead', settings.deadRetentionMs);
        const done = yield* sweep('completed', settings.completedRetentionMs);
        const cancelled = yield* sweep('cancelled', settings.cancelledRetentionMs);
        yield* this.ctx.count(tx, queue, 'dead', null, dead);
        yield* this.ctx.count(tx, queue, 'completed', null, done);
        yield* this.ctx.count(tx, queue, 'cancelled', null, cancelled);
        const buckets = yield* this.flow.sweep(tx, queue, nowMs, chunkRows);
        swept += dead + done + cancelled + buckets;
        more ||= dead === chunkRows || done === chunkRows || cancelled === chunkRows || buckets === chunkRows;
      }
      const keys = yield* tx.keys.sweep({ nowMs, limit: chunkRows });
      swept += keys;
      more ||= keys === chunkRows;
      if (this.batches !== undefined) {
        const batches = yield* this.batches.sweep(tx, nowMs, chunkRows);
        swept += batches.swept;
        more ||= batches.more;
      }
      if (!more) this.nextSweepMs = nowMs + sweepIntervalMs;
    }

    let nextTickMs = this.timed?.dueMs() ?? Number.POSITIVE_INFINITY;
    if (this.timed !== undefined && nextTickMs <= nowMs) {
      const ticks = yield* this.timed.runDue(tx, nowMs);
      more ||= ticks.more;
      nextTickMs = ticks.nextDueMs;
    }

    const nextRunAt = (yield* tx.jobs.nextRunAtMs()) ?? Number.POSITIVE_INFINITY;
    const nextDeadline = (yield* tx.leases.nextDeadlineMs()) ?? Number.POSITIVE_INFINITY;
    const nextExpiry = yield* this.expiry.nextExpiryMs(tx);
    const nextMs = more
      ? nowMs
      : Math.min(nextRunAt, nextDeadline, nextExpiry, this.nextSweepMs, nextTickMs, nowMs + maxSleepMs);

    for (const [queue, n] of promotedByQueue) this.ctx.jobsReady(tx, queue, n);
    tx.afterCommit(() => {
      // An idle server lets go of outcomes past limits.finished_outcome_ms here.
      this.ctx.outcomes.prune(nowMs);
      this.wakeAt(nextMs);
    });
    return { promoted: promoted.length, expired: expired.length, jobsExpired, swept };
  }
}

/** Several TimedWorks as one: each runs when it is due, and the next is the earliest of theirs. */
export function timedTogether(...works: TimedWork[]): TimedWork {
  return {
    dueMs: () => Math.min(...works.map((work) => work.dueMs())),
    *runDue(tx, nowMs) {
      let more = false;
      let nextDueMs = Number.POSITIVE_INFINITY;
      for (const work of works) {
        if (work.dueMs() <= nowMs) {
          const ran = yield* work.runDue(tx, nowMs);
          more ||= ran.more;
          nextDueMs = Math.min(nextDueMs, ran.nextDueMs);
        } else nextDueMs = Math.min(nextDueMs, work.dueMs());
      }
      return { more, nextDueMs };
    },
  };
}
