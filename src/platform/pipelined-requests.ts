/**
 * The requests of one connection not yet answered, for both HTTP doors (the admin API and the
 * HTTP API): bounded, and each told when it ends.
 *
 * HTTP/1.1 lets a client send requests without waiting for their answers (pipelining). Node
 * parses every request of a chunk it read and holds each answer until those before it are sent:
 * one chunk of 64 KiB held some 1,900 short GETs, so a client that sent it and never read made
 * the server build and hold 1,900 answers — one connection without a key took the server from
 * 96 to 480 MiB with the HTTP API's OpenAPI document. Node stops reading a connection once its
 * answers wait, but only after the chunk in hand. No browser, SDK or HTTP agent pipelines (curl
 * dropped it; undici does not by default), so a connection past a few open requests is closed,
 * and its requests past the bound get no answer and cost nothing. A client that waits for each
 * answer has one request open, two for a moment (its next request may be read while the
 * server drops the rest of a body its answer left unread).
 *
 * When a connection closes, Node ends only the answer being sent on it: an answer still waiting
 * its turn never emits `close`. So what a request holds until its answer is done (bytes in
 * flight, a read share, a long-poll) is given back when either closes, never left behind.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Requests one connection may have open (received, not yet answered) at once. */
export const maxOpenRequestsPerConnection = 4;

/** Registers what to do once when the request ends: its answer closed, or its connection did. */
export type OnRequestEnd = (listener: () => void) => void;

/** Each connection's open requests: the function that ends each. */
const openOf = new WeakMap<Socket, Set<() => void>>();

/**
 * Counts `request` on its connection until it ends; null (and the connection destroyed) when
 * the connection has `maxOpenRequestsPerConnection` open already: then the caller does nothing
 * more with it.
 */
export function admitRequest(request: IncomingMessage, response: ServerResponse): OnRequestEnd | null {
  const socket = request.socket;
  let open = openOf.get(socket);
  if (open === undefined) {
    const requests = new Set<() => void>();
    open = requests;
    openOf.set(socket, requests);
    socket.once('close', () => {
      for (const end of [...requests]) end();
    });
  }
  if (open.size >= maxOpenRequestsPerConnection) {
    socket.destroy();
    return null;
  }
  const listeners: (() => void)[] = [];
  const requests = open;
  const end = () => {
    if (!requests.delete(end)) return;
    for (const listener of listeners.splice(0)) listener();
  };
  requests.add(end);
  response.once('close', end);
  return (listener) => {
    if (requests.has(end)) listeners.push(listener);
    else listener();
  };
}
