/**
 * What a Worker hands to a handler — the leased job with its decoded data and
 * an AbortSignal — and the errors a handler throws to steer the nack.
 */
import type { LeasedJob as ProtoLeasedJob } from './gen/sepp/v1/job.js';
import { LeasedJob } from './jobs.ts';
import { progressFields } from './results.ts';
import type { ProgressFields } from './work-transport.ts';

let abortJob!: (job: WorkerJob, reason: unknown) => void;
/** Sends a job's progress; `owner` is what the Worker attached to the job (its bookkeeping). */
export type ProgressSink = (owner: unknown, fields: ProgressFields) => Promise<void>;
let setReporter!: (job: WorkerJob, report: ProgressSink, owner: unknown) => void;

/** Aborts a job's signal (made already aborted if nobody read it yet); for the Worker, not exported from the package. */
export function abortWorkerJob(job: WorkerJob, reason: unknown): void {
  abortJob(job, reason);
}

/** Where a job's `progress()` reports go; for the Worker, not exported from the package. */
export function reportProgressTo(job: WorkerJob, report: ProgressSink, owner: unknown): void {
  setReporter(job, report, owner);
}

/** A job running in a Worker. */
export class WorkerJob<T = unknown> extends LeasedJob {
  /**
   * The payload decoded: the parsed JSON value when the content type is
   * `application/json` (or `*+json`); otherwise the raw bytes (`Buffer`).
   */
  readonly data: T;
  // The signal is made on first read (or first abort), not per job: most
  // handlers never look at it, and an AbortController with its signal was
  // the largest single cost of a drained job in the client.
  #controller: AbortController | undefined;
  /** A signal given to the constructor, used instead of a controller of our own. */
  readonly #givenSignal: AbortSignal | undefined;
  // Set by the Worker (one shared function, and the Worker's record of this
  // job): a job built elsewhere, such as in a handler test, reports nowhere.
  #report: ProgressSink | undefined;
  #reportOwner: unknown;

  /** Built by the Worker. A `signal` given here is used as is (for handler tests). */
  constructor(job: ProtoLeasedJob, data: T, signal?: AbortSignal) {
    super(job);
    this.data = data;
    this.#givenSignal = signal;
  }

  /**
   * Aborts when the job must stop: its lease was lost (the reason is a
   * LeaseLostError; the job may already run elsewhere and no ack will be
   * sent), an operator cancelled the job (a JobCancelledError; the job ends
   * `cancelled` and is not retried, whatever the handler returns), or the
   * worker's shutdown timeout passed. Read after that, it is already aborted
   * with the same reason.
   */
  get signal(): AbortSignal {
    return this.#givenSignal ?? this.#ownController().signal;
  }

  #ownController(): AbortController {
    this.#controller ??= new AbortController();
    return this.#controller;
  }

  /**
   * Reports how far along the job is: a percentage (0 to 100), a small JSON
   * document (at most the server's `max_progress_bytes`, default 4 KiB), or
   * both — `job.progress(40)`, `job.progress({ step: 'upload' })`,
   * `job.progress(40, { step: 'upload' })`. Each replaces what it carries
   * and leaves the rest as reported before. Shown by `getJob`, the admin UI
   * and `sepp job`, and sent as a `progress` event.
   *
   * Call it as often as you like: reports made while one is on its way are
   * merged into the next. The promise resolves once the report is stored
   * (or dropped because the job ended) and never rejects: a lost lease
   * aborts `signal` as usual, other failures go to the Worker's `error`
   * event. A report still on its way when the handler returns, answered
   * NOT_FOUND because the job's ack or nack reached the server first, is no
   * lost lease. A percentage outside 0–100, or a document with no JSON form,
   * throws a TypeError at once.
   */
  progress(percent: number, data?: unknown): Promise<void>;
  progress(data: unknown): Promise<void>;
  progress(percentOrData: unknown, data?: unknown): Promise<void> {
    const fields = progressFields(percentOrData, data);
    return this.#report?.(this.#reportOwner, fields) ?? Promise.resolve();
  }

  static {
    abortJob = (job, reason) => {
      // A signal given to the constructor belongs to whoever gave it.
      if (job.#givenSignal === undefined) job.#ownController().abort(reason);
    };
    setReporter = (job, report, owner) => {
      job.#report = report;
      job.#reportOwner = owner;
    };
  }
}

/**
 * Runs one job. Resolve to ack it — the resolved value becomes the job's
 * result (see `JobResult`; `undefined` means none) — or throw (or reject)
 * to nack it with the error's message: `RetryAfter` and `DeadLetter` choose
 * what happens next. `signal` is `job.signal`.
 */
// The method form makes the parameter bivariant, so a handler may declare the
// data type it expects (`(job: WorkerJob<Email>) => …`) in a map of handlers.
export type JobHandler<T = unknown> = {
  handle(job: WorkerJob<T>, signal: AbortSignal): unknown;
}['handle'];

// An arrow function with at most one plain parameter: it has no `arguments`
// of its own, so a second argument is invisible to it.
const oneParamArrow = /^(?:async\s*)?(?:\(\s*(?:[A-Za-z_$][\w$]*)?\s*\)|[A-Za-z_$][\w$]*)\s*=>/;
// A function or method with at most one plain parameter; it is blind to a
// second argument only if it never names `arguments` (nor `eval`, nor an
// escaped identifier that could spell it), and is not native code: a bound
// function prints as `function () { [native code] }` whatever it wraps.
const oneParamFunction =
  /^(?:async\s+)?(?:function\b\s*\*?\s*[\w$]*|\*?\s*[A-Za-z_$][\w$]*)\s*\(\s*(?:[A-Za-z_$][\w$]*)?\s*\)/;
const takesSignal = new WeakMap<JobHandler, boolean>();

/**
 * False only for a handler that provably cannot see a second argument, so the
 * Worker may call it with the job alone and make no signal unless the handler
 * reads `job.signal`. Judged once per handler from its source, and
 * conservatively: anything not plainly one of the two forms above (default or
 * rest parameters, destructuring, comments, bound functions, wrappers, native
 * code) gets the signal. `handler.length` alone would not do: default and rest
 * parameters, bound functions and `(...args) => inner(...args)` wrappers all
 * report fewer parameters than they read.
 */
export function handlerTakesSignal(handler: JobHandler): boolean {
  let takes = takesSignal.get(handler);
  if (takes === undefined) {
    const source = Function.prototype.toString.call(handler);
    takes = !(
      oneParamArrow.test(source) ||
      (oneParamFunction.test(source) && !/\barguments\b|\beval\b|\\u|\[native code\]/.test(source))
    );
    takesSignal.set(handler, takes);
  }
  return takes;
}

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
