/**
 * Errors of the HTTP API: every error is `{"error": {"code", "message"}}`,
 * the code and its status from the table both JSON APIs share
 * (api-schema/error-status.ts).
 */
import {
  type HttpErrorCode,
  httpStatusOf,
  requestTooLargeStatus,
  retriesLater,
} from '../api-schema/error-status.ts';
import { type JobRejection, SeppError, toSeppError } from '../engine/errors.ts';

export { type HttpErrorCode, httpStatusOf };

/** An error only HTTP has, or one with headers of its own (Allow, Retry-After). */
export class HttpError extends Error {
  constructor(
    readonly code: HttpErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface ErrorBody {
  error: {
    code: HttpErrorCode;
    message: string;
    /** A single job's rejection reason (`queue_full`, …), as gRPC's `sepp-rejection-reason` trailer. */
    rejectionReason?: JobRejection['reason'];
  };
}

/** What an error answers: status, headers and body. Internal errors keep their details for the log, not the client. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
  /** Set for a bug (anything not a SeppError or HttpError): the server logs it. */
  bug: SeppError | null;
}

/** How long a client told to retry (429, 503) should wait, in seconds. */
export const retryAfterSeconds = 1;

export function errorAnswer(thrown: unknown): ErrorAnswer {
  if (thrown instanceof HttpError) {
    return {
      status: httpStatusOf[thrown.code],
      headers: withRetryAfter(retriesLater(thrown.code, false), { ...thrown.headers }),
      body: { error: { code: thrown.code, message: thrown.message } },
      bug: null,
    };
  }
  const error = thrown instanceof SeppError ? thrown : toSeppError(thrown);
  if (error.code === 'internal') {
    return {
      status: 500,
      headers: {},
      body: { error: { code: 'internal', message: 'internal error; the server log has the details' } },
      bug: error,
    };
  }
  const body: ErrorBody = { error: { code: error.code, message: error.message } };
  if (error.rejection !== undefined) body.error.rejectionReason = error.rejection.reason;
  // A call over a per-call bound: 413, and no Retry-After, as no retry of it can pass.
  return {
    status: error.requestTooLarge ? requestTooLargeStatus : httpStatusOf[error.code],
    headers: withRetryAfter(retriesLater(error.code, error.noRetryHelps), {}),
    body,
    bug: null,
  };
}

function withRetryAfter(retry: boolean, headers: Record<string, string>): Record<string, string> {
  if (retry && headers['Retry-After'] === undefined) {
    headers['Retry-After'] = String(retryAfterSeconds);
  }
  return headers;
}

export function invalid(message: string): SeppError {
  return new SeppError('invalid_argument', message);
}
