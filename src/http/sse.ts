/**
 * A Server-Sent Events answer (text/event-stream). The head is written with
 * the first event, so an operation can still refuse with an error answer
 * until it sends something. Each event's `written` callback runs once Node
 * has handed the bytes to the socket, which is what bounds the memory a slow
 * reader can hold (the engine's subscription stops at 256 KiB unwritten).
 * A comment line goes out every `heartbeatMs` so that proxies and clients
 * can tell a quiet stream from a dead one.
 */
import type { ServerResponse } from 'node:http';

export const heartbeatMs = 15_000;

export class EventStreamResponse {
  private headWritten = false;
  private ended = false;
  private heartbeat: NodeJS.Timeout | undefined;
  private readonly closeListeners: (() => void)[] = [];

  constructor(
    private readonly response: ServerResponse,
    private readonly headers: Readonly<Record<string, string>>,
  ) {
    response.on('close', () => {
      this.ended = true;
      clearInterval(this.heartbeat);
      for (const listener of this.closeListeners.splice(0)) listener();
    });
  }

  /** True once anything was written: from then on a failure can only end the stream. */
  get started(): boolean {
    return this.headWritten;
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Runs `listener` once the stream is over (the client left, or `end`); at once if it is. */
  onClose(listener: () => void): void {
    if (this.ended) listener();
    else this.closeListeners.push(listener);
  }

  /** Writes the head (status 200) now, if not yet. */
  start(): void {
    if (this.headWritten || this.ended) return;
    this.headWritten = true;
    this.response.writeHead(200, {
      ...this.headers,
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      // Nginx and other proxies would otherwise hold events back.
      'X-Accel-Buffering': 'no',
    });
    // Tells EventSource how soon to reconnect after a break.
    this.response.write('retry: 1000\n\n');
    this.heartbeat = setInterval(() => this.response.write(': keep-alive\n\n'), heartbeatMs);
    this.heartbeat.unref();
  }

  /**
   * Writes events, each `{ id, event?, data }`; `written` runs once the
   * bytes left for the socket (never, if the stream is over).
   */
  send(events: readonly { id?: string; event?: string; data: string }[], written?: () => void): void {
    if (this.ended) return;
    this.start();
    let text = '';
    for (const e of events) {
      if (e.id !== undefined) text += `id: ${e.id}\n`;
      if (e.event !== undefined) text += `event: ${e.event}\n`;
      // A payload kept byte for byte may hold line breaks (as JSON whitespace only: a JSON string
      // cannot): one `data:` line each, which the client joins back with \n.
      text += `data: ${e.data.replace(/\r\n|\r|\n/g, '\ndata: ')}\n\n`;
    }
    if (written === undefined) this.response.write(text);
    else this.response.write(text, () => written());
  }

  /** Ends the stream (after what is written). */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    clearInterval(this.heartbeat);
    this.response.end();
  }
}
