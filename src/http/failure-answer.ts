/**
 * The HTTP API's answer to a request that failed (any error a step or its handler threw):
 * the one error shape (errors.ts), with the operation's own field names, and what then happens
 * to a body left partly unread.
 *
 * Closing at once, with the body's bytes still arriving, made the kernel reset the connection,
 * and a client still sending lost the answer it had not yet read. So the answer goes out whole,
 * and the response ends once the rest of the body has been read and dropped: at most
 * http.max_request_bytes of it, within the request's deadline, or the connection is closed
 * (platform/unread-body.ts). The connection then serves the next request, unless the body was
 * over the limit (declared, or a 413 while its chunks came): that connection closes once the
 * body has come. A client that sent `Expect: 100-continue` and was not told to send its body
 * may never send it: its connection closes after the answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dropUnreadBody } from '../platform/unread-body.ts';
import type { ApiNames } from './api-names.ts';
import { errorAnswer } from './errors.ts';
import { sendJson } from './json-answer.ts';

/** Where the HTTP layer writes log lines (the server's logger; http does not import telemetry). */
export interface HttpLog {
  warn(event: string, fields?: Readonly<Record<string, string | number | boolean>>): void;
  error(event: string, fields?: Readonly<Record<string, string | number | boolean>>): void;
}

export interface FailedRequest {
  req: IncomingMessage;
  res: ServerResponse;
  /** `METHOD /path` of the route, or of the request as it came when no route matched. */
  operation: string;
  /** The route's names for the fields the engine's messages name; undefined before a route matched. */
  names: ApiNames | undefined;
  /** The client waits for a 100 Continue before it sends its body. */
  bodyHeldBack: boolean;
  maxRequestBytes: number;
  /** The server is shutting down. */
  closing: boolean;
  log: HttpLog | undefined;
}

export function answerFailure(error: unknown, failed: FailedRequest): void {
  const { req, res } = failed;
  if (res.headersSent || res.writableEnded || res.destroyed) {
    res.destroy();
    return;
  }
  const answer = errorAnswer(error);
  if (failed.names !== undefined) answer.body.error.message = failed.names.rewrite(answer.body.error.message);
  if (answer.bug !== null) {
    try {
      failed.log?.error('http.internal_error', { operation: failed.operation, error: answer.bug.message });
    } catch {
      // A failing log sink must not turn a handled error into an unhandled one.
    }
  }
  const send = (headers: Readonly<Record<string, string>>, end = true) =>
    sendJson(res, { status: answer.status, value: answer.body, headers, closing: failed.closing, end });
  if (req.complete) {
    send(answer.headers);
    return;
  }
  if (failed.bodyHeldBack) {
    // Told nothing, the client may never send the body: nothing to wait for.
    send({ ...answer.headers, Connection: 'close' });
    return;
  }
  const overLimit =
    answer.status === 413 || Number(req.headers['content-length'] ?? 0) > failed.maxRequestBytes;
  send({ ...answer.headers, ...(overLimit ? { Connection: 'close' } : {}) }, false);
  dropUnreadBody(req, failed.maxRequestBytes, () => res.end());
}
