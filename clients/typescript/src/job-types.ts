/**
 * The SDK's public shapes for jobs: producing, leasing, settling. types.ts
 * gathers them with queue-types.ts and control-types.ts.
 */
import type { RejectionReason } from './errors.ts';

/** A job's payload: bytes as they are, or a string sent as UTF-8. */
export type Payload = Uint8Array | string;

/** A point in time: a `Date`, or milliseconds since the Unix epoch. */
export type TimeInput = Date | number;

/** Options every call accepts. */
export interface CallOptions {
  /** Give up after this long, in ms (default: the client's `defaultDeadlineMs`). */
  deadlineMs?: number;
  /** Cancels the call (unary calls only; an enqueue on the stream cannot be taken back). */
  signal?: AbortSignal;
}

/** Options of pauseQueue and resumeQueue. */
export interface QueueActionOptions extends CallOptions {
  /** Create the queue when nobody has used it yet (else NOT_FOUND): to pause a queue before its first job. */
  allowMissing?: boolean;
}

/** How to enqueue a job; everything is optional. */
export interface EnqueueOptions {
  /**
   * MIME type of the payload. Defaults to `application/json` for
   * `enqueueJson`, `text/plain; charset=utf-8` for a string payload, and
   * none (the server says `application/octet-stream`) for bytes.
   */
  contentType?: string;
  /** 0 to 9; higher runs first. Default 0. */
  priority?: number;
  /** When the job may run (past times mean now). Give this or `delayMs`, not both. */
  runAt?: TimeInput;
  /** Run the job this many ms after the server accepts it. Give this or `runAt`, not both. */
  delayMs?: number;
  /** Deliveries before the job goes dead; default the queue's (5 unless configured). */
  maxAttempts?: number;
  /**
   * Deduplication key: a second job with the same key on the same queue is not
   * stored while the key is taken, and the first job's id comes back with
   * `deduplicated: true`. A key is taken for the queue's dedup window (also
   * after its job completed) and beyond it while the job is unfinished;
   * cancelling the job or deleting its dead letter frees it. Also what makes
   * an enqueue safe to retry.
   */
  idempotencyKey?: string;
  /**
   * With `idempotencyKey`: the key is a duplicate exactly while a job holding
   * it is waiting, scheduled, ready or leased (whatever the dedup window), and free
   * again once that job finished: at most one unfinished job per key.
   */
  uniqueWhileActive?: boolean;
  /**
   * Debounce key (docs/protocol.md, "Debounce"): when the queue holds a job with
   * this key that waits and was never leased, that job absorbs this enqueue — it
   * takes this payload, content type and metadata, and runs `debounceMs` from now,
   * never later than its first enqueue + its `debounceMaxMs` — and the answer has
   * its id with `debounced: true`. Otherwise a new job is stored, due in
   * `debounceMs`. Not with `runAt`/`delayMs`, `ttlMs`/`expiresAt`,
   * `idempotencyKey` or `dependsOn`, nor in `enqueueAtomic` or a flow.
   */
  debounceKey?: string;
  /** With `debounceKey`: the quiet period in ms (the job runs once no enqueue with its key came for this long); default 0. */
  debounceMs?: number;
  /** With `debounceKey`: the longest the job may be pushed back from its first enqueue, in ms; 0 or absent: no cap. */
  debounceMaxMs?: number;
  /**
   * Ids of jobs this job waits for: it is stored `waiting` and becomes ready in
   * the transaction that completes the last of them. At most the server's
   * `limits.max_dependencies_per_job` (default 100).
   */
  dependsOn?: readonly string[];
  /**
   * What a failed dependency (dead, cancelled, expired) does to this job:
   * `cancel` (the default) cancels it, `run` runs it anyway, `wait` keeps it
   * waiting until the failed job is requeued and completes. Only with `dependsOn`
   * (in a flow, or `after`): without them the call throws INVALID_ARGUMENT.
   */
  onDependencyFailure?: 'cancel' | 'run' | 'wait';
  /**
   * Do not start the job after this long from the enqueue, in ms (a TTL). A
   * job not handed out in time goes to the dead letters with reason
   * `expired` (or is deleted, per the queue's `expiredAction`). Give this or
   * `expiresAt`, not both.
   */
  ttlMs?: number;
  /**
   * Hard execution timeout of each attempt, in ms from its lease (the server's
   * clock). Once it passes, the server refuses to extend the lease, ends the
   * attempt failed with reason `timeout` (retried per the queue's backoff; dead
   * with reason `timeout` on the last attempt), and a Worker aborts the handler's
   * `signal` with a JobTimeoutError. 0 or absent: the queue's `defaultTimeoutMs`.
   * (The protocol's `timeout_ms`; named apart from the `timeoutMs` of the waits.)
   */
  executionTimeoutMs?: number;
  /** Do not start the job at or after this time. Give this or `ttlMs`, not both. */
  expiresAt?: TimeInput;
  /** String pairs stored with the job and handed to the worker. */
  metadata?: Readonly<Record<string, string>>;
  /**
   * W3C trace context to store with the job. Default: the active
   * OpenTelemetry context's, when OpenTelemetry is set up.
   */
  traceparent?: string;
  /** W3C `tracestate` that goes with `traceparent`. */
  tracestate?: string;
  /**
   * The job's group: a tenant, a customer, an account. Leases take turns
   * across the groups of a queue, and the queue's group limits
   * (`group_max_leased`, a group rate limit) apply per group. Letters, digits
   * and `. _ : -`, at most 128 characters. Default: no group.
   */
  group?: string;
  /** Give up waiting for the answer after this long, in ms (the job may still be stored). */
  deadlineMs?: number;
}

/** One job of `enqueueBatch` or `enqueueAtomic`. */
export interface JobSpec extends Omit<EnqueueOptions, 'deadlineMs'> {
  /** Queue to put the job on. */
  queue: string;
  /** Job type: which handler runs it. */
  type: string;
  /** The job's input as bytes or text. Give this or `json`. */
  payload?: Payload;
  /** The job's input as a value to send as JSON (content type `application/json`). */
  json?: unknown;
}

/** An enqueued job. */
export interface Enqueued {
  /** The job's id (the original job's id when deduplicated). */
  id: string;
  /** True when the idempotency key was seen before and nothing new was stored. */
  deduplicated: boolean;
  /** True when a waiting job with the same debounce key absorbed the enqueue: `id` is that job's. */
  debounced: boolean;
}

/** The outcome of one job of `enqueueBatch`: stored, or refused with a reason. */
export type EnqueueOutcome =
  | ({ ok: true } & Enqueued)
  | {
      ok: false;
      /** Why the job was refused. */
      reason: RejectionReason;
      /** A sentence for people. */
      message: string;
    };

/** Where a job is in its lifecycle. */
export type JobState = 'scheduled' | 'ready' | 'leased' | 'completed' | 'dead' | 'cancelled' | 'waiting';

/** Why a job is dead. */
export type DeadReason = 'attempts_exhausted' | 'lease_expired' | 'dead_lettered' | 'expired' | 'timeout';

/** How to ack with `SeppClient.ack`. */
export interface AckOptions extends CallOptions {
  /**
   * The job's result, encoded as a handler's return value is: a `JobResult`
   * as given, bytes as `application/octet-stream`, a string as text, anything
   * else as JSON; `undefined` means none. At most the server's
   * `max_result_bytes` (default 64 KiB).
   */
  result?: unknown;
}

/** What identifies a lease: the job and the attempt it was given (the fencing token). A LeasedJob is one. */
export interface LeaseRef {
  /** The job's id. */
  readonly id: string;
  /** The lease's attempt number. */
  readonly attempt: number;
}

/** One ack of `ackBatch`: a lease, optionally with its result (as `AckOptions.result`). */
export type AckSpec = LeaseRef & { readonly result?: unknown };

/** What to lease with `reserve`. */
export interface ReserveOptions extends CallOptions {
  /** Queues to take jobs from, in order of preference. */
  queues: readonly string[];
  /** Most jobs to lease (default 1). */
  maxJobs?: number;
  /** How long the leases last, in ms (default: each queue's default lease). */
  leaseMs?: number;
  /** How long to wait for a job when none is ready, in ms (a long poll; default 0). */
  waitMs?: number;
  /** Names this worker in GetJob and the admin UI. */
  workerId?: string;
}

/** How to fail an attempt with `nack`. */
export interface NackOptions extends CallOptions {
  /**
   * What went wrong; kept in the job's error history. An `Error` also sends its class
   * (`error.name`, or its constructor's name) and its stack, so the admin UI shows them
   * per attempt and groups dead letters by class ("top errors"). Only what the error
   * itself holds is sent: give a string to send the message alone.
   */
  error?: string | Error;
  /** Retry after exactly this many ms instead of the queue's backoff (0 = at once). */
  retryAfterMs?: number;
  /** Dead-letter the job now, whatever attempts it has left. */
  deadLetter?: boolean;
  /**
   * The job never started: give its lease back. It is ready again with no attempt counted
   * (even on its last attempt), its rate-limit tokens returned; `error`, `retryAfterMs` and
   * `deadLetter` are ignored. The job keeps its attempt number and its `maxAttempts` grows by
   * one, so this lease stays stale once the job is leased again (a repeated give-back too).
   * Needs a server with the `nack_give_back` feature (`getServerInfo().features`): an older
   * one reads it as a nack with backoff, an attempt counted. Not checked here (a call).
   */
  giveBack?: boolean;
}

/** Where a nacked job went. */
export interface NackResult {
  /** `ready` (retry at once), `scheduled` (retry at `runAt`), `dead`, or `cancelled` (a cancel was asked for). */
  state: 'ready' | 'scheduled' | 'dead' | 'cancelled';
  /** When the job runs again; null when dead. */
  runAt: Date | null;
}

/** The outcome of one ack of `ackBatch`. */
export interface AckResult {
  /**
   * `ok`, or why the ack failed: the job is not leased (`not_found`), leased
   * again (`lease_lost`), or was cancelled while it ran (`cancelled`: it is
   * cancelled now, not completed).
   */
  outcome: 'ok' | 'not_found' | 'lease_lost' | 'cancelled';
  /** Why it failed, for people; empty when ok. */
  message: string;
}

/** The error of one failed attempt. */
export interface AttemptError {
  /** The attempt that failed (1 = first delivery). */
  attempt: number;
  /** When it failed. */
  at: Date;
  /** The worker's error message, or the server's note that the lease expired. */
  error: string;
  /** The class of the error the worker's code threw (`TypeError`); null: none sent. */
  errorClass: string | null;
  /** Its stack trace as the worker sent it; null: none sent. */
  stack: string | null;
}
