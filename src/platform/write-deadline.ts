/**
 * The write deadline of both HTTP doors (the admin API and the HTTP API). Node gives a server
 * no deadline for writing: an answer waits in its connection's buffers until the client reads
 * it. A client that sent a request and never read the answer (up to 6 MiB for a reserve) kept
 * the connection, and the answer's memory, for as long as it stayed connected — one unread
 * answer per connection, times the connections a door allows.
 *
 * As nginx's `send_timeout`, the deadline runs between two steps of progress, not over the
 * whole answer: a connection with bytes waiting to be written is closed when the client has
 * taken none of them for `timeoutMs`. A client that reads slowly, but reads, keeps its
 * connection; so does one with nothing waiting (an idle keep-alive, an event stream between
 * events: other deadlines bound those). Progress is what Node's sockets tell publicly: the
 * bytes written less those still buffered (`bytesWritten - writableLength`) grow each time a
 * write has been handed to the kernel whole. An answer written in one piece shows progress
 * only once all of it is in the kernel, so a door that sends large answers writes them in
 * pieces (`writeInPieces`).
 *
 * One timer per door checks the connections that had a request, at a tenth of the deadline
 * (every 10 ms to 1 s), and only while there are any; the deadline is read at each check, so a
 * reload may change it.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';

/** A connection closed because its client took nothing of an answer for the deadline. */
export interface WriteTimeout {
  /** The client's address and port, as the socket says them. */
  readonly peer: string;
  /** Bytes still waiting to be written when it was closed. */
  readonly pendingBytes: number;
  /** The deadline in force. */
  readonly timeoutMs: number;
}

export interface WriteDeadlineOptions {
  /** The deadline now (read at every check: a reload may change it). */
  timeoutMs: () => number;
  /** Told once per connection closed for it (the door logs it). */
  onTimeout: (timeout: WriteTimeout) => void;
  /** Milliseconds, monotonic; default performance.now. */
  nowMs?: () => number;
}

interface Watched {
  /** Bytes the client had taken at the last check that saw progress. */
  doneBytes: number;
  /** Since when nothing was taken while bytes waited; undefined while nothing waits. */
  stalledSinceMs: number | undefined;
}

/**
 * Bytes of one write: a larger answer is written in pieces of this, each after the last was
 * taken. A client must take one piece per deadline (256 KiB in 30 s: 9 KB/s). Pieces of 64 KiB
 * cost large answers throughput (bench/http-large-answers.ts: 23 % and 9 % fewer 5.6 MB answers
 * a second than writing them whole); pieces of 256 KiB measured none.
 */
export const writePieceBytes = 256 * 1024;

export class WriteDeadline {
  private readonly watched = new Map<Socket, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private readonly nowMs: () => number;
  /** Connections closed for the deadline, since the start. */
  closed = 0;

  constructor(private readonly options: WriteDeadlineOptions) {
    this.nowMs = options.nowMs ?? (() => performance.now());
  }

  /** Watches `socket` until it closes (again for each of its requests: once is enough). */
  watch(socket: Socket): void {
    if (this.watched.has(socket) || socket.destroyed) return;
    this.watched.set(socket, { doneBytes: 0, stalledSinceMs: undefined });
    socket.once('close', () => this.watched.delete(socket));
    this.schedule();
  }

  /** Stops checking (the door is closing; its connections are closed by it). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.watched.clear();
  }

  /** Connections watched now (tests, diagnostics). */
  get size(): number {
    return this.watched.size;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.watched.size === 0) return;
    const everyMs = Math.max(10, Math.min(1000, Math.ceil(this.options.timeoutMs() / 10)));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.check();
      this.schedule();
    }, everyMs);
    this.timer.unref();
  }

  private check(): void {
    const nowMs = this.nowMs();
    const timeoutMs = this.options.timeoutMs();
    for (const [socket, state] of this.watched) {
      const pendingBytes = socket.writableLength;
      if (pendingBytes === 0) {
        state.stalledSinceMs = undefined;
        continue;
      }
      const doneBytes = socket.bytesWritten - pendingBytes;
      if (state.stalledSinceMs === undefined || doneBytes !== state.doneBytes) {
        state.doneBytes = doneBytes;
        state.stalledSinceMs = nowMs;
        continue;
      }
      if (nowMs - state.stalledSinceMs < timeoutMs) continue;
      // Its address, before the socket forgets it.
      const peer = `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}`;
      this.watched.delete(socket);
      this.closed++;
      // Reset, not closed: a close would leave the kernel sending what waits, for minutes, to a
      // client that reads nothing. A TLS socket cannot be reset through Node; it is closed.
      if (socket instanceof TLSSocket) socket.destroy();
      else socket.resetAndDestroy();
      try {
        this.options.onTimeout({ peer, pendingBytes, timeoutMs });
      } catch {
        // A failing log sink must not stop the checks of the other connections.
      }
    }
  }
}

/**
 * Writes `bytes` as the whole rest of `response`'s body and ends it: in pieces of
 * `writePieceBytes`, each once the one before was taken, so that the write deadline sees a
 * client that reads slowly make progress. A small answer is one write, as before.
 */
export function writeInPieces(response: ServerResponse, body: Buffer | string): void {
  const bytes = typeof body === 'string' && body.length > writePieceBytes ? Buffer.from(body) : body;
  if (typeof bytes === 'string' || bytes.length <= writePieceBytes) {
    response.end(bytes);
    return;
  }
  let at = 0;
  const next = (error?: Error | null) => {
    if (error || response.destroyed) return;
    const piece = bytes.subarray(at, at + writePieceBytes);
    at += piece.length;
    if (at >= bytes.length) response.end(piece);
    else response.write(piece, next);
  };
  next();
}
