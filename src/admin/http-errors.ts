/**
 * Errors over HTTP: every error response is `{"error": {"code", "message"}}`
 * with the status from one table. Engine errors keep their SeppError code;
 * the few failures only HTTP has (a body too large, a wrong method, a request
 * too malformed to reach the app) get codes of their own. Every message is at
 * most 1 KiB (config/bounded-message.ts).
 */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import {
  type HttpErrorCode,
  requestTooLargeStatus,
  retriesLater,
  httpStatusOf as sharedStatusOf,
} from '../api-schema/error-status.ts';
import { boundMessage } from '../config/index.ts';
import { SeppError, toSeppError } from '../engine/errors.ts';

/** The admin API's codes: the shared ones but `unsupported_media_type` (a body that is not JSON is invalid_argument there). */
export type AdminErrorCode = Exclude<HttpErrorCode, 'unsupported_media_type'>;

/** The admin API's part of the table both JSON APIs share. */
export const httpStatusOf: Readonly<Record<AdminErrorCode, ContentfulStatusCode>> = (() => {
  const { unsupported_media_type: _, ...admin } = sharedStatusOf;
  return admin;
})();

/** An error raised by the admin layer itself, with an HTTP-only code or extra headers. */
export class AdminHttpError extends Error {
  constructor(
    readonly code: AdminErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'AdminHttpError';
  }
}

export interface ErrorBody {
  error: { code: AdminErrorCode; message: string };
}

/** The error JSON; its message is cut to messageBytesMax (1 KiB), whatever the request quoted into it. */
export function errorBody(code: AdminErrorCode, message: string): ErrorBody {
  return { error: { code, message: boundMessage(message) } };
}

export function errorResponse(
  c: Context,
  code: AdminErrorCode,
  message: string,
  status: ContentfulStatusCode = httpStatusOf[code],
): Response {
  c.header('Cache-Control', 'no-store');
  return c.json(errorBody(code, message), status);
}

/**
 * Turns anything thrown by a handler into an error response. Internal errors
 * are logged by the caller and answered without their details: a message from
 * deep inside may name files or SQL.
 */
export function toErrorResponse(
  c: Context,
  thrown: unknown,
): { response: Response; internal: SeppError | null } {
  if (thrown instanceof AdminHttpError) {
    for (const [name, value] of Object.entries(thrown.headers)) c.header(name, value);
    return { response: errorResponse(c, thrown.code, thrown.message), internal: null };
  }
  const error = thrown instanceof SeppError ? thrown : toSeppError(thrown);
  if (error.code === 'internal') {
    return {
      response: errorResponse(c, 'internal', 'internal error; the server log has the details'),
      internal: error,
    };
  }
  // A limit reached or the storage away: worth a retry in a moment, as the HTTP API says too. A
  // call over a per-call bound is not: 413, with no Retry-After.
  if (retriesLater(error.code, error.noRetryHelps)) c.header('Retry-After', '1');
  const status = error.requestTooLarge ? requestTooLargeStatus : httpStatusOf[error.code];
  return { response: errorResponse(c, error.code, error.message, status), internal: null };
}
