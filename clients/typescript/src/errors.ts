/**
 * The SDK's errors. Every failure of a call is a SeppError carrying the gRPC
 * status and sepp's own code (from the `sepp-error-code` trailer when the
 * server sent one, else derived from the status); rejections and lost leases
 * get their own subclasses so callers can `instanceof` them.
 */
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';

/**
 * sepp's error codes: the server's (sent in the `sepp-error-code` trailer) plus
 * those a call can end with before reaching the server. The list is checked
 * against the server's and the Python client's by tests/interop/error-codes.test.ts.
 */
export const seppErrorCodes = [
  'invalid_argument',
  'not_found',
  'lease_lost',
  'job_cancelled',
  'job_timed_out',
  'failed_precondition',
  'already_exists',
  'resource_exhausted',
  'out_of_range',
  'unauthenticated',
  'permission_denied',
  'unavailable',
  'internal',
  'deadline_exceeded',
  'cancelled',
  'unknown',
] as const;

/** One of `seppErrorCodes`. */
export type SeppErrorCode = (typeof seppErrorCodes)[number];

/** Why the server refused to enqueue a job (the protocol's stable strings). */
export type RejectionReason =
  | 'unknown_queue'
  | 'payload_too_large'
  | 'invalid_name'
  | 'metadata_too_large'
  | 'scheduled_too_far'
  | 'queue_full'
  | 'job_type_not_allowed'
  | 'invalid_job'
  | 'unknown_dependency'
  | 'dependency_failed'
  | 'dependencies_unsupported';

/** One refused job of an enqueue, by its position in the request. */
export interface JobRejection {
  /** Zero-based index of the job in the request (0 for a single enqueue). */
  index: number;
  /** The machine-readable reason. */
  reason: RejectionReason;
  /** A sentence for people naming the field, the limit and the setting. */
  message: string;
}

const codeOfStatus: Partial<Record<status, SeppErrorCode>> = {
  [status.INVALID_ARGUMENT]: 'invalid_argument',
  [status.NOT_FOUND]: 'not_found',
  [status.FAILED_PRECONDITION]: 'failed_precondition',
  [status.ALREADY_EXISTS]: 'already_exists',
  [status.RESOURCE_EXHAUSTED]: 'resource_exhausted',
  [status.OUT_OF_RANGE]: 'out_of_range',
  [status.UNAUTHENTICATED]: 'unauthenticated',
  [status.PERMISSION_DENIED]: 'permission_denied',
  [status.UNAVAILABLE]: 'unavailable',
  [status.INTERNAL]: 'internal',
  [status.DEADLINE_EXCEEDED]: 'deadline_exceeded',
  [status.CANCELLED]: 'cancelled',
};

const knownCodes: ReadonlySet<string> = new Set<string>(seppErrorCodes);

/** The protocol's trailer keys (see proto/sepp/v1/queue_service.proto). */
const errorCodeKey = 'sepp-error-code';
const rejectionReasonKey = 'sepp-rejection-reason';
const retryKey = 'sepp-retry';

/**
 * The server's word on repeating a failed call (its `sepp-retry` trailer, docs/protocol.md):
 * `never`, no repeat of the same call can pass (a call over a per-call bound); `operator`, a
 * repeat passes only once someone fixes the server (its storage refuses the login, a newer sepp
 * migrated the schema): Workers and retries keep backing off, one-shot tools do not advise
 * repeating; `later`, it may pass after a backoff.
 */
export type RetryAdvice = 'never' | 'operator' | 'later';

/** The advice from its wire form (the trailer, or a stream answer's `retry`); undefined when unknown or empty. */
export function retryAdviceOf(text: string | undefined): RetryAdvice | undefined {
  return text === 'never' || text === 'operator' || text === 'later' ? text : undefined;
}

/** The base class of every error a sepp call ends with. */
export class SeppError extends Error {
  override name = 'SeppError';
  /** sepp's code: the server's `sepp-error-code` trailer, or derived from the gRPC status. */
  readonly code: SeppErrorCode;
  /** The gRPC status code (google.rpc.Code numbering, as `status` in @grpc/grpc-js). */
  readonly grpcCode: number;
  /**
   * The server's `sepp-retry` trailer: `never` when no repeat of the same call can pass (the
   * SDK's retries and Workers do not repeat it), `operator` when it passes once someone fixes
   * the server (retried with backoff, as `later`), `later` when it may after a backoff;
   * undefined when the server sent none (the status decides).
   */
  readonly retry: RetryAdvice | undefined;

  /** Builds an error from a gRPC status; `code` defaults to the one the status implies. */
  constructor(
    grpcCode: number,
    message: string,
    options: { code?: SeppErrorCode; cause?: unknown; retry?: RetryAdvice } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.grpcCode = grpcCode;
    this.code = options.code ?? codeOfStatus[grpcCode as status] ?? 'unknown';
    this.retry = options.retry;
  }

  /**
   * True for UNAVAILABLE: the server was not reached, or it stored nothing and asks to try
   * again (`retry` `later`, or `operator`: once someone fixes the server) — unless it marked
   * the error `retry: 'never'`.
   */
  get retryable(): boolean {
    return this.grpcCode === status.UNAVAILABLE && this.retry !== 'never';
  }
}

/**
 * True when the call failed because the server closed its connection with a
 * GOAWAY that carries an error code — as Node's HTTP/2 server does to a
 * connection past its bound of cancelled calls (1,000 at once, then 33 a
 * second: docs/configuration.md, "Cancelled calls per connection"). grpc-js
 * fails every call open on it with INTERNAL ("Session closed with error code
 * 2"). A read, an idempotent call or a subscription may go on over a new
 * connection, as after UNAVAILABLE; the error itself stays INTERNAL, since
 * the server may have applied a call it had already read.
 */
export function connectionClosedByServer(error: SeppError): boolean {
  return error.grpcCode === status.INTERNAL && /Session closed with error code \d+/.test(error.message);
}

/**
 * The server refused to enqueue a job (or, for an atomic enqueue, one or more jobs: nothing was
 * stored). `retry` says what the server's `sepp-retry` trailer says of it: `later` for a full
 * queue (`queue_full`: it may pass once workers drain the queue; with `retry.unavailable` on, the
 * SDK repeats it within the call's deadline first), undefined for a refusal no repeat changes.
 */
export class JobRejectedError extends SeppError {
  override name = 'JobRejectedError';
  /** Why the (first) refused job was refused. */
  readonly reason: RejectionReason;
  /** Every refused job with its index; one entry for a single enqueue. */
  readonly rejections: readonly JobRejection[];

  /**
   * Builds the error from the refusals; the first one's reason and message lead. `retry`: the
   * trailer's advice; without it, what the server advises for these refusals (rejectionsRetry).
   */
  constructor(
    grpcCode: number,
    rejections: readonly JobRejection[],
    options: { cause?: unknown; retry?: RetryAdvice } = {},
  ) {
    const first = rejections[0];
    if (first === undefined) throw new TypeError('JobRejectedError needs at least one rejection');
    const more = rejections.length > 1 ? ` (and ${rejections.length - 1} more refused jobs)` : '';
    const retry = options.retry ?? rejectionsRetry(rejections);
    super(grpcCode, `${first.message}${more}`, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      ...(retry === undefined ? {} : { retry }),
    });
    this.reason = first.reason;
    this.rejections = rejections;
  }
}

/**
 * A `createBatch` or `addToBatch` with `seal` stored its members but the seal that follows them
 * failed (with `retry` on: the members refused `queue_full` were added again first, or the
 * server was older than `seal_if_all_stored`): the batch `batchId` exists and is open. Seal it
 * (`sealBatch(batchId)`) or add more to it; code, status and advice are the failed seal's.
 */
export class BatchLeftOpenError extends SeppError {
  override name = 'BatchLeftOpenError';
  /** The batch that exists, open. */
  readonly batchId: string;

  /** Builds the error from the seal's failure. */
  constructor(batchId: string, sealFailed: SeppError) {
    super(
      sealFailed.grpcCode,
      `batch ${batchId} is stored with its members but left open: sealing it failed: ${sealFailed.message} ` +
        `(seal it with sealBatch('${batchId}'))`,
      {
        code: sealFailed.code,
        cause: sealFailed,
        ...(sealFailed.retry === undefined ? {} : { retry: sealFailed.retry }),
      },
    );
    this.batchId = batchId;
  }
}

/**
 * The lease is gone: an ack, nack or extend carried an attempt that no longer
 * matches (the lease expired and the job was handed out again), or the job is
 * no longer leased at all. The job may be running elsewhere; stop working on it.
 */
export class LeaseLostError extends SeppError {
  override name = 'LeaseLostError';
}

/**
 * The job was cancelled (CancelJob, CancelJobs, the admin UI) while this
 * lease ran: stop working on it. A Worker aborts the handler's `signal` with
 * this error and the job ends `cancelled` — it is not retried, whatever the
 * handler does next. It is also what an ack or extend of that lease fails with
 * (the job is cancelled, not completed).
 */
export class JobCancelledError extends SeppError {
  override name = 'JobCancelledError';

  /** Builds the error from a gRPC status (FAILED_PRECONDITION) and the server's message. */
  constructor(grpcCode: number, message: string, options: { cause?: unknown } = {}) {
    super(grpcCode, message, { ...options, code: 'job_cancelled' });
  }
}

/**
 * The attempt ran past its hard timeout (`executionTimeoutMs` at enqueue, or the queue's
 * `defaultTimeoutMs`): the server refused to extend it and ends it failed with
 * reason `timeout` (the queue's retry policy decides what follows). A Worker
 * aborts the handler's `signal` with this error and settles nothing more of that
 * attempt; it is also what an extend of that lease fails with. A LeaseLostError:
 * the attempt is over, whatever the handler does next.
 */
export class JobTimeoutError extends LeaseLostError {
  override name = 'JobTimeoutError';

  /** Builds the error from a gRPC status (FAILED_PRECONDITION) and the server's message. */
  constructor(grpcCode: number, message: string, options: { cause?: unknown } = {}) {
    super(grpcCode, message, { ...options, code: 'job_timed_out' });
  }
}

/**
 * The `sepp-retry` advice the server gives refusals of these reasons (a unary Enqueue's trailer;
 * a batch's per-job rejections carry none, so the SDK applies the same rule): `later` when every
 * one is `queue_full` — a limit reached for now, which a drained queue lifts — and undefined
 * otherwise (no repeat of the same job can pass by itself).
 */
export function rejectionsRetry(rejections: readonly { reason: RejectionReason }[]): RetryAdvice | undefined {
  return rejections.length > 0 && rejections.every((r) => r.reason === 'queue_full') ? 'later' : undefined;
}

/**
 * Whether the SDK's retries (`retry.unavailable`) may repeat a call that failed with this error,
 * where repeating it is safe: UNAVAILABLE unless marked `never` (SeppError.retryable), or any
 * code the server marked `later` (a limit reached for now: a full queue, a rate). Never for
 * `never` or, outside UNAVAILABLE, `operator` (a repeat passes only once someone fixes the server).
 */
export function retriedByClient(error: SeppError): boolean {
  return error.retryable || error.retry === 'later';
}

/**
 * The call was refused as over a bound of the call itself — more jobs than `limits.max_batch_jobs`,
 * a message over `grpc.max_message_bytes` — which no repeat of the same call can pass
 * (RESOURCE_EXHAUSTED marked `never`), and which stored nothing. The batcher then asks the
 * server's bounds again and sends what was refused once more, cut by them, if they went down.
 */
export function overCallBound(error: SeppError): boolean {
  return error.grpcCode === status.RESOURCE_EXHAUSTED && error.retry === 'never';
}

/** sepp's code from its wire form (a trailer or `Settled.error_code`); undefined when unknown or empty. */
export function errorCodeOf(text: string | undefined): SeppErrorCode | undefined {
  return text !== undefined && knownCodes.has(text) ? (text as SeppErrorCode) : undefined;
}

/** The status a rejection reason fails a single Enqueue with (job.proto). */
export const statusOfRejection: Record<RejectionReason, status> = {
  unknown_queue: status.NOT_FOUND,
  payload_too_large: status.INVALID_ARGUMENT,
  invalid_name: status.INVALID_ARGUMENT,
  metadata_too_large: status.INVALID_ARGUMENT,
  scheduled_too_far: status.INVALID_ARGUMENT,
  queue_full: status.RESOURCE_EXHAUSTED,
  job_type_not_allowed: status.FAILED_PRECONDITION,
  invalid_job: status.INVALID_ARGUMENT,
  unknown_dependency: status.NOT_FOUND,
  dependency_failed: status.FAILED_PRECONDITION,
  dependencies_unsupported: status.FAILED_PRECONDITION,
};

const rejectionReasons: ReadonlySet<string> = new Set(Object.keys(statusOfRejection));

export function isRejectionReason(value: string): value is RejectionReason {
  return rejectionReasons.has(value);
}

function isServiceError(error: unknown): error is ServiceError {
  return (
    error instanceof Error &&
    typeof (error as Partial<ServiceError>).code === 'number' &&
    (error as Partial<ServiceError>).metadata instanceof Metadata
  );
}

function firstValue(metadata: Metadata, key: string): string | undefined {
  const [value] = metadata.get(key);
  return typeof value === 'string' ? value : undefined;
}

/**
 * Normalises anything a call failed with into a SeppError, once. `leaseCall`
 * marks an ack, nack or extend, where NOT_FOUND and FAILED_PRECONDITION mean
 * the lease is lost.
 */
export function toSeppError(error: unknown, leaseCall = false): SeppError {
  if (error instanceof SeppError) return error;
  if (!isServiceError(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new SeppError(status.INTERNAL, `sepp client: ${message}`, { code: 'internal', cause: error });
  }
  const code = errorCodeOf(firstValue(error.metadata, errorCodeKey));
  const message = sdkMessage(error.code, error.details || error.message);
  const reason = firstValue(error.metadata, rejectionReasonKey);
  if (reason !== undefined && isRejectionReason(reason)) {
    const advice = retryAdviceOf(firstValue(error.metadata, retryKey));
    return new JobRejectedError(error.code, [{ index: 0, reason, message }], {
      cause: error,
      ...(advice === undefined ? {} : { retry: advice }),
    });
  }
  const retry =
    retryAdviceOf(firstValue(error.metadata, retryKey)) ??
    (code === undefined && tooLargeForTransport(error.code, message) ? 'never' : undefined);
  return fromStatus(error.code, message, leaseCall, code, error, retry);
}

/**
 * grpc-js's own refusal of a message over its receive or send limit (the server's
 * `grpc.max_message_bytes`: "Received message larger than max (N vs. M)"): RESOURCE_EXHAUSTED
 * with no sepp trailer, which the SDK reads as `retry: 'never'` — the same message can never
 * pass — as the server says it of a call over a per-call bound.
 */
/** What to do about grpc-js's own size refusal, whose words say only the two sizes. */
const tooLargeHint =
  ": a message of this call is larger than the server's grpc.max_message_bytes (the second number, " +
  'in bytes); send fewer jobs or smaller payloads at once, and keep large data in storage with a ' +
  'reference in the job';

export function tooLargeForTransport(grpcCode: number, message: string): boolean {
  return grpcCode === status.RESOURCE_EXHAUSTED && /^(Received|Sent) message larger than max\b/.test(message);
}

/**
 * The server's or grpc-js's words for a status, as an SDK user needs them:
 * UNAUTHENTICATED names the option that sends a key (not the gRPC metadata the
 * server asks for), and grpc-js's connection failure loses its timestamp and
 * its empty "Resolution note:".
 */
export function sdkMessage(grpcCode: number, message: string): string {
  if (grpcCode === status.UNAUTHENTICATED) {
    if (/authorization: Bearer/.test(message)) {
      return (
        'the server needs an API key: pass apiKey to SeppClient.connect(), or set SEPP_API_KEY ' +
        '(`sepp admin new-api-key` makes one)'
      );
    }
    return `the server refused the API key (${message}): check apiKey of SeppClient.connect(), or SEPP_API_KEY`;
  }
  if (tooLargeForTransport(grpcCode, message)) return `${message}${tooLargeHint}`;
  return message
    .replace(/(?: \(\d{4}-\d\d-\d\dT[^)]*\))?\.?\s*Resolution note:\s*$/s, '')
    .replace('Last error: Error: ', 'Last error: ');
}

/** A SeppError (or LeaseLostError) from a status code and message, e.g. from a stream answer. */
export function fromStatus(
  grpcCode: number,
  message: string,
  leaseCall = false,
  code?: SeppErrorCode,
  cause?: unknown,
  retry?: RetryAdvice,
): SeppError {
  const options = {
    ...(code === undefined ? {} : { code }),
    ...(cause === undefined ? {} : { cause }),
    ...(retry === undefined ? {} : { retry }),
  };
  if (code === 'job_cancelled')
    return new JobCancelledError(grpcCode, message, cause === undefined ? {} : { cause });
  if (code === 'job_timed_out')
    return new JobTimeoutError(grpcCode, message, cause === undefined ? {} : { cause });
  if (leaseCall && (grpcCode === status.NOT_FOUND || grpcCode === status.FAILED_PRECONDITION)) {
    return new LeaseLostError(grpcCode, message, {
      code: code ?? (grpcCode === status.FAILED_PRECONDITION ? 'lease_lost' : 'not_found'),
      ...(cause === undefined ? {} : { cause }),
    });
  }
  return new SeppError(grpcCode, message, options);
}

/** The error for calls that fail because the client (or a stream of it) was closed. */
export function closedError(what: string): SeppError {
  return new SeppError(status.CANCELLED, `${what}: the sepp client is closed`);
}
