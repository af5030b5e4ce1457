/**
 * The HTTP/JSON API's server: HTTP/1.1 (keep-alive) on its own address, over
 * TLS when configured. One request goes through these steps, in order:
 *
 * 1. the operation is found from the method and path (404, 405);
 * 2. refused while shutting down (503);
 * 3. the API key is checked and the role's permission, from the headers
 *    alone — before a byte of the body is read (401, 403); then the query
 *    parameters against the operation's (400 for one it does not take); then
 *    the key's answers not yet sent (429 with Retry-After when they leave no
 *    room for the key's last answer of this operation: unsent-answers.ts);
 * 4. the body's size (Content-Length, or as chunks arrive) against
 *    http.max_request_bytes (413) and against the bytes in flight overall and
 *    for this key (429 with Retry-After) — a request with
 *    `Expect: 100-continue` is told to send its body only after all of the
 *    above passed;
 * 5. the body read, checked to be UTF-8 and a JSON object (400, 415);
 * 6. a write (a POST but a reserve) keeps room in the answers not yet sent
 *    for the most its answer can be, from its parsed request
 *    (answer-bounds.ts), or is refused (429 with Retry-After) before it runs;
 *    then the handler; whatever it throws becomes the one error shape (errors.ts);
 * 7. its answer held to the answers not yet sent, until its last byte was
 *    handed to the kernel or its connection closed (when it does not fit: 429
 *    instead for a read or a reserve; a write's fits the room it kept). A
 *    handler's undo (a reserve's give-back of its jobs) runs when its answer
 *    never reached the client whole (answer-delivery.ts).
 *
 * Steps 3 to 5 are request-reading.ts; a JSON answer is written by
 * json-answer.ts, a failure's by failure-answer.ts.
 *
 * A refusal that leaves part of a body unread sends its answer at once, then
 * reads and drops the rest of the body (within the request's deadline) before
 * the connection serves another request; closing with bytes still arriving
 * would reset the connection under an answer the client had not yet read.
 * No more than http.max_request_bytes is dropped: past that the connection is
 * closed. A body over the limit, or one held back for a 100 Continue, closes
 * the connection after its answer. An answer the client takes nothing of for
 * http.write_timeout_ms closes the connection (platform/write-deadline.ts).
 * Connections are capped
 * (http.max_connections), and so are the requests one has open (pipelined:
 * platform/pipelined-requests.ts); headers, whole requests and idle keep-alive
 * connections have deadlines; bytes Node's parser refuses get a JSON answer
 * too. Nothing a handler does can reach the process: every promise is
 * caught here.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { refuseUnknownQuery } from '../api-schema/query-params.ts';
import {
  type ApiKey,
  type HttpConfig,
  hideNotFound,
  queueOfJob,
  requireJobsInScope,
} from '../config/index.ts';
import { type Clock, systemClock } from '../engine/clock.ts';
import type { Engine } from '../engine/engine.ts';
import { SeppError } from '../engine/errors.ts';
import { answerClientError, type ClientError, clientErrorWords } from '../platform/client-error-answer.ts';
import { KeyRefusalLines } from '../platform/key-refusal-lines.ts';
import { admitRequest, type OnRequestEnd } from '../platform/pipelined-requests.ts';
import { WriteDeadline } from '../platform/write-deadline.ts';
import { AnswerDelivery } from './answer-delivery.ts';
import { ApiNames } from './api-names.ts';
import { anonymous, type Caller, KeyTable } from './auth.ts';
import { type ErrorBody, httpStatusOf, invalid } from './errors.ts';
import { answerFailure, type HttpLog } from './failure-answer.ts';
import { jobIdFrom } from './job-json.ts';
import { EncodedJson, encodeJson } from './json-answer.ts';
import { buildOpenApi, openApiPath } from './openapi.ts';
import { BodyReader, callerOf } from './request-reading.ts';
import type { ApiContext, ApiRequest, JsonRoute, RouteSpec } from './route-spec.ts';
import { Router } from './router.ts';
import { eventsRoute } from './routes/events-route.ts';
import { producerRoutes } from './routes/producer-routes.ts';
import { serverInfoRoute } from './routes/server-info-route.ts';
import { workerRoutes } from './routes/worker-routes.ts';
import { workflowRoutes } from './routes/workflow-routes.ts';
import type { JsonSchema } from './schema-primitives.ts';
import { components } from './schemas.ts';
import { EventStreamResponse } from './sse.ts';
import { UnsentAnswers } from './unsent-answers.ts';

export type HttpLimits = Omit<HttpConfig, 'tls' | 'insecureAllowUnauthenticated'>;

export interface HttpApiOptions {
  engine: Engine;
  /** The engine's clock: long-poll timers run on it. */
  clock: Clock;
  apiKeys: readonly ApiKey[];
  limits: HttpLimits;
  tls?: { certPem: Buffer; keyPem: Buffer };
  /** The server's version, in the OpenAPI document. */
  version: string;
  /**
   * grpc.max_event_subscribers_per_key in force (a reload changes it): one key's event streams
   * and outcome waits, with its gRPC Events streams.
   */
  maxEventSubscribersPerKey: () => number;
  /** http.write_timeout_ms in force (a reload changes it); default: `limits.writeTimeoutMs`. */
  writeTimeoutMs?: () => number;
  log?: HttpLog;
}

export interface HttpApi {
  /** Listens on `host:port` (port 0 picks a free one); resolves with the bound port. */
  listen(host: string, port: number): Promise<number>;
  /** Replaces the API keys (a reload): every later request is checked against them. */
  replaceApiKeys(keys: readonly ApiKey[]): void;
  /**
   * Graceful stop: refuse new connections and requests (503), end event
   * streams, answer waits and long-polls now, then wait up to `timeoutMs` for
   * requests in flight before closing every connection.
   */
  shutdown(timeoutMs: number): Promise<void>;
  /** The OpenAPI document this server serves. */
  readonly openApi: JsonSchema;
  /** Request bytes held now (tests, diagnostics). */
  inFlight(): { total: number; keys: number };
  /** Connections: open now, and closed for http.write_timeout_ms since the start (tests). */
  connections(): Promise<{ open: number; writeTimeouts: number }>;
  /** Connections closed for http.write_timeout_ms since the start (metrics). */
  writeTimeouts(): number;
  /** Requests refused (429) since the start because answers not yet read filled a budget (metrics). */
  unreadAnswersRefused(): number;
  /**
   * Writes' answers larger than the room reserved for them that overdrew a full budget, since the
   * start: 0 while the bounds of answer-bounds.ts hold (metrics: sepp.answers.beyond_room).
   */
  unreadAnswersOverdrawn(): number;
}

/** The routes of the API, for the OpenAPI document without a server (scripts, tests). */
export function apiRoutes(ctx: ApiContext): RouteSpec[] {
  return [
    ...producerRoutes(ctx),
    ...workflowRoutes(ctx),
    ...workerRoutes(ctx),
    eventsRoute(ctx),
    serverInfoRoute(ctx),
  ];
}

/** The operation that serves the document itself. */
export function openApiRoute(document: () => JsonSchema): JsonRoute {
  // Encoded once, and every answer holds those bytes, not a copy: the document is open to callers
  // without a key, who may ask for it on every connection they can open and never read the answer.
  let encoded: EncodedJson | undefined;
  return {
    kind: 'json',
    method: 'GET',
    path: openApiPath,
    operationId: 'getOpenApi',
    permission: 'public',
    scope: 'none',
    tag: 'meta',
    summary: 'This document',
    response: { type: 'object' },
    handle: () => {
      encoded ??= new EncodedJson(Buffer.from(JSON.stringify(document())));
      return encoded;
    },
  };
}

/** The OpenAPI document of this API as the server serves it at /v1/openapi.json, without a server (docs/http-openapi.json). */
export function openApiDocument(version: string): JsonSchema {
  const inert: ApiContext = {
    get engine(): Engine {
      throw new Error('bug: a route handler ran while only the document was being built');
    },
    version,
    clock: systemClock,
    draining: () => false,
    onDrain: () => () => {},
    onKeysChanged: () => () => {},
    maxRequestBytes: 0,
    eventOwner: () => undefined,
  };
  const routes = apiRoutes(inert);
  let document: JsonSchema = {};
  routes.push(openApiRoute(() => document));
  document = buildOpenApi(routes, version);
  return document;
}

/** The query of a request without one (handlers only read it). */
const noQuery = new URLSearchParams();

export function createHttpApi(options: HttpApiOptions): HttpApi {
  const { engine, limits } = options;
  const keys = new KeyTable(options.apiKeys);
  const bodies = new BodyReader(limits);
  let beyondReservationTold = false;
  // Only a key's own clients see its 429s: the log names the key too, once a minute at most.
  const answerRefusals = new KeyRefusalLines(
    (key, { refused, givenBack }) =>
      options.log?.warn('http.answers_refused', {
        key,
        refused,
        given_back: givenBack,
        detail:
          `${refused} requests of API key ${key} were refused 429 since the last line, and ${givenBack} reserve ` +
          'answers not sent (or not whole) had their jobs given back: its clients do not read their answers ' +
          '(http.max_in_flight_bytes_per_key, http.max_in_flight_bytes, http.write_timeout_ms; docs/configuration.md, "Answers not yet sent")',
      }),
    () => options.clock.nowMs(),
  );
  const answers = new UnsentAnswers(limits, (operation, bytes, reservedBytes) => {
    // A bound of answer-bounds.ts is wrong: told once. Those that overdrew a full budget are
    // counted (unreadAnswersOverdrawn(), the metric sepp_answers_beyond_room_total{sepp_door="http"}).
    if (beyondReservationTold) return;
    beyondReservationTold = true;
    options.log?.warn('http.answer_beyond_reservation', {
      operation,
      bytes,
      reserved_bytes: reservedBytes,
      detail:
        'a write answered more than the room reserved for its answer (a bug); sent all the same, ' +
        'overdrawing the budgets of answers not yet sent if they were full; told once',
    });
  });
  let draining = false;
  const drainListeners = new Set<() => void>();
  const keyListeners = new Set<() => void>();
  const ctx: ApiContext = {
    engine,
    version: options.version,
    clock: options.clock,
    draining: () => draining,
    onDrain(listener) {
      drainListeners.add(listener);
      return () => drainListeners.delete(listener);
    },
    onKeysChanged(caller, listener) {
      const check = () => listener(keys.changedFor(caller));
      keyListeners.add(check);
      return () => keyListeners.delete(check);
    },
    maxRequestBytes: limits.maxRequestBytes,
    eventOwner: (caller) =>
      caller === anonymous
        ? undefined
        : { key: caller.name, maxSubscriptions: options.maxEventSubscribersPerKey() },
  };
  const routes = apiRoutes(ctx);
  for (const route of routes) {
    if (isWrite(route) && route.answerBytesMax === undefined)
      throw new Error(`bug: the write ${route.operationId} has no bound of its answer (answerBytesMax)`);
  }
  let document: JsonSchema = {};
  routes.push(openApiRoute(() => document));
  document = buildOpenApi(routes, options.version);
  const router = new Router(routes);
  /** Each operation's names for the fields the engine's messages name as the protocol does. */
  const namesOf = new Map(
    routes.map((route) => [
      route,
      ApiNames.of(
        [route.body ?? {}, route.kind === 'json' ? route.response : route.event],
        components,
        Object.keys(route.query ?? {}),
      ),
    ]),
  );

  let active = 0;
  let onIdle: (() => void) | undefined;

  const serve = async (
    req: IncomingMessage,
    res: ServerResponse,
    expectContinue: boolean,
    onEnd: OnRequestEnd,
  ): Promise<void> => {
    // Made when a handler asks for it (a long-poll, a stream): most requests never do.
    let abort: AbortController | undefined;
    let release = () => {};
    let leaveRead = () => {};
    let ended = false;
    // When its answer closes, or its connection does (an answer waiting behind another is never closed).
    onEnd(() => {
      ended = true;
      abort?.abort();
      leaveRead();
      release();
      active--;
      if (active === 0) onIdle?.();
    });
    let operation = `${req.method ?? ''} ${req.url ?? ''}`.slice(0, 200);
    // A client that sent `Expect: 100-continue` holds its body until it is told to send it.
    let bodyHeldBack = expectContinue;
    const askForBody = expectContinue
      ? () => {
          bodyHeldBack = false;
          res.writeContinue();
        }
      : null;
    let names: ApiNames | undefined;
    // Its answer's room in the budgets, and the handler's undo if the answer is lost.
    const answer = new AnswerDelivery(
      onEnd,
      (error) =>
        options.log?.error('http.internal_error', {
          operation,
          error: error instanceof Error ? error.message : String(error),
        }),
      answerRefusals,
    );
    try {
      const target = req.url ?? '';
      if (!target.startsWith('/')) throw invalid('the request target must be a path, e.g. /v1/jobs');
      const q = target.indexOf('?');
      const path = q < 0 ? target : target.slice(0, q);
      const { route, params } = router.match(req.method ?? '', path);
      operation = `${route.method} ${route.path}`;
      names = namesOf.get(route);
      if (draining)
        throw new SeppError('unavailable', 'sepp is shutting down; retry against the restarted server');
      const caller = callerOf(keys, req, route, operation);
      const query = q < 0 ? noQuery : new URLSearchParams(target.slice(q + 1));
      refuseUnknownQuery(operation, Object.keys(route.query ?? {}), query);
      // A key whose answers not yet read fill its budget is refused before anything is done; one
      // let in keeps room for its answer until it is held, and holds that until the request ends.
      if (route.kind === 'json') answer.admit(answers, caller.name, operation, route.longPoll === true);
      // A read counts toward its key's share of the store's read queue (engine/read-shares.ts),
      // from before a scoped key's check of the job's queue, which reads the store too. A
      // long-poll counts only while it reads (that check, and the reads of its handler).
      const reads = route.kind === 'json' && route.permission === 'read';
      if (reads && route.longPoll !== true) leaveRead = engine.enterRead(caller.name);
      /** The job a scoped caller's request names: its NOT_FOUND is answered as for another queue's. */
      let scopedJobId: string | undefined;
      if (caller.scope !== null && route.scope === 'job') {
        scopedJobId = jobIdFrom(params.jobId ?? '', 'jobId');
        const leaveCheck = reads && route.longPoll === true ? engine.enterRead(caller.name) : () => {};
        try {
          await requireJobsInScope(caller, [scopedJobId], (id) => queueOfJob(engine, id));
        } finally {
          leaveCheck();
        }
      }
      const body = await bodies.read(req, route, caller, askForBody, (r) => {
        release = r;
      });
      /**
       * A long-poll of a key a reload removes (or whose role or queues it changes) stops waiting
       * and answers why, as an event stream ends: a revoked key is not handed a job, or a
       * result, in the minute its wait may still last.
       */
      const endOnKeyChange = (who: Caller): { error: SeppError | null } => {
        const revoked: { error: SeppError | null } = { error: null };
        const stop = ctx.onKeysChanged(who, (ended) => {
          if (ended === null) return;
          revoked.error = ended;
          abort ??= new AbortController();
          abort.abort();
        });
        onEnd(stop);
        return revoked;
      };
      const request: ApiRequest = {
        caller,
        params,
        query,
        body,
        headers: req.headers,
        peer: `${req.socket.remoteAddress ?? ''}:${req.socket.remotePort ?? ''}`,
        get signal() {
          abort ??= new AbortController();
          if (ended) abort.abort();
          return abort.signal;
        },
        onAnswerLost(undo) {
          answer.onLost(undo);
        },
      };
      if (route.kind === 'json') {
        // A write keeps room for the most it can answer before it runs, or is refused now.
        if (isWrite(route)) answer.reserve(route.answerBytesMax?.(request) ?? 0);
        const revoked = route.longPoll === true ? endOnKeyChange(caller) : null;
        const value = await jsonRouteAnswer(route, request, scopedJobId, revoked);
        if (res.writableEnded || res.destroyed) answer.lost(false);
        else answer.send(res, encodeJson(value), draining);
        return;
      }
      const stream = new EventStreamResponse(res, draining ? { Connection: 'close' } : {});
      try {
        route.open(request, stream);
      } catch (error) {
        if (!stream.started) throw error;
        stream.end();
      }
    } catch (error) {
      // An error is answered instead of what the handler had done (a refused answer, a revoked key).
      answer.failed();
      // A refused body is not handled: the bytes it counted in flight are given back now, not
      // when the rest of it has been dropped.
      release();
      release = () => {};
      answerFailure(error, {
        req,
        res,
        operation,
        names,
        bodyHeldBack,
        maxRequestBytes: limits.maxRequestBytes,
        closing: draining,
        log: options.log,
      });
    }
  };

  // An answer its client takes nothing of for http.write_timeout_ms closes its connection.
  const writeDeadline = new WriteDeadline({
    timeoutMs: options.writeTimeoutMs ?? (() => limits.writeTimeoutMs),
    onTimeout: ({ peer, pendingBytes, timeoutMs }) =>
      options.log?.warn('http.write_timeout', {
        peer,
        pending_bytes: pendingBytes,
        detail: `the client took nothing of its answer for ${timeoutMs} ms (http.write_timeout_ms): connection closed`,
      }),
  });

  const handler = (req: IncomingMessage, res: ServerResponse, expectContinue = false) => {
    // Past the open requests a connection may have (pipelining), it is closed: nothing is done for it.
    const onEnd = admitRequest(req, res);
    if (onEnd === null) return;
    writeDeadline.watch(req.socket);
    active++;
    serve(req, res, expectContinue, onEnd).catch((error: unknown) => {
      // serve() answers its own errors; reaching here is a bug, and the request cannot be answered.
      options.log?.error('http.internal_error', {
        error: error instanceof Error ? error.message : String(error),
      });
      res.destroy();
    });
  };

  const serverOptions = {
    requireHostHeader: false,
    headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.idleTimeoutMs,
    // Node checks the deadlines on this timer (default: every 30 s, which stretches a 10 s deadline to 40 s).
    connectionsCheckingInterval: Math.max(
      10,
      Math.min(1000, Math.ceil(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 10)),
    ),
  };
  const server: Server =
    options.tls === undefined
      ? createHttpServer(serverOptions, (req, res) => handler(req, res))
      : createHttpsServer(
          { ...serverOptions, cert: options.tls.certPem, key: options.tls.keyPem },
          (req, res) => handler(req, res),
        );
  server.maxConnections = limits.maxConnections;
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => handler(req, res, true));
  server.on('clientError', (error: ClientError, socket: Duplex) => answerUnparsed(error, socket));

  return {
    openApi: document,
    inFlight: () => bodies.held,
    writeTimeouts: () => writeDeadline.closed,
    unreadAnswersRefused: () => answers.refused,
    unreadAnswersOverdrawn: () => answers.overdrawn,
    connections: () =>
      new Promise((resolve) =>
        server.getConnections((error, open) =>
          resolve({ open: error ? 0 : open, writeTimeouts: writeDeadline.closed }),
        ),
      ),
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      }),
    replaceApiKeys(next) {
      keys.replace(next);
      for (const listener of [...keyListeners]) listener();
    },
    async shutdown(timeoutMs) {
      if (!draining) {
        draining = true;
        for (const listener of [...drainListeners]) listener();
        engine.drainWaiters();
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (active > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeoutMs);
          timer.unref();
          onIdle = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      server.closeAllConnections();
      writeDeadline.stop();
      await closed;
    },
  };
}

/** A write: its answer is sent once it ran, so room for it is reserved before (answer-delivery.ts). */
function isWrite(route: RouteSpec): route is JsonRoute {
  return route.kind === 'json' && route.method === 'POST' && route.longPoll !== true;
}

/**
 * What a JSON route answers: its handler's value; a NOT_FOUND of the job a scoped caller named
 * (`hiddenJobId`) as for a job of another queue; and for a long-poll whose key a reload changed
 * (`revoked`), why it stopped waiting, whatever its handler answered.
 */
async function jsonRouteAnswer(
  route: JsonRoute,
  request: ApiRequest,
  hiddenJobId: string | undefined,
  revoked: { error: SeppError | null } | null,
): Promise<unknown> {
  const handled =
    hiddenJobId === undefined
      ? route.handle(request)
      : Promise.resolve()
          .then(() => route.handle(request))
          .catch((error: unknown) => {
            throw hideNotFound(error, 'job', hiddenJobId);
          });
  if (revoked === null) return await handled;
  return await Promise.resolve(handled).then(
    (answer) => {
      if (revoked.error !== null) throw revoked.error;
      return answer;
    },
    (error: unknown) => {
      throw revoked.error ?? error;
    },
  );
}

/** Node's parser gave up on the bytes (or the request took too long): the API's JSON error on the raw socket. */
function answerUnparsed(error: ClientError, socket: Duplex): void {
  const { code, message, reason } = clientErrorWords(error, 'http.request_timeout_ms');
  answerClientError(error, socket, {
    status: httpStatusOf[code],
    reason,
    json: JSON.stringify({ error: { code, message } } satisfies ErrorBody),
  });
}
