/**
 * A Worker's record of each job it runs (Active), its shares of the slots
 * (Lane), and the small rules around a handler: how it is called, what a
 * failure becomes, which nack ends a failed attempt. For worker.ts and worker-runner.ts.
 */
import { isMs } from './arguments.ts';
import type { JobCancelledError } from './errors.ts';
import type { ProgressReporter } from './progress-reporter.ts';
import type { NackOptions } from './types.ts';
import type { WorkTransport } from './work-transport.ts';
import type { WorkerClock, WorkerTimer } from './worker-clock.ts';
import { DeadLetter, handlerTakesSignal, type JobHandler, RetryAfter, type WorkerJob } from './worker-job.ts';
import { maxCreditPerStream } from './worker-options.ts';

/**
 * A share of the slots with its own transport (one Work stream or one poller),
 * and its share of the prefetch: the jobs it may hold leased while every one of
 * its slots is busy (worker-held-jobs.ts).
 */
export class Lane {
  busy = 0;
  readonly transport: WorkTransport;
  /** Jobs it may hold now: `prefetchMax`, or less as `prefetch: 'auto'` sets it (worker-auto-prefetch.ts). */
  prefetch: number;

  constructor(
    readonly capacity: number,
    /** The most it may ever hold: with its slots, at most one stream's credit. */
    readonly prefetchMax: number,
    makeTransport: (lane: Lane) => WorkTransport,
  ) {
    this.prefetch = prefetchMax;
    this.transport = makeTransport(this);
  }
}

export interface Active {
  job: WorkerJob;
  lane: Lane;
  /** The lease keeper's next extension time. */
  dueAtMs: number;
  /** Local estimate of the lease's end, for retrying settlements. */
  leaseEndsAtMs: number;
  extending: boolean;
  lost: boolean;
  /** Set once the server said the job was cancelled. */
  cancelled: JobCancelledError | undefined;
  stoppedForShutdown: boolean;
  /** Given up at shutdown: whatever the handler does later is not settled. */
  abandoned: boolean;
  /** It takes no slot (never started, or its slot was freed). */
  slotFreed: boolean;
  decodeError: DeadLetter | undefined;
  /** Made on the job's first progress report. */
  progress: ProgressReporter | undefined;
  /** The handler has returned or thrown: progress reports are no longer sent. */
  handlerDone: boolean;
  /** Its ack or nack is sent: that answer says whether the lease was still ours, not a late extend's or progress report's. */
  settling: boolean;
}

/** How long shutdown waits for handlers whose signals it aborted, and for the streams to end. */
export const abortGraceMs = 1000;

/** A handler `handlerTakesSignal` found blind to its second argument. */
type BlindHandler = (job: WorkerJob) => unknown;

/**
 * A handler that cannot see a second argument is not given one, so its job's
 * signal is made only if it reads `job.signal`.
 */
export function callHandler(handler: JobHandler, job: WorkerJob): unknown {
  return handlerTakesSignal(handler) ? handler(job, job.signal) : (handler as BlindHandler)(job);
}

export function normalise(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * What a DeadLetter or RetryAfter reports: its own message, with the class and stack of
 * the error it wraps (`cause`) when there is one — the failure, not the SDK's marker.
 */
function causeOf(marker: DeadLetter | RetryAfter): Error {
  const cause = marker.cause;
  if (!(cause instanceof Error)) return marker;
  const reported = new Error(marker.message);
  const ctor = cause.constructor?.name;
  reported.name = cause.name !== 'Error' || typeof ctor !== 'string' || ctor === '' ? cause.name : ctor;
  reported.stack = cause.stack ?? '';
  return reported;
}

/** The nack of a failed attempt: the handler's choice (DeadLetter, RetryAfter), else the queue's backoff. */
export function nackOptions(active: Active, error: Error): NackOptions {
  // The Error itself: its class and stack go with the message (lease-calls.ts errorFields).
  if (error instanceof DeadLetter) return { error: causeOf(error), deadLetter: true };
  if (error instanceof RetryAfter) {
    // A delay the protocol cannot carry (NaN, Infinity, "5s"): the queue's backoff, not a failed nack.
    if (!isMs(error.delayMs)) return { error: causeOf(error) };
    return { error: causeOf(error), retryAfterMs: error.delayMs };
  }
  // Stopped by our own shutdown: let another worker have it at once.
  if (active.stoppedForShutdown) return { error, retryAfterMs: 0 };
  return { error };
}

/** `i`'s share of `total` split over `count` as evenly as it goes: the first `total % count` get one more. */
function shareOf(total: number, count: number, i: number): number {
  return Math.floor(total / count) + (i < total % count ? 1 : 0);
}

/**
 * `concurrency` slots and `prefetch` held jobs (the most: `prefetch: 'auto'` holds
 * up to its cap) over `laneCount` lanes, each split as evenly as it goes; a lane's
 * slots and prefetch together are the most credit its Work stream holds, which
 * the server bounds.
 */
export function makeLanes(
  concurrency: number,
  prefetch: number,
  laneCount: number,
  makeTransport: (lane: Lane) => WorkTransport,
): Lane[] {
  if (!Number.isInteger(laneCount) || laneCount < 1)
    throw new TypeError('Worker: streams must be a positive integer');
  const perLane = shareOf(concurrency, laneCount, 0) + shareOf(prefetch, laneCount, 0);
  if (perLane > maxCreditPerStream) {
    throw new TypeError(
      `Worker: concurrency + prefetch is ${perLane} on one of ${laneCount} streams; the server refuses ` +
        `more than ${maxCreditPerStream} per stream (limits.max_reserve_jobs): use more streams ` +
        '(at most one per slot) or less prefetch',
    );
  }
  return Array.from(
    { length: laneCount },
    (_, i) => new Lane(shareOf(concurrency, laneCount, i), shareOf(prefetch, laneCount, i), makeTransport),
  );
}

/** Resolves true once `register`'s callback is called, false after `timeoutMs` on `clock`. */
export async function settledWithin(
  clock: WorkerClock,
  timeoutMs: number,
  register: (done: () => void) => void,
): Promise<boolean> {
  let timer: WorkerTimer | undefined;
  const settled = await Promise.race([
    new Promise<boolean>((resolve) => register(() => resolve(true))),
    new Promise<boolean>((resolve) => {
      timer = clock.setTimer(timeoutMs, () => resolve(false));
    }),
  ]);
  timer?.cancel();
  return settled;
}
