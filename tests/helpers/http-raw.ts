/**
 * HTTP requests that a browser or fetch would never send: a request target
 * sent exactly as written (no dot-segment removal), and raw bytes over a
 * socket (CR/LF or NUL in headers, broken request lines). Both resolve with
 * what came back, or with `timedOut` when nothing complete arrived in time.
 */
import { type Agent, request } from 'node:http';
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** True when no complete answer arrived within the bound. */
  timedOut: boolean;
}

export interface ExactRequest {
  method: string;
  /** The request target, sent as is (must be free of bytes Node refuses: use sendRaw for those). */
  target: string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Local address to connect from (another loopback address is another client for login throttling). */
  localAddress?: string;
  agent?: Agent;
}

/** One request through node:http, which, unlike fetch, does not normalise the path. */
export function sendExact(port: number, req: ExactRequest, timeoutMs = 5000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const timedOut: RawAnswer = { status: 0, headers: {}, body: Buffer.alloc(0), timedOut: true };
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method: req.method,
        path: req.target,
        // An explicit length: Node's client sends a DELETE or OPTIONS body unframed otherwise.
        headers: {
          ...(req.body === undefined ? {} : { 'content-length': String(req.body.length) }),
          ...req.headers,
        },
        ...(req.localAddress === undefined ? {} : { localAddress: req.localAddress }),
        agent: req.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            timedOut: false,
          });
        });
        res.on('error', reject);
      },
    );
    const timer = setTimeout(() => {
      outgoing.destroy();
      resolve(timedOut);
    }, timeoutMs);
    outgoing.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    outgoing.end(req.body);
  });
}

/**
 * Writes bytes to a fresh connection and reads until the first answer is
 * complete, the server closes the connection, or the bound passes.
 */
export function sendRaw(port: number, bytes: Buffer, timeoutMs = 5000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (timedOut: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parseAnswer(Buffer.concat(chunks)), timedOut });
    };
    const timer = setTimeout(() => finish(!isComplete(Buffer.concat(chunks))), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (isComplete(Buffer.concat(chunks))) finish(false);
    });
    socket.on('close', () => finish(chunks.length === 0));
    socket.on('error', () => finish(chunks.length === 0));
    socket.write(bytes);
  });
}

/** Whether the bytes hold one whole HTTP/1.1 answer (Content-Length or chunked). */
function isComplete(bytes: Buffer): boolean {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = bytes.subarray(0, end).toString('latin1').toLowerCase();
  const body = bytes.subarray(end + 4);
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  if (length !== null) return body.length >= Number(length[1]);
  if (/\r\ntransfer-encoding: *chunked/.test(head)) return body.includes('0\r\n\r\n');
  return false;
}

/** Status, headers and de-chunked body of the first answer in `bytes`. */
function parseAnswer(bytes: Buffer): Omit<RawAnswer, 'timedOut'> {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: Buffer.alloc(0) };
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = bytes.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  else if (headers['content-length'] !== undefined)
    body = body.subarray(0, Number(headers['content-length']));
  return { status, headers, body };
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (!Number.isFinite(size) || size === 0) break;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** One connection kept open: bytes written when the test says, every answer on it read in order. */
export interface RawConnection {
  /** Writes `bytes`; resolves once the kernel took them. */
  write(bytes: string | Buffer): Promise<void>;
  /** Stops reading (the bytes wait in the kernel) until `answers` is called. */
  pause(): void;
  /**
   * The first `count` answers on the connection, once complete; fewer when the
   * server closes it or the bound passes first.
   */
  answers(count: number, timeoutMs?: number): Promise<Omit<RawAnswer, 'timedOut'>[]>;
  /** Whether the connection has closed (or failed: `error` says how). */
  readonly closed: boolean;
  readonly error: string | null;
  destroy(): void;
}

export function openRaw(port: number): RawConnection {
  const socket = connect(port, '127.0.0.1');
  let received = Buffer.alloc(0);
  let closed = false;
  let error: string | null = null;
  let changed = () => {};
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    changed();
  });
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error = e.code ?? e.message;
  });
  socket.on('close', () => {
    closed = true;
    changed();
  });
  const split = (): Omit<RawAnswer, 'timedOut'>[] => {
    const found: Omit<RawAnswer, 'timedOut'>[] = [];
    let rest = received;
    for (let length = answerLength(rest); length !== null; length = answerLength(rest)) {
      found.push(parseAnswer(rest.subarray(0, length)));
      rest = rest.subarray(length);
    }
    return found;
  };
  return {
    write: (bytes) =>
      new Promise((resolve, reject) => socket.write(bytes, (e) => (e ? reject(e) : resolve()))),
    pause: () => socket.pause(),
    answers: (count, timeoutMs = 5000) => {
      socket.resume();
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(split()), timeoutMs);
        changed = () => {
          const found = split();
          if (found.length >= count || closed) {
            clearTimeout(timer);
            changed = () => {};
            resolve(found.slice(0, count));
          }
        };
        changed();
      });
    },
    get closed() {
      return closed;
    },
    get error() {
      return error;
    },
    destroy: () => socket.destroy(),
  };
}

/** The length in bytes of the whole answer `bytes` start with (Content-Length framing), or null until all of it is there. */
function answerLength(bytes: Buffer): number | null {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = bytes.subarray(0, end).toString('latin1').toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  const total = end + 4 + Number(length?.[1] ?? 0);
  return bytes.length >= total ? total : null;
}

/**
 * A GET with a 10-byte body and, in the same write, a HEAD whose target Node cannot parse (a raw
 * ü): the packet the parser fails on begins with the GET. Resolves with what follows the header
 * block of the last answer (the HEAD's 400), which must be nothing, and that answer's headers.
 */
export function headAfterAnotherRequest(
  port: number,
  getPath: string,
): Promise<{ head: string; after: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    const timer = setTimeout(() => socket.destroy(), 2000);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const at = text.lastIndexOf('HTTP/1.1 400 ');
      const end = text.indexOf('\r\n\r\n', at);
      resolve(
        at < 0 || end < 0
          ? { head: text, after: '' }
          : { head: text.slice(at, end), after: text.slice(end + 4) },
      );
    });
    socket.write(
      Buffer.from(
        `GET ${getPath} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\n\r\nxxxxxxxxxx` +
          'HEAD /?q=\xfc HTTP/1.1\r\nHost: localhost\r\n\r\n',
        'latin1',
      ),
    );
  });
}
