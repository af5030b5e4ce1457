/**
 * Reading a request of the HTTP API, in the order that keeps a caller from
 * making the server hold what it may not (server.ts, steps 3 to 5):
 *
 * - who is calling, from the headers alone, before a byte of the body is
 *   read (401, 403): `callerOf`;
 * - the body's size (Content-Length, or as chunks arrive) against
 *   http.max_request_bytes (413) and against the bytes in flight overall and
 *   for this key (429 with Retry-After); a request with `Expect:
 *   100-continue` is told to send its body only once those passed;
 * - the body read, checked to be UTF-8 and a JSON object (400), sent as JSON (415):
 *   `BodyReader`.
 */
import type { IncomingMessage } from 'node:http';
import { SeppError } from '../engine/errors.ts';
import { anonymous, type Caller, KeyTable } from './auth.ts';
import { HttpError, invalid } from './errors.ts';
import { InFlightBytes } from './in-flight.ts';
import { JsonInput } from './json-input.ts';
import type { RouteSpec } from './route-spec.ts';

/**
 * The request's Authorization header; unauthenticated when it came more than
 * once (Node keeps only the first in `headers`, so the raw list is looked at).
 */
function authorizationOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  let seen = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (name.length === 13 && name.toLowerCase() === 'authorization') seen++;
  }
  if (seen > 1) throw new SeppError('unauthenticated', 'send one Authorization header, not several');
  return header;
}

/** Who calls `route` (`operation` names it in a refusal), from the headers alone; anonymous for a public one. */
export function callerOf(keys: KeyTable, req: IncomingMessage, route: RouteSpec, operation: string): Caller {
  if (route.permission === 'public') return anonymous;
  const caller = keys.identify(authorizationOf(req));
  KeyTable.authorize(caller, route.permission, `${operation} (${route.operationId})`);
  return caller;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Reads request bodies within http.max_request_bytes and the bytes-in-flight bounds. */
export class BodyReader {
  private readonly inFlight: InFlightBytes;

  constructor(
    private readonly limits: {
      readonly maxRequestBytes: number;
      readonly maxInFlightBytes: number;
      readonly maxInFlightBytesPerKey: number;
    },
  ) {
    this.inFlight = new InFlightBytes(limits);
  }

  /** Request bytes held now (tests, diagnostics). */
  get held(): { total: number; keys: number } {
    return this.inFlight.held;
  }

  /**
   * Reads the body of `route`; null for an operation without one. The bytes
   * it takes stay held until the function given to `hold` is called (when
   * the answer is done). `askForBody` tells a client that sent `Expect:
   * 100-continue` to send its body, once the checks before reading passed.
   */
  async read(
    req: IncomingMessage,
    route: RouteSpec,
    caller: Caller,
    askForBody: (() => void) | null,
    hold: (release: () => void) => void,
  ): Promise<JsonInput | null> {
    const chunked = req.headers['transfer-encoding'] !== undefined;
    const lengthHeader = req.headers['content-length'];
    const declared = lengthHeader === undefined ? null : Number(lengthHeader);
    if (route.body === undefined) {
      if ((declared ?? 0) > 0 || chunked)
        throw invalid(`${route.method} ${route.path} takes no request body`);
      return null;
    }
    const type = (req.headers['content-type'] ?? '').split(';', 1)[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      throw new HttpError(
        'unsupported_media_type',
        'send the request body as JSON, with the header Content-Type: application/json',
      );
    }
    const max = this.limits.maxRequestBytes;
    const tooLarge = (bytes: number | string) =>
      new HttpError(
        'payload_too_large',
        `the body is ${bytes} bytes, the limit is ${max} (http.max_request_bytes)`,
      );
    if (declared !== null && declared > max) throw tooLarge(declared);
    // All callers without a key share one allowance.
    const key = caller === anonymous ? '' : caller.name;
    const inFlight = this.inFlight;
    let taken = 0;
    hold(() => {
      inFlight.give(key, taken);
      taken = 0;
    });
    const take = (bytes: number) => {
      if (!inFlight.take(key, bytes)) {
        throw new SeppError(
          'resource_exhausted',
          `too many request bytes in flight (http.max_in_flight_bytes, http.max_in_flight_bytes_per_key); retry shortly`,
        );
      }
      taken += bytes;
    };
    if (declared !== null) take(declared);
    askForBody?.();
    // Listeners, not an async iterator: one request's body is usually one chunk, and the
    // iterator's machinery cost more than the rest of reading it.
    const chunks: Buffer[] = [];
    let received = 0;
    await new Promise<void>((resolve, reject) => {
      const fail = (error: unknown) => {
        req.off('data', onData);
        req.pause();
        reject(error);
      };
      const onData = (chunk: Buffer) => {
        received += chunk.length;
        try {
          if (received > max) throw tooLarge(`more than ${max}`);
          if (declared === null) take(chunk.length);
        } catch (error) {
          fail(error);
          return;
        }
        chunks.push(chunk);
      };
      req.on('data', onData);
      req.once('end', resolve);
      req.once('error', fail);
      // A client that goes away mid-body: nothing to answer.
      req.once('aborted', () => fail(new SeppError('unavailable', 'the client went away')));
    });
    if (received === 0) throw invalid('the request body is empty; send a JSON object');
    let text: string;
    try {
      text = utf8.decode(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    } catch {
      throw invalid('the request body is not valid UTF-8');
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const detail = error instanceof Error ? error.message.slice(0, 200) : '';
      throw invalid(`the request body is not valid JSON: ${detail}`);
    }
    return JsonInput.body(text, value);
  }
}
