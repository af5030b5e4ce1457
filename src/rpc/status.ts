/**
 * The one table from engine error codes to gRPC status codes (SPEC §3), and
 * the conversion of anything thrown into a ServiceError for grpc-js. Every
 * message sepp answers with, as a status or inside a response (a Produce or
 * Work answer, a job's rejection), goes through `wireMessage`: at most
 * messageBytesMax (1 KiB), whatever the request quoted into it.
 */
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { retryAdvice } from '../api-schema/error-status.ts';
import { boundMessage } from '../config/index.ts';
import { type SeppError, type SeppErrorCode, toSeppError } from '../engine/errors.ts';

export const grpcStatusOf: Record<SeppErrorCode, status> = {
  invalid_argument: status.INVALID_ARGUMENT,
  not_found: status.NOT_FOUND,
  lease_lost: status.FAILED_PRECONDITION,
  job_cancelled: status.FAILED_PRECONDITION,
  job_timed_out: status.FAILED_PRECONDITION,
  failed_precondition: status.FAILED_PRECONDITION,
  already_exists: status.ALREADY_EXISTS,
  resource_exhausted: status.RESOURCE_EXHAUSTED,
  out_of_range: status.OUT_OF_RANGE,
  unauthenticated: status.UNAUTHENTICATED,
  permission_denied: status.PERMISSION_DENIED,
  unavailable: status.UNAVAILABLE,
  internal: status.INTERNAL,
};

/** Trailing metadata key carrying a unary Enqueue's rejection reason (the engine's string). */
export const rejectionReasonKey = 'sepp-rejection-reason';
/** Trailing metadata key carrying the engine error code, so clients can tell lease_lost from other preconditions. */
export const errorCodeKey = 'sepp-error-code';
/**
 * Trailing metadata key saying whether repeating the call can help, by the rule the JSON APIs'
 * Retry-After follows (api-schema/error-status.ts): `never` (a call over a per-call bound),
 * `operator` (a storage failure that lasts until someone fixes the server: long-running clients
 * keep backing off, one-shot tools do not advise repeating), `later` (a limit reached for now,
 * storage away), absent otherwise. A trailer rather than google.rpc.RetryInfo: RetryInfo can
 * only say "later", and its absence says nothing, while `never` is what a retrying client must see.
 */
export const retryKey = 'sepp-retry';

/** An error's message as it goes on the wire: cut to messageBytesMax bytes (config/bounded-message.ts). */
export function wireMessage(error: { readonly message: string }): string {
  return boundMessage(error.message);
}

/**
 * The `sepp-retry` advice of an error answered inside a stream's response rather than as a
 * status (a Produce message's or flow's `retry`, a Work settlement's `Settled.retry`): the
 * trailer's words, or '' when it would carry none.
 */
export function wireRetry(error: SeppError): string {
  return retryAdvice(error.code, error) ?? '';
}

export function toServiceError(thrown: unknown): Partial<ServiceError> {
  const error = toSeppError(thrown);
  const metadata = new Metadata();
  metadata.set(errorCodeKey, error.code);
  if (error.rejection) metadata.set(rejectionReasonKey, error.rejection.reason);
  const retry = wireRetry(error);
  if (retry !== '') metadata.set(retryKey, retry);
  return { code: grpcStatusOf[error.code], details: wireMessage(error), metadata };
}
