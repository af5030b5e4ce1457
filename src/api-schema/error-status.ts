/**
 * The error codes both JSON APIs (the admin API in src/admin, the HTTP API in src/http) answer
 * with, and the one table from code to HTTP status: the SeppError codes gRPC carries in its
 * `sepp-error-code` trailer, and the few failures only HTTP has (a body too large, a wrong method
 * or content type, a request that took too long). docs/http.md prints the table. One exception:
 * a `resource_exhausted` whose call is itself over a per-call bound (SeppError.requestTooLarge)
 * answers 413, as no retry of the same call can pass.
 */
import type { SeppErrorCode } from '../engine/errors.ts';

export type HttpErrorCode =
  | SeppErrorCode
  | 'payload_too_large'
  | 'method_not_allowed'
  | 'unsupported_media_type'
  | 'request_timeout'
  | 'headers_too_large';

export const httpStatusOf = {
  invalid_argument: 400,
  unauthenticated: 401,
  permission_denied: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  lease_lost: 409,
  job_cancelled: 409,
  job_timed_out: 409,
  failed_precondition: 409,
  already_exists: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  out_of_range: 416,
  resource_exhausted: 429,
  headers_too_large: 431,
  internal: 500,
  unavailable: 503,
} as const satisfies Readonly<Record<HttpErrorCode, number>>;

/** The status of a `resource_exhausted` error whose call is over a per-call bound (SeppError.requestTooLarge). */
export const requestTooLargeStatus = 413;

/**
 * Whether an answer tells the client to retry after a moment (HTTP Retry-After, gRPC
 * `sepp-retry: later`): a limit reached for now, or storage away — unless no repeat of the
 * call helps by itself (SeppError.noRetryHelps: a call over a per-call bound, a lasting storage
 * failure).
 */
export function retriesLater(code: HttpErrorCode, noRetryHelps: boolean): boolean {
  return !noRetryHelps && (code === 'resource_exhausted' || code === 'unavailable');
}

/**
 * What gRPC's `sepp-retry` trailer says: `never` (a call over a per-call bound: no repeat of it
 * can pass), `operator` (a lasting storage failure: a repeat passes once someone fixes the server,
 * so long-running clients keep backing off), `later` (retriesLater), or nothing.
 */
export function retryAdvice(
  code: HttpErrorCode,
  error: { readonly requestTooLarge: boolean; readonly lasting: boolean },
): 'never' | 'operator' | 'later' | undefined {
  if (error.requestTooLarge) return 'never';
  if (error.lasting) return 'operator';
  return retriesLater(code, false) ? 'later' : undefined;
}
