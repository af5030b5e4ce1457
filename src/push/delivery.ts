/**
 * One push delivery: POST a leased job to its queue's target, signed, and
 * say what the answer means for the job.
 *
 * - 2xx: done. The answer's body (at most limits.max_result_bytes; a larger
 *   one is not kept) becomes the job's result, with its Content-Type.
 * - Anything else — 429, 5xx, any other status (a 3xx too: redirects are not
 *   followed), no answer within the target's timeout_ms, a connection that
 *   fails or a target address refused — is a failed attempt, retried with the
 *   queue's backoff; a `Retry-After` on the answer sets the delay instead (at
 *   most an hour).
 *
 * The body is the job as a worker would get it from the HTTP API's reserve
 * (LeasedJob in JSON: id, attempt, type, payload, metadata, …).
 */
import {
  type ClientRequest,
  type Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from 'node:http';
import { type Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { PushTarget } from '../config/index.ts';
import type { LeasedJob } from '../engine/types.ts';
import { leasedJobToJson, stringifyWithRaw } from '../http/index.ts';
import { signatureHeader, signatureOf } from './signature.ts';
import { checkLiteral, guardedLookup, socketHost } from './target-address.ts';

/** How one delivery ended, for the job (ack or nack) and for metrics. */
export type DeliveryOutcome =
  | { kind: 'ok'; result: Buffer | null; resultContentType: string | null; resultDropped: boolean }
  | { kind: 'failed'; reason: FailureReason; error: string; retryAfterMs: number | null };

export type FailureReason =
  | 'http_status'
  | 'rate_limited'
  | 'timeout'
  | 'connection_error'
  | 'refused_target'
  | 'aborted';

/** Longest delay a Retry-After may set. */
export const maxRetryAfterMs = 60 * 60 * 1000;
/** Bytes of a failed answer's body kept in the job's error, for people. */
const errorBodyBytes = 256;

export interface DeliveryRequest {
  job: LeasedJob;
  target: PushTarget;
  /** `queues.NAME.push`, for messages. */
  queueKey: string;
  agent: HttpAgent | HttpsAgent;
  version: string;
  /** Results above this are not kept. */
  maxResultBytes: number;
  /** Aborts the delivery (shutdown, a cancel of the job). */
  signal: AbortSignal;
  nowMs: () => number;
}

/** The URL without credentials or query, for messages and the admin UI. */
export function shownUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** Milliseconds a Retry-After value asks for (seconds, or an HTTP date), or null when there is none or it is unreadable. */
export function retryAfterMs(value: string | undefined, nowMs: number): number | null {
  if (value === undefined || value.trim() === '') return null;
  const text = value.trim();
  let ms: number;
  if (/^\d{1,10}$/.test(text)) ms = Number(text) * 1000;
  // An HTTP date names its day and month in letters; "-5" or "3.5" is neither form.
  else if (!/^[A-Za-z]{3}, /.test(text)) return null;
  else {
    const at = Date.parse(text);
    if (!Number.isFinite(at)) return null;
    ms = at - nowMs;
  }
  return Math.min(Math.max(0, ms), maxRetryAfterMs);
}

/**
 * A tracestate as a header may carry it: printable ASCII, as W3C Trace Context writes it. A job
 * carries what its producer sent (any text up to 512 characters, over any door, sepp.enqueue
 * too), and Node refuses a header with a line break, a control character or one beyond Latin-1
 * by throwing: such a job was never delivered, each attempt's lease running out (attack8).
 * It goes without it, as a job whose producer sent none.
 */
const tracestateHeaderRe = /^[\x20-\x7e]*$/;

export function deliver(req: DeliveryRequest): Promise<DeliveryOutcome> {
  const url = new URL(req.target.url);
  const shown = shownUrl(url);
  const refused = checkLiteral(url, req.target.allowPrivateTargets, req.queueKey);
  if (refused !== null) {
    return Promise.resolve({ kind: 'failed', reason: 'refused_target', error: refused, retryAfterMs: null });
  }
  const body = Buffer.from(stringifyWithRaw(leasedJobToJson(req.job)));
  const timestampS = Math.floor(req.nowMs() / 1000);
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Content-Length': String(body.length),
    'User-Agent': `sepp-push/${req.version}`,
    'Sepp-Job-Id': req.job.id,
    'Sepp-Attempt': String(req.job.attempt),
    'Sepp-Queue': req.job.queue,
    [signatureHeader]: signatureOf(req.target.secret.reveal(), timestampS, body),
  };
  if (req.job.traceparent !== null) headers.traceparent = req.job.traceparent;
  if (req.job.tracestate !== null && tracestateHeaderRe.test(req.job.tracestate))
    headers.tracestate = req.job.tracestate;
  if (url.username !== '' || url.password !== '') {
    headers.Authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  }

  return new Promise<DeliveryOutcome>((resolve) => {
    let settled = false;
    let outgoing: ClientRequest | undefined;
    const finish = (outcome: DeliveryOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal.removeEventListener('abort', onAbort);
      outgoing?.destroy();
      resolve(outcome);
    };
    const failed = (reason: FailureReason, error: string, retryAfter: number | null = null) =>
      finish({ kind: 'failed', reason, error, retryAfterMs: retryAfter });
    const timer = setTimeout(
      () =>
        failed(
          'timeout',
          `no answer from ${shown} within ${req.target.timeoutMs} ms (${req.queueKey}.timeout_ms)`,
        ),
      req.target.timeoutMs,
    );
    const onAbort = () =>
      failed('aborted', `the delivery to ${shown} was stopped: ${String(req.signal.reason ?? 'aborted')}`);
    if (req.signal.aborted) {
      onAbort();
      return;
    }
    req.signal.addEventListener('abort', onAbort, { once: true });

    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    outgoing = send({
      protocol: url.protocol,
      host: socketHost(url),
      port: url.port === '' ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers,
      agent: req.agent,
      lookup: guardedLookup(req.target.allowPrivateTargets, req.queueKey),
      ...(url.protocol === 'https:' ? { servername: socketHost(url) } : {}),
    });
    outgoing.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'ESEPPTARGETREFUSED') failed('refused_target', error.message);
      else failed('connection_error', `connection to ${shown} failed: ${error.code ?? error.message}`);
    });
    outgoing.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      const ok = status >= 200 && status < 300;
      const limit = ok ? req.maxResultBytes : errorBodyBytes;
      const chunks: Buffer[] = [];
      let bytes = 0;
      let overflow = false;
      res.on('data', (chunk: Buffer) => {
        if (bytes + chunk.length > limit) {
          overflow = true;
          if (!ok) chunks.push(chunk.subarray(0, Math.max(0, limit - bytes)));
          bytes = limit;
          // The rest is not needed: stop reading, and do not reuse this connection.
          res.destroy();
          done();
          return;
        }
        bytes += chunk.length;
        chunks.push(chunk);
      });
      res.on('end', () => done());
      res.on('error', () => done());
      res.on('close', () => done());
      const done = () => {
        if (settled) return;
        const text = Buffer.concat(chunks);
        if (ok) {
          const type = res.headers['content-type'];
          const keep = !overflow && text.length > 0;
          finish({
            kind: 'ok',
            result: keep ? text : null,
            resultContentType: keep ? (type ?? 'application/octet-stream') : null,
            resultDropped: overflow,
          });
          return;
        }
        const retryAfter = retryAfterMs(res.headers['retry-after'], req.nowMs());
        const excerpt = text.toString('utf8').replace(/\s+/g, ' ').trim();
        const what =
          status >= 300 && status < 400
            ? `HTTP ${status} from ${shown} (redirects are not followed)`
            : `HTTP ${status} from ${shown}`;
        failed(
          status === 429 ? 'rate_limited' : 'http_status',
          excerpt === '' ? what : `${what}: ${excerpt}${overflow ? ' …' : ''}`,
          retryAfter,
        );
      };
    });
    outgoing.end(body);
  });
}
