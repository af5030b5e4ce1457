/**
 * Serves an admin app on a socket with @hono/node-server: plain HTTP, or HTTPS
 * when given a certificate and key. The composition root decides the address
 * and owns the returned server's lifetime (close it on shutdown).
 *
 * Some requests never reach the app: bytes Node's parser refuses (CR or NUL
 * in a header, a broken request line, headers over Node's limit) and
 * requests that parse but are no valid URL (a bad or missing Host, a raw
 * non-ASCII byte in the path). They are answered here, in the API's one
 * error shape with its security headers, instead of Node's empty 400.
 *
 * An answer that leaves part of its request's body unread (the app's, or the
 * refusal of a bad Host here) is followed by reading and dropping the rest, up
 * to the admin body limit, so the connection stays usable and no reset cuts
 * off the answer (dropUnreadBody). This port never answers `Expect:
 * 100-continue` with 100 Continue: admin bodies are small, and a client told
 * nothing sends its body after a pause (curl, after 1 s) or not at all.
 *
 * Connections are capped (1,024 by default), and so are the requests one
 * has open (pipelined: platform/pipelined-requests.ts). A client that
 * trickles its headers or body holds a connection, so both have deadlines
 * (10 s for the headers, 30 s for the whole request; Node's defaults are
 * 60 s and 300 s). Node checks them on a timer that by default
 * fires only every 30 s, which stretched the 10 s to 40 s: the timer here
 * runs at a tenth of the shorter deadline, at most once a second. A client
 * that takes nothing of an answer for 30 s (reads none of it) has its
 * connection closed (platform/write-deadline.ts); one that reads slowly keeps
 * it. An answer of the app is one write, so once the kernel's buffers are
 * full the client must take the rest of it within those 30 s.
 */

import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { getRequestListener, RequestError } from '@hono/node-server';
import type { Hono } from 'hono';
import { answerClientError, type ClientError, clientErrorWords } from '../platform/client-error-answer.ts';
import { admitRequest } from '../platform/pipelined-requests.ts';
import { dropUnreadBody } from '../platform/unread-body.ts';
import { WriteDeadline, type WriteTimeout } from '../platform/write-deadline.ts';
import { type AdminErrorCode, errorBody, httpStatusOf } from './http-errors.ts';
import { securityHeaderEntries } from './security.ts';

export interface ServeAdminOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  /** PEM certificate chain and private key. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** How long a client may take to send its headers. Default 10 s. */
  headersTimeoutMs?: number;
  /** How long a client may take to send its whole request, body included. Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * The most bytes of an unread body read and dropped after the answer; past them the
   * connection is closed. Default 2 MiB, the app's body limit.
   */
  maxUnreadBodyBytes?: number;
  /** Connections open at once; one more is closed as it arrives. Default 1,024. */
  maxConnections?: number;
  /** How long a client may take nothing of an answer before its connection is closed. Default 30 s. */
  writeTimeoutMs?: number;
  /** Told of each connection closed for the write deadline (the server logs it). */
  onWriteTimeout?: (timeout: WriteTimeout) => void;
}

export const defaultHeadersTimeoutMs = 10_000;
export const defaultRequestTimeoutMs = 30_000;
export const defaultWriteTimeoutMs = 30_000;
/** The admin app's body limit (AdminDeps.maxBodyBytes' default): no more of an unread body is dropped. */
export const defaultMaxUnreadBodyBytes = 2 * 1024 * 1024;
/**
 * Connections the admin port holds at once: each is a file descriptor of the process, which the
 * gRPC and HTTP API doors and the store need too. Without a bound, a client that opened
 * connections faster than the header deadline closed them used up every descriptor, and no
 * door could accept a connection. A browser holds about six; Prometheus one.
 */
export const defaultMaxConnections = 1024;

export interface AdminServer {
  /** The bound address (the real port when 0 was asked). */
  address: AddressInfo;
  url: string;
  /** Connections: open now, and closed for the write deadline since the start (tests). */
  connections(): Promise<{ open: number; writeTimeouts: number }>;
  /** Connections closed for the write deadline since the start (metrics). */
  writeTimeouts(): number;
  close(): Promise<void>;
}

export function serveAdmin(app: Hono, options: ServeAdminOptions): Promise<AdminServer> {
  const tls = options.tls !== undefined;
  // No default host name: a request without a Host header is refused (RFC 9112), in JSON.
  const listener = getRequestListener(app.fetch, {
    // Its own clean-up of an unread body closed the connection 500 ms after the answer, with bytes
    // possibly still arriving (see dropUnreadBody).
    autoCleanupIncoming: false,
    errorHandler: (error) =>
      error instanceof RequestError
        ? answerOutsideApp(
            'invalid_argument',
            `the request's URL or Host header is not valid (${error.message})`,
            tls,
          )
        : // The app answers its own errors; reaching here is a bug, told without its details.
          answerOutsideApp('internal', 'internal error; the server log has the details', tls),
  });
  const headersTimeout = options.headersTimeoutMs ?? defaultHeadersTimeoutMs;
  const requestTimeout = options.requestTimeoutMs ?? defaultRequestTimeoutMs;
  // Node's own check would answer a missing Host with an empty 400; the listener answers it in JSON.
  const serverOptions = {
    requireHostHeader: false,
    headersTimeout,
    requestTimeout,
    connectionsCheckingInterval: Math.max(
      10,
      Math.min(1000, Math.ceil(Math.min(headersTimeout, requestTimeout) / 10)),
    ),
  };
  const maxUnreadBodyBytes = options.maxUnreadBodyBytes ?? defaultMaxUnreadBodyBytes;
  const writeTimeoutMs = options.writeTimeoutMs ?? defaultWriteTimeoutMs;
  const writeDeadline = new WriteDeadline({
    timeoutMs: () => writeTimeoutMs,
    onTimeout: (timeout) => options.onWriteTimeout?.(timeout),
  });
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    // Past the open requests a connection may have (pipelining), it is closed: nothing is done for it.
    if (admitRequest(request, response) === null) return;
    writeDeadline.watch(request.socket);
    response.once('finish', () => dropUnreadBody(request, maxUnreadBodyBytes));
    // A body declared longer than what is dropped after an answer ends its connection: say so in
    // the answer, so that a client does not send its next request on a connection about to close.
    if (Number(request.headers['content-length'] ?? 0) > maxUnreadBodyBytes)
      response.setHeader('Connection', 'close');
    // @hono/node-server passes a Host made of host-name characters straight through, so a
    // value no URL can hold (999.1.1.1, 1.2.3.4.5, xn--zz) failed later, inside the app, as a
    // 500. Refuse it here like any other bad Host.
    const host = request.headers.host;
    if (host !== undefined && !URL.canParse(`http://${host}/`)) {
      writeOutsideApp(
        response,
        'invalid_argument',
        `the request's URL or Host header is not valid (Host ${JSON.stringify(host.slice(0, 100))})`,
        tls,
      );
      return;
    }
    return listener(request, response);
  };
  const server: Server =
    options.tls === undefined
      ? createHttpServer(serverOptions, handler)
      : createHttpsServer({ ...serverOptions, cert: options.tls.cert, key: options.tls.key }, handler);
  // Node's default answers 100 Continue at once, before the app has looked at the session, and
  // invites a body the answer may not need. Told nothing, the client holds its body back (or
  // sends it after a pause): the connection closes after the answer, so nothing waits for it.
  server.maxConnections = options.maxConnections ?? defaultMaxConnections;
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    response.setHeader('Connection', 'close');
    handler(request, response);
  });
  server.on('clientError', (error: ClientError, socket: Duplex) => answerUnparsed(error, socket, tls));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      const info = server.address() as AddressInfo;
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        address: info,
        url: `${tls ? 'https' : 'http'}://${host}:${info.port}`,
        writeTimeouts: () => writeDeadline.closed,
        connections: () =>
          new Promise((done) =>
            server.getConnections((error, open) =>
              done({ open: error ? 0 : open, writeTimeouts: writeDeadline.closed }),
            ),
          ),
        close: () =>
          new Promise<void>((done, fail) => {
            server.close((error) => (error ? fail(error) : done()));
            // Idle keep-alive connections would hold close() open.
            server.closeAllConnections();
            writeDeadline.stop();
          }),
      });
    });
  });
}

function errorJson(code: AdminErrorCode, message: string): string {
  return JSON.stringify(errorBody(code, message));
}

function outsideAppHeaders(tls: boolean): [string, string][] {
  return [['Content-Type', 'application/json'], ['Cache-Control', 'no-store'], ...securityHeaderEntries(tls)];
}

function answerOutsideApp(code: AdminErrorCode, message: string, tls: boolean): Response {
  return new Response(errorJson(code, message), {
    status: httpStatusOf[code],
    headers: outsideAppHeaders(tls),
  });
}

/**
 * The same answer written to Node's response, for requests refused before the app sees them.
 * The connection stays open, as after any answer: closing it at once, with the request's body
 * still arriving, could reset it before the client read the answer; the body is dropped
 * (dropUnreadBody) and the next request on the connection is checked as any other.
 */
function writeOutsideApp(
  response: ServerResponse,
  code: AdminErrorCode,
  message: string,
  tls: boolean,
): void {
  const body = errorJson(code, message);
  response.writeHead(httpStatusOf[code], [
    ...outsideAppHeaders(tls),
    ['Content-Length', String(Buffer.byteLength(body))],
  ]);
  response.end(response.req.method === 'HEAD' ? undefined : body);
}

/** Node's parser gave up on the bytes: the API's JSON error on the raw socket, then it closes. */
function answerUnparsed(error: ClientError, socket: Duplex, tls: boolean): void {
  const { code, message, reason } = clientErrorWords(error);
  answerClientError(error, socket, {
    status: httpStatusOf[code],
    reason,
    json: errorJson(code, message),
    headers: securityHeaderEntries(tls),
  });
}
