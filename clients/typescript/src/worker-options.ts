/**
 * What a Worker can be told (WorkerOptions, checked and filled in by resolveWorkerOptions)
 * and what it tells (WorkerEvents).
 */
import { hostname } from 'node:os';
import type { JobCancelledError, JobTimeoutError, LeaseLostError, SeppError } from './errors.ts';
import type { NackResult } from './types.ts';
import { autoPrefetchCap } from './worker-auto-prefetch.ts';
import { systemWorkerClock, type WorkerClock } from './worker-clock.ts';
import type { JobHandler, WorkerJob } from './worker-job.ts';

/** How a Worker runs. Only `queues` and a handler are required. */
export interface WorkerOptions {
  /** Queues to take jobs from, in order of preference. */
  queues: readonly string[];
  /** Jobs run at once (and leases held at once). Default 1; at most 1000. */
  concurrency?: number;
  /**
   * Jobs leased ahead beyond `concurrency`, held in the worker until a slot
   * frees. Worth it for short jobs at high throughput: the server leases and
   * commits in larger batches. The trade-off: held jobs are taken out of the
   * queue's order, so another worker with free slots cannot run them, and each
   * counts against the queue's `max_leased`.
   *
   * Default `'auto'`: the worker leases ahead only as much work as its slots
   * finish in about one second (or a tenth of the lease, if shorter), and none
   * until its first jobs have run; so long jobs are never held, and a worker
   * never hoards more than ~1 s of other workers' work. Precisely: none before
   * `concurrency` runs have finished, then
   * min(autoCap, floor(concurrency × min(1000, leaseMs / 10) / avgRunMs)), where
   * avgRunMs weighs each handler's run 0.1 and autoCap = min(500, 1000 −
   * concurrency) (worker-auto-prefetch.ts). Once a job comes from a queue with
   * flow limits (`max_leased`, `group_max_leased`, a rate limit or a group rate
   * limit: the server says so on each job), it holds none for the rest of its
   * life (`prefetchLimit` is 0). A number from 0 to 1000 holds
   * exactly that many at most; 0 leases only for free slots. Slots plus
   * prefetch per stream at most 1000 (the server's default
   * `limits.max_reserve_jobs`).
   *
   * Held leases are extended like running ones (a held job never starts on an
   * expired lease); a cancelled or timed-out held job is dropped without
   * running; `close()` gives every held job back at once with a give-back
   * (the protocol's `give_back`): ready again, no attempt counted, even on its
   * last one (its attempt number kept, its budget one larger), each once (the
   * Work stream is told to stop delivering first).
   *
   * Against a server without give-backs (GetServerInfo's `features` lacks
   * `nack_give_back`: an older server) `'auto'` holds nothing, and `close()`
   * nacks held jobs for a retry at once (an attempt counted) and keeps one on
   * its last attempt to run.
   */
  prefetch?: number | 'auto';
  /** Lease length asked for, in ms; leases are extended every third of it while a job runs. Default 30,000. */
  leaseMs?: number;
  /** Handlers by job type. */
  handlers?: Readonly<Record<string, JobHandler>>;
  /** Handler for job types without their own. Without it such jobs are nacked (retried with backoff). */
  fallback?: JobHandler;
  /** Names this worker in GetJob and the admin UI. Default `hostname:pid`. */
  workerId?: string;
  /** How long `close()` waits for running jobs before aborting their signals, in ms. Default 30,000. */
  shutdownTimeoutMs?: number;
  /** `stream` (the Work stream) or `unary` (Reserve long polls). Default: the client's transport. */
  transport?: 'stream' | 'unary';
  /**
   * How many Work streams (or, with the unary transport, Reserve pollers) the
   * slots are spread over. Each stream carries everything one turn of the
   * event loop settles as one batch message, and asks the server for jobs on
   * its own: many small reserves and acks cost the server more than a few
   * larger ones. Default: as few streams as the server's credit limit per
   * stream allows, ceil((concurrency + prefetch) / 1000) (with `prefetch:
   * 'auto'`, its cap min(500, 1000 − concurrency)), so one for most
   * workers (one stream against two: 14 % less server CPU per drained job,
   * bench/sdk-quick.ts --streams; bench/results/streams-2026-12-07.md);
   * 1 poller for `unary`. Each stream has its own HTTP/2 flow-control window:
   * jobs of large payloads over a long round trip may move faster on more.
   */
  streams?: number;
  /** Longest Reserve long poll with the unary transport, in ms. Default 30,000. */
  pollWaitMs?: number;
  /** Backoff between reconnects after connection errors. Defaults 200 ms doubling to 10 s, with jitter. */
  reconnect?: { baseDelayMs?: number; maxDelayMs?: number };
  /**
   * Give up when the server stays unreachable this long, in ms: measured from the
   * first failure of a run of failures that are retried (docs/protocol.md, "What
   * stops a Worker") and started over by a successful (re)connection; with several
   * `streams`, only while every one fails. At the first failed attempt past it the
   * worker stops as it does for a fatal status, and `wait()` rejects with an error
   * of code `unavailable`. A positive integer.
   * Default: undefined, keep trying. (Python: `max_unavailable_ms`.)
   */
  maxUnavailableMs?: number;
  /** Start on the next tick (default true). With false, call `start()`. */
  autostart?: boolean;
  /** The clock for lease extension, timeouts and backoff (tests pass a fake one). */
  clock?: WorkerClock;
  /**
   * Where the worker says what happens: a handler that failed (once per failure, with
   * the job id and the error), a lost lease, a connection problem, and the error that
   * stopped it. Default: the console. `console`-like: each method takes a message
   * and, for a failure, the error.
   */
  logger?: WorkerLogger;
}

/** What a Worker logs through (`console` is one). */
export interface WorkerLogger {
  /**
   * A handler's RetryAfter or DeadLetter (the job went where the handler asked); connected again
   * after an outage; `prefetch: 'auto'` stopping for a queue with flow limits (once).
   */
  info(message: string, ...details: unknown[]): void;
  /** A handler that threw (with the error), a lost lease, a connection problem. */
  warn(message: string, ...details: unknown[]): void;
  /** The error that stopped the worker (a refused API key, a key without the worker role). */
  error(message: string, ...details: unknown[]): void;
}

/** The Worker's events and their arguments. */
export interface WorkerEvents {
  /** A job was delivered and its handler starts. */
  started: [job: WorkerJob];
  /** A job's handler succeeded and its ack (with the handler's return value as result) is durable. */
  completed: [job: WorkerJob, result: unknown];
  /** A job's handler threw and its nack is durable; `result` says where the job went. */
  failed: [job: WorkerJob, error: Error, result: NackResult];
  /** A job's lease was lost; its signal aborted and it will not be settled here (a held job: it never started). */
  leaseLost: [job: WorkerJob, error: LeaseLostError];
  /**
   * A job's attempt passed its hard timeout (`executionTimeoutMs`): its signal aborted with this
   * error (a held job: it never started), and the server failed the attempt (reason `timeout`); it
   * is not settled here.
   */
  timedOut: [job: WorkerJob, error: JobTimeoutError];
  /** A job was cancelled by an operator; its signal aborted (a held job: it never started) and it ends `cancelled` (no retry). */
  cancelled: [job: WorkerJob, error: JobCancelledError];
  /** A job's lease was extended to `leaseDeadline` (server clock). */
  extended: [job: WorkerJob, leaseDeadline: Date];
  /**
   * A connection or settlement problem; the worker keeps going (it reconnects with
   * backoff), unless the server refused to hand it jobs with a status asking again
   * cannot change (`unauthenticated`, `permission_denied`, `invalid_argument`, or
   * UNIMPLEMENTED: docs/protocol.md, "What stops a Worker") or stayed unreachable
   * longer than `maxUnavailableMs` (code `unavailable`): then it closes, and
   * `wait()` rejects with this error.
   */
  error: [error: SeppError];
  /** `close()` finished. */
  closed: [];
}

/** The most jobs a Worker leases ahead (`prefetch`). */
export const maxPrefetch = 1000;

/**
 * The most credit one Work stream may hold unused: the server's default
 * `limits.max_reserve_jobs`, beyond which it ends the stream.
 */
export const maxCreditPerStream = 1000;

/**
 * The Work streams a Worker opens when `streams` is not given: as few as the credit limit per
 * stream allows (one up to 1,000 slots and held jobs), one poller for the unary transport.
 */
export function defaultStreams(transport: 'stream' | 'unary', concurrency: number, prefetch: number): number {
  // Two streams always fit: concurrency and prefetch are at most 1000 each, so each stream's
  // share (makeLanes) is at most 500 + 500.
  return transport === 'unary' ? 1 : Math.ceil((concurrency + prefetch) / maxCreditPerStream);
}

/** A Worker's options checked, with every default filled in: what its constructor wires up. */
export interface ResolvedWorkerOptions {
  readonly queues: readonly string[];
  readonly concurrency: number;
  /** The most jobs held ahead: `prefetch`, or with `prefetch: 'auto'` its cap. */
  readonly prefetch: number;
  /** `prefetch: 'auto'`: the held-ahead limit follows the jobs' run time (worker-auto-prefetch.ts). */
  readonly autoPrefetch: boolean;
  readonly leaseMs: number;
  readonly handlers: Readonly<Record<string, JobHandler>>;
  readonly fallback: JobHandler | undefined;
  readonly workerId: string;
  readonly shutdownTimeoutMs: number;
  readonly transport: 'stream' | 'unary';
  /** Lanes asked for: `streams`, or `defaultStreams`, at most one per slot (makeLanes checks it). */
  readonly laneCount: number;
  readonly pollWaitMs: number;
  readonly reconnectBaseDelayMs: number;
  readonly reconnectMaxDelayMs: number;
  readonly maxUnavailableMs: number | undefined;
  readonly autostart: boolean;
  readonly clock: WorkerClock;
  readonly logger: WorkerLogger;
}

/**
 * Checks what the constructor cannot do without (TypeError otherwise) and fills in every
 * default (those documented on WorkerOptions); `clientTransport` is the client's.
 */
export function resolveWorkerOptions(
  options: WorkerOptions,
  clientTransport: 'stream' | 'unary',
): ResolvedWorkerOptions {
  if (options.queues.length === 0) throw new TypeError('Worker: name at least one queue');
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1000) {
    throw new TypeError('Worker: concurrency must be an integer from 1 to 1000');
  }
  const autoPrefetch = (options.prefetch ?? 'auto') === 'auto';
  const prefetch = autoPrefetch ? autoPrefetchCap(concurrency) : options.prefetch;
  if (typeof prefetch !== 'number' || !Number.isInteger(prefetch) || prefetch < 0 || prefetch > maxPrefetch) {
    throw new TypeError(`Worker: prefetch must be 'auto' or an integer from 0 to ${maxPrefetch}`);
  }
  const leaseMs = options.leaseMs ?? 30_000;
  if (!Number.isInteger(leaseMs) || leaseMs < 3)
    throw new TypeError('Worker: leaseMs must be an integer ≥ 3');
  if (options.handlers === undefined && options.fallback === undefined) {
    throw new TypeError('Worker: give handlers by job type, a fallback handler, or both');
  }
  const { maxUnavailableMs } = options;
  if (maxUnavailableMs !== undefined && (!Number.isSafeInteger(maxUnavailableMs) || maxUnavailableMs < 1)) {
    throw new TypeError(
      `Worker: maxUnavailableMs must be a positive integer number of ms (got ${String(maxUnavailableMs)}); leave it out to keep trying`,
    );
  }
  const transport = options.transport ?? clientTransport;
  return Object.freeze({
    queues: [...options.queues],
    concurrency,
    prefetch,
    autoPrefetch,
    leaseMs,
    handlers: options.handlers ?? {},
    fallback: options.fallback,
    workerId: options.workerId ?? `${hostname()}:${process.pid}`,
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? 30_000,
    transport,
    laneCount: Math.min(concurrency, options.streams ?? defaultStreams(transport, concurrency, prefetch)),
    pollWaitMs: options.pollWaitMs ?? 30_000,
    reconnectBaseDelayMs: options.reconnect?.baseDelayMs ?? 200,
    reconnectMaxDelayMs: options.reconnect?.maxDelayMs ?? 10_000,
    maxUnavailableMs,
    autostart: options.autostart !== false,
    clock: options.clock ?? systemWorkerClock,
    logger: options.logger ?? console,
  });
}
