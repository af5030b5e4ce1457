/**
 * Calls without an API key (or with one), many at once, each with a large
 * body: what an attacker who can reach the gRPC port (and holds a key) can
 * make the server buffer. Used by bench/unauthenticated-flood.ts,
 * bench/keyed-flood.ts and their tests.
 */
import { type ClientHttp2Session, connect } from 'node:http2';
import { grpcFrame, http2Call } from './http2-call.ts';

export interface FloodOptions {
  /** `host:port` of the gRPC port. */
  address: string;
  /** Method path, e.g. `/sepp.v1.QueueService/Enqueue` or `/grpc.health.v1.Health/Check`. */
  path: string;
  /** Calls in all, spread over `connections`. */
  calls: number;
  connections: number;
  /** Bytes of each call's one message (a complete message of this length is sent). */
  messageBytes: number;
  /** The message to send instead of `messageBytes` bytes of `a` (a real request). */
  message?: Uint8Array;
  /** Headers each call sends (an `authorization` with a key). */
  headers?: Record<string, string>;
}

/** Runs the calls at once; resolves with how many ended with each grpc-status (`none`: no status). */
export async function flood(options: FloodOptions): Promise<Record<string, number>> {
  const message = grpcFrame(options.message ?? Buffer.alloc(options.messageBytes, 0x61));
  const sessions: ClientHttp2Session[] = [];
  for (let i = 0; i < options.connections; i++) {
    // The client queues what the server does not read: without room for it (Node's default is
    // 10 MB per session) the client itself would reset its streams, and the server would see no flood.
    const session = connect(`http://${options.address}`, { maxSessionMemory: 64 * 1024 });
    session.on('error', () => {});
    sessions.push(session);
  }
  const codes: Record<string, number> = {};
  try {
    await Promise.all(
      Array.from({ length: options.calls }, (_, i) =>
        http2Call(sessions[i % sessions.length]!, options.path, {
          body: message,
          ...(options.headers === undefined ? {} : { headers: options.headers }),
        }).then((code) => {
          codes[code] = (codes[code] ?? 0) + 1;
        }),
      ),
    );
  } finally {
    for (const session of sessions) session.destroy();
  }
  return codes;
}
