/**
 * What both HTTP doors (the admin API and the HTTP API) do with the rest of a request's body
 * after an answer that left it unread: a refusal before the body (401, 403, 413 by its
 * length), a refusal while it was read, or a route that takes none.
 *
 * Closing the connection instead, with the body's bytes still arriving, made the kernel reset
 * it, and a client still sending lost the answer it had not yet read (or a request it had sent
 * after the body). So the rest is read and dropped, and the connection then serves the next
 * request. Node's deadline for the whole request bounds how long this reads, and `maxBytes`
 * how much: past them the connection is closed (a client still sending may then see a reset,
 * as after nginx's bounded lingering close).
 */
import type { IncomingMessage } from 'node:http';

/**
 * Reads what is left of `request`'s body and drops it, then calls `done` (at once when the
 * body had all come). Past `maxBytes` dropped, the request is destroyed instead, and `done`
 * is not called.
 */
export function dropUnreadBody(request: IncomingMessage, maxBytes: number, done?: () => void): void {
  if (request.complete) {
    done?.();
    return;
  }
  // Nobody reads the body now. A reader left behind (a handler's Request stream, a body reader
  // that gave up) would keep a copy of each chunk or pause the request again; Node's own drain
  // removes such listeners too.
  request.removeAllListeners('data');
  let droppedBytes = 0;
  const onData = (chunk: Buffer) => {
    droppedBytes += chunk.length;
    if (droppedBytes <= maxBytes) return;
    request.off('data', onData);
    if (done !== undefined) request.off('end', done);
    request.destroy();
  };
  request.on('data', onData);
  if (done !== undefined) request.once('end', done);
  request.resume();
}
