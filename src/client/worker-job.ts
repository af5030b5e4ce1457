/**
 * What a Worker hands to a handler — the leased job with its decoded data and
 * an AbortSignal — and the errors a handler throws to steer the nack.
 */
import type { LeasedJob as ProtoLeasedJob } from '../rpc/gen/sepp/v1/job.js';
import { LeasedJob } from './jobs.ts';

/** A job running in a Worker. */
export class WorkerJob<T = unknown> extends LeasedJob {
  /**
   * The payload decoded: the parsed JSON value when the content type is
   * `application/json` (or `*+json`); otherwise the raw bytes (`Buffer`).
   */
  readonly data: T;
  /**
   * Aborts when the job must stop: its lease was lost (the reason is a
   * LeaseLostError; the job may already run elsewhere and no ack will be
   * sent), or the worker's shutdown timeout passed.
   */
  readonly signal: AbortSignal;

  /** Built by the Worker. */
  constructor(job: ProtoLeasedJob, data: T, signal: AbortSignal) {
    super(job);
    this.data = data;
    this.signal = signal;
  }
}

/**
 * Runs one job. Resolve to ack it; throw (or reject) to nack it with the
 * error's message — `RetryAfter` and `DeadLetter` choose what happens next.
 * `signal` is `job.signal`.
 */
// The method form makes the parameter bivariant, so a handler may declare the
// data type it expects (`(job: WorkerJob<Email>) => …`) in a map of handlers.
export type JobHandler<T = unknown> = {
  handle(job: WorkerJob<T>, signal: AbortSignal): unknown;
}['handle'];

/** Throw from a handler to retry the job after exactly `delayMs` instead of the queue's backoff. */
export class RetryAfter extends Error {
  override name = 'RetryAfter';

  /** `message` is recorded as the attempt's error (default "retry after N ms"). */
  constructor(
    readonly delayMs: number,
    message?: string,
    options?: { cause?: unknown },
  ) {
    super(message ?? `retry after ${delayMs} ms`, options);
  }
}

/** Throw from a handler to dead-letter the job now, whatever attempts it has left. */
export class DeadLetter extends Error {
  override name = 'DeadLetter';

  /** `reason` is recorded as the attempt's error. */
  constructor(reason: string, options?: { cause?: unknown }) {
    super(reason, options);
  }
}
