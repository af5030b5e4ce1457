/**
 * A small client for the HTTP/JSON API in tests: JSON in, status, headers and
 * JSON out, over a keep-alive agent (node:http, so nothing is normalised),
 * and a Server-Sent Events reader that yields each event as it arrives.
 */
import { Agent, type IncomingHttpHeaders, request } from 'node:http';

export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (an error answer's too). */
  json: T;
  text: string;
}

export interface ApiCall {
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE';
  /** A bearer key. */
  key?: string;
  /** A value to send as JSON, or raw text. */
  body?: unknown;
  raw?: string | Buffer;
  headers?: Record<string, string>;
  agent?: Agent | false;
}

const sharedAgent = new Agent({ keepAlive: true, maxSockets: 64 });

export function apiCall<T = Record<string, unknown>>(
  baseUrl: string,
  path: string,
  call: ApiCall = {},
): Promise<ApiAnswer<T>> {
  const url = new URL(baseUrl);
  const payload =
    call.raw !== undefined
      ? Buffer.from(call.raw)
      : call.body === undefined
        ? undefined
        : Buffer.from(JSON.stringify(call.body));
  const headers: Record<string, string> = {
    ...(payload === undefined
      ? {}
      : { 'content-type': 'application/json', 'content-length': String(payload.length) }),
    ...(call.key === undefined ? {} : { authorization: `Bearer ${call.key}` }),
    ...call.headers,
  };
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method: call.method ?? (payload === undefined ? 'GET' : 'POST'),
        path,
        headers,
        agent: call.agent ?? sharedAgent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown = null;
          try {
            json = JSON.parse(text);
          } catch {
            // Not JSON (an event stream, an empty body): the test looks at `text`.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json: json as T, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  /** The next event (comments skipped); rejects when the stream ends first or after `timeoutMs`. */
  next(timeoutMs?: number): Promise<SseEvent>;
  /** Events until one matches, returning all of them (the match last). */
  until(match: (event: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent[]>;
  /** The error body, when the answer was not a stream. */
  body(): Promise<string>;
  close(): void;
}

/** Opens an event stream; resolves once the answer's head arrived. */
export function openSse(
  baseUrl: string,
  path: string,
  options: { key?: string; headers?: Record<string, string> } = {},
): Promise<SseStream> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        headers: {
          accept: 'text/event-stream',
          ...(options.key === undefined ? {} : { authorization: `Bearer ${options.key}` }),
          ...options.headers,
        },
        agent: false,
      },
      (res) => {
        res.setEncoding('utf8');
        let buffer = '';
        const queue: SseEvent[] = [];
        let ended = false;
        let waiter: (() => void) | undefined;
        let raw = '';
        res.on('data', (chunk: string) => {
          raw += chunk;
          buffer += chunk;
          for (;;) {
            const end = buffer.indexOf('\n\n');
            if (end < 0) break;
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event: SseEvent = { data: '' };
            const data: string[] = [];
            let any = false;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const colon = line.indexOf(':');
              const field = colon < 0 ? line : line.slice(0, colon);
              const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
              if (field === 'data') data.push(value);
              else if (field === 'id') event.id = value;
              else if (field === 'event') event.event = value;
              else continue;
              any = true;
            }
            if (!any || data.length === 0) continue;
            event.data = data.join('\n');
            queue.push(event);
          }
          waiter?.();
        });
        res.on('end', () => {
          ended = true;
          waiter?.();
        });
        res.on('error', () => {
          ended = true;
          waiter?.();
        });
        const next = async (timeoutMs = 5000): Promise<SseEvent> => {
          const deadline = Date.now() + timeoutMs;
          while (queue.length === 0) {
            if (ended) throw new Error(`the stream ended: ${raw.slice(-300)}`);
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`no event within ${timeoutMs} ms: ${raw.slice(-300)}`);
            await new Promise<void>((wake) => {
              const timer = setTimeout(wake, left);
              waiter = () => {
                clearTimeout(timer);
                wake();
              };
            });
            waiter = undefined;
          }
          return queue.shift()!;
        };
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          next,
          async until(match, timeoutMs = 5000) {
            const seen: SseEvent[] = [];
            for (;;) {
              const event = await next(timeoutMs);
              seen.push(event);
              if (match(event)) return seen;
            }
          },
          body: () =>
            new Promise((done) => {
              if (ended) done(raw);
              else res.on('end', () => done(raw));
            }),
          close: () => req.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
