/**
 * Every operation of the HTTP API is declared once, as data: method, path,
 * the permission it needs, its documentation, its request and answer
 * schemas, and its handler. The server routes requests from these
 * declarations and the OpenAPI document is generated from the same list
 * (openapi.ts), as the admin app does (src/admin/route-spec.ts); the request
 * readers accept exactly the fields the request schema lists.
 */

import type { IncomingHttpHeaders } from 'node:http';
import type { QueryParamDoc } from '../api-schema/openapi.ts';
import type { Clock } from '../engine/clock.ts';
import type { Engine } from '../engine/engine.ts';
import type { SeppError } from '../engine/errors.ts';
import type { EventOwner } from '../engine/events/index.ts';
import type { Caller, Permission } from './auth.ts';
import type { HttpErrorCode } from './errors.ts';
import type { JsonInput } from './json-input.ts';
import type { JsonSchema } from './schema-primitives.ts';
import type { EventStreamResponse } from './sse.ts';

/** What the handlers share. */
export interface ApiContext {
  readonly engine: Engine;
  /** The server's version (GET /v1/server-info, the OpenAPI document). */
  readonly version: string;
  /** Long-poll timers (the engine's clock, so tests can drive them). */
  readonly clock: Clock;
  /** True once shutdown began: new requests get 503, waits answer at once. */
  readonly draining: () => boolean;
  /** Called when shutdown begins; returns the unsubscribe. */
  readonly onDrain: (listener: () => void) => () => void;
  /**
   * Called after a reload replaced the API keys, with why `caller` may no longer
   * go on (its key is gone, or its role or queues changed), or null; returns the unsubscribe.
   */
  readonly onKeysChanged: (caller: Caller, listener: (ended: SeppError | null) => void) => () => void;
  /** http.max_request_bytes: also the default and the most a reserve's answer may hold. */
  readonly maxRequestBytes: number;
  /**
   * Who holds an event subscription `caller` opens (an event stream, an outcome wait): its key,
   * bounded by grpc.max_event_subscribers_per_key over both APIs; none without keys.
   */
  readonly eventOwner: (caller: Caller) => EventOwner | undefined;
}

/** One request as a handler sees it, after authentication and the body's checks. */
export interface ApiRequest {
  readonly caller: Caller;
  /** Path parameters by name, as written (not decoded). */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The JSON body; null for operations without one. */
  readonly body: JsonInput | null;
  readonly headers: IncomingHttpHeaders;
  /** The client's address (ip:port), as the Workers list shows it. */
  readonly peer: string;
  /** Aborted when the client goes away (or the response is done). */
  readonly signal: AbortSignal;
  /**
   * Runs `undo` (once; a rejection that is a bug is logged) if the answer this handler returns
   * never reaches its client whole: refused for the answers its key has not read
   * (unsent-answers.ts), its connection closed before all of it was written (the write
   * deadline, the client gone), or an error answered instead. A reserve gives its jobs back.
   * `partlySent`: some of the answer may have reached the client (its writing had begun), so
   * what it named may be acted on: a reserve then gives its jobs back with their attempts
   * counted, never under the attempt (and lease token) the client may hold.
   */
  onAnswerLost(undo: (partlySent: boolean) => Promise<unknown>): void;
}

interface RouteBase {
  method: 'GET' | 'POST';
  /** OpenAPI form: /v1/jobs/{jobId}/ack. */
  path: string;
  /** The OpenAPI operationId; the gRPC method it mirrors has the same name, capitalised. */
  operationId: string;
  permission: Permission;
  /**
   * How a key scoped to queues is held to them: `job` — the server looks up the
   * job of the `jobId` path parameter first (NOT_FOUND outside the scope);
   * `handler` — the handler checks the queues its request names; `none` — no queue.
   */
  scope: 'job' | 'handler' | 'none';
  tag: 'producers' | 'workers' | 'workflows' | 'events' | 'meta';
  summary: string;
  description?: string;
  pathParams?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, QueryParamDoc>>;
  /** Schema of the JSON body; absent: the operation takes none (a body is refused). */
  body?: JsonSchema;
  /** Error codes this operation answers besides the ones every operation may (400, 401, 413, 429, 503…). */
  errors?: readonly HttpErrorCode[];
  /**
   * A long-poll: it waits for something to happen, not for the store, so it does not count
   * toward its key's share of the store's read queue (src/engine/read-shares.ts) while it
   * waits, as other `read` operations do; and a reload that revokes its key ends the wait.
   */
  longPoll?: true;
}

/** An operation answered with one JSON document (status 200). */
export interface JsonRoute extends RouteBase {
  kind: 'json';
  response: JsonSchema;
  /**
   * A write's (a POST that is not a long-poll; each must have one): the most bytes its 200 answer
   * can be, from its parsed request, reserved in the budgets of answers not yet sent before its
   * handler runs (answer-bounds.ts). Its answer must never exceed it.
   */
  answerBytesMax?(request: ApiRequest): number;
  /** The answer (RawJson values inside are written as they are); a throw becomes the error answer. */
  handle(request: ApiRequest): unknown;
}

/** An operation answered with a stream of Server-Sent Events. */
export interface StreamRoute extends RouteBase {
  kind: 'sse';
  /** Schema of each event's `data`. */
  event: JsonSchema;
  /** Starts the stream; a throw before anything was written becomes the error answer. */
  open(request: ApiRequest, stream: EventStreamResponse): void;
}

export type RouteSpec = JsonRoute | StreamRoute;
