/**
 * How the HTTP API writes a JSON answer: its headers (no caching, no sniffing, its length),
 * `Connection: close` while the server shuts down, and the body in pieces when it is large, so
 * that the write deadline sees a client that reads slowly make progress
 * (platform/write-deadline.ts).
 */
import type { ServerResponse } from 'node:http';
import { writeInPieces } from '../platform/write-deadline.ts';
import { stringifyWithRaw } from './raw-json.ts';

/** An answer's JSON encoded already: every answer that sends it holds these same bytes. */
export class EncodedJson {
  private length: number | undefined;

  constructor(readonly bytes: Buffer | string) {}

  /** How many bytes it is sent as (counted once: a string of megabytes takes a scan). */
  get byteLength(): number {
    this.length ??= Buffer.byteLength(this.bytes);
    return this.length;
  }
}

/** `value` encoded as sendJson sends it (raw JSON kept as it came: raw-json.ts). */
export function encodeJson(value: unknown): EncodedJson {
  return value instanceof EncodedJson ? value : new EncodedJson(stringifyWithRaw(value));
}

const jsonHeaders = {
  'Content-Type': 'application/json',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
};

export interface JsonAnswer {
  status: number;
  /** A value to encode (raw JSON kept as it came: raw-json.ts), or bytes encoded already. */
  value: unknown;
  headers?: Readonly<Record<string, string>>;
  /** The server is shutting down: the connection closes after this answer. */
  closing: boolean;
  /**
   * False: the answer is written whole (its length is in its headers, so the client has all of
   * it) but the response is left open, for the caller to end.
   */
  end?: boolean;
}

export function sendJson(res: ServerResponse, answer: JsonAnswer): void {
  const encoded = encodeJson(answer.value);
  const text = encoded.bytes;
  res.writeHead(answer.status, {
    ...jsonHeaders,
    'Content-Length': String(encoded.byteLength),
    ...(answer.closing ? { Connection: 'close' } : {}),
    ...answer.headers,
  });
  if (answer.end === false) res.write(text);
  else writeInPieces(res, text);
}
