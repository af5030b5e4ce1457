import { TextRefused } from '../store/store.ts';

/**
 * The one error type of the product. Every layer throws or normalises to a
 * SeppError; the rpc layer maps `code` to a gRPC status and the admin layer to
 * an HTTP status, each with one table.
 */
export type SeppErrorCode =
  | 'invalid_argument'
  | 'not_found'
  | 'lease_lost'
  /** The job was cancelled while this lease was running: stop working on it (gRPC FAILED_PRECONDITION). */
  | 'job_cancelled'
  /** The attempt ran past its hard timeout (timeout_ms): stop working on it (gRPC FAILED_PRECONDITION). */
  | 'job_timed_out'
  | 'failed_precondition'
  /** The thing to create exists already (gRPC ALREADY_EXISTS). */
  | 'already_exists'
  | 'resource_exhausted'
  | 'out_of_range'
  | 'unauthenticated'
  | 'permission_denied'
  | 'unavailable'
  | 'internal';

/** Why one job of an enqueue was refused. Stable strings: they are part of the protocol. */
export type RejectionReason =
  | 'unknown_queue'
  | 'payload_too_large'
  | 'invalid_name'
  | 'metadata_too_large'
  | 'scheduled_too_far'
  | 'queue_full'
  | 'job_type_not_allowed'
  | 'invalid_job'
  /** A job named in depends_on does not exist. */
  | 'unknown_dependency'
  /** A job named in depends_on failed and the policy is `cancel`. */
  | 'dependency_failed'
  /** The store keeps no dependencies. */
  | 'dependencies_unsupported';

export interface JobRejection {
  reason: RejectionReason;
  /** A sentence for people that names the field, the limit and the setting. */
  message: string;
}

export class SeppError extends Error {
  readonly code: SeppErrorCode;
  /** Set when the error is a single job's rejection (Enqueue). */
  readonly rejection: JobRejection | undefined;
  /**
   * Set when the call itself is over a per-call bound (jobs in a batch or a flow, ids or acks
   * in one call, a first job larger than the reserve's answer): no retry of the same call can
   * pass, it must be split or changed. The JSON APIs answer 413 without Retry-After; gRPC
   * keeps RESOURCE_EXHAUSTED.
   */
  readonly requestTooLarge: boolean;
  /**
   * Set when the failure stays until someone acts (a StorageFailure's `lasting`: the database
   * refuses the store's login, a newer sepp migrated the schema): a repeat helps only once
   * someone fixes the server (gRPC `sepp-retry: operator`, HTTP 503 without Retry-After).
   */
  readonly lasting: boolean;

  constructor(
    code: SeppErrorCode,
    message: string,
    options?: { cause?: unknown; rejection?: JobRejection; requestTooLarge?: boolean; lasting?: boolean },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SeppError';
    this.code = code;
    this.rejection = options?.rejection;
    this.requestTooLarge = options?.requestTooLarge ?? false;
    this.lasting = options?.lasting ?? false;
  }

  /** No repeat of the same call passes by itself (`requestTooLarge` or `lasting`): no Retry-After. */
  get noRetryHelps(): boolean {
    return this.requestTooLarge || this.lasting;
  }

  static rejected(rejection: JobRejection): SeppError {
    return new SeppError(rejectionCode[rejection.reason], rejection.message, { rejection });
  }

  /** A call over a per-call bound (`requestTooLarge`); the message names the bound and says how to split the call. */
  static tooLarge(message: string): SeppError {
    return new SeppError('resource_exhausted', message, { requestTooLarge: true });
  }
}

/** How a single job's rejection is reported when it fails a whole call (unary Enqueue). */
export const rejectionCode: Record<RejectionReason, SeppErrorCode> = {
  unknown_queue: 'not_found',
  payload_too_large: 'invalid_argument',
  invalid_name: 'invalid_argument',
  metadata_too_large: 'invalid_argument',
  scheduled_too_far: 'invalid_argument',
  queue_full: 'resource_exhausted',
  job_type_not_allowed: 'failed_precondition',
  invalid_job: 'invalid_argument',
  unknown_dependency: 'not_found',
  dependency_failed: 'failed_precondition',
  dependencies_unsupported: 'failed_precondition',
};

/** Normalises anything thrown into a SeppError; unknown failures become `internal`. */
export function toSeppError(thrown: unknown): SeppError {
  if (thrown instanceof SeppError) return thrown;
  if (thrown instanceof TextRefused)
    return new SeppError('invalid_argument', thrown.message, { cause: thrown });
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return new SeppError('internal', `internal error: ${message}`, { cause: thrown });
}
