/**
 * What both HTTP doors (the admin API and the HTTP API) answer when Node's parser gives up on a
 * request's bytes, or the request takes too long to arrive: a JSON error written on the raw
 * socket, which then closes. Each door words the error in its own codes; the framing is here.
 */
import type { Duplex } from 'node:stream';

/** What Node's parser hands to 'clientError': llhttp's code and reason, and the packet it failed on. */
export type ClientError = Error & { code?: string; reason?: string; rawPacket?: Buffer };

/** What went wrong, as both doors' error codes name it, with its message and status reason. */
export interface ClientErrorWords {
  code: 'headers_too_large' | 'request_timeout' | 'invalid_argument';
  message: string;
  reason: string;
}

/** `timeoutSetting`: the setting a request's deadline comes from, named in its message. */
export function clientErrorWords(error: ClientError, timeoutSetting?: string): ClientErrorWords {
  if (error.code === 'HPE_HEADER_OVERFLOW')
    return {
      code: 'headers_too_large',
      message: 'the request headers are too large',
      reason: 'Request Header Fields Too Large',
    };
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return {
      code: 'request_timeout',
      message: `the request took too long to arrive${timeoutSetting === undefined ? '' : ` (${timeoutSetting})`}`,
      reason: 'Request Timeout',
    };
  return {
    code: 'invalid_argument',
    message: `malformed HTTP request: ${error.reason ?? error.code ?? 'unreadable'}`,
    reason: 'Bad Request',
  };
}

/** A door's answer: its status line, its JSON body and its own headers. */
export interface RawAnswer {
  status: number;
  reason: string;
  json: string;
  headers?: readonly (readonly [string, string])[];
}

/**
 * Writes `answer` on the socket and closes it; a connection that reset, or whose response is
 * already under way, is destroyed instead (a second response cannot follow the first).
 */
export function answerClientError(error: ClientError, socket: Duplex, answer: RawAnswer): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  // An answer to HEAD has no body, and a client reading one would take the body for the next answer.
  // The packet the parser failed on may begin with an earlier request (pipelined, or the rest of its
  // body), so a HEAD anywhere in it, not only at its start, means no body (and a length of 0). A
  // deadline that passed has no packet: its answer says why.
  const withBody = error.rawPacket === undefined || !error.rawPacket.toString('latin1').includes('HEAD ');
  const body = withBody ? answer.json : '';
  const headers = [
    ['Content-Type', 'application/json'],
    ['Content-Length', String(Buffer.byteLength(body))],
    ['Cache-Control', 'no-store'],
    ['Connection', 'close'],
    ...(answer.headers ?? []),
  ];
  socket.end(
    `HTTP/1.1 ${answer.status} ${answer.reason}\r\n${headers.map(([n, v]) => `${n}: ${v}`).join('\r\n')}\r\n\r\n${body}`,
  );
}
