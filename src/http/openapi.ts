/**
 * The OpenAPI 3.1 document of the HTTP API, served at /v1/openapi.json and
 * committed as docs/http-openapi.json, generated from the same route
 * declarations the server dispatches to (tests/http/openapi.test.ts checks
 * that the committed file is this document and calls every operation in it).
 * Each operation names the permission it needs (`x-sepp-permission`) and the
 * roles that hold it.
 */

import { requestTooLargeStatus } from '../api-schema/error-status.ts';
import { errorsSentence, openApiParameters } from '../api-schema/openapi.ts';
import { rolesWith } from './auth.ts';
import { type HttpErrorCode, httpStatusOf } from './errors.ts';
import type { RouteSpec } from './route-spec.ts';
import { type JsonSchema, ref } from './schema-primitives.ts';
import { components } from './schemas.ts';

export const openApiPath = '/v1/openapi.json';

const errorWords: Readonly<Record<HttpErrorCode, string>> = {
  invalid_argument: 'invalid input; the message names the field',
  unauthenticated: 'no API key, or not a valid one',
  permission_denied:
    'the key may not do this: its role or queues do not allow the operation, or it acts on what is not its own ' +
    "(another key's batch; an add from a batch member without that member's lease token)",
  not_found: 'no such job or queue (or the job is not leased)',
  method_not_allowed: 'the path exists for another method (see Allow)',
  request_timeout: 'the request took longer than http.request_timeout_ms to arrive',
  lease_lost: 'the attempt does not match: the lease expired and the job was handed out again',
  job_cancelled: 'the job was cancelled while leased: stop working on it',
  job_timed_out: 'the attempt ran past its hard timeout (timeout_ms): stop working on it',
  failed_precondition: 'the job or queue is not in a state that allows this',
  already_exists: 'it exists already',
  payload_too_large: 'the body is larger than http.max_request_bytes',
  unsupported_media_type: 'the body is not Content-Type: application/json',
  out_of_range: 'the resume point is not kept (the server restarted, or the events were dropped)',
  resource_exhausted:
    'a limit was reached for now (queue full, bytes in flight, waiters, subscribers); retry after Retry-After',
  headers_too_large: 'the request headers are too large',
  internal: 'a bug; the server log has details',
  unavailable: 'storage unavailable or shutting down; safe to retry after Retry-After',
};

/** The 413 a `resource_exhausted` answers when the call itself is over a per-call bound (SeppError.requestTooLarge). */
const requestTooLargeWords =
  '`resource_exhausted`: the request is over a per-call limit (jobs in a batch or flow, acks in one call, a first ' +
  'job larger than maxResponseBytes); no retry of it can pass, so no Retry-After: split it or make it smaller';

/** Errors every operation may answer: bad input, limits, shutdown, bugs. */
const common: readonly HttpErrorCode[] = [
  'invalid_argument',
  'payload_too_large',
  'unsupported_media_type',
  'resource_exhausted',
  'internal',
  'unavailable',
];

function responsesOf(route: RouteSpec): Record<string, JsonSchema> {
  const responses: Record<string, JsonSchema> = {
    '200':
      route.kind === 'json'
        ? { description: 'OK', content: { 'application/json': { schema: route.response } } }
        : {
            description: 'A stream of Server-Sent Events; each `data` is one of these',
            content: { 'text/event-stream': { schema: route.event } },
          },
  };
  const codes = new Set<HttpErrorCode>([
    ...common,
    ...(route.permission === 'public' ? [] : (['unauthenticated', 'permission_denied'] as const)),
    ...(route.errors ?? []),
  ]);
  const byStatus = new Map<number, string[]>();
  const add = (status: number, words: string) =>
    byStatus.set(status, [...(byStatus.get(status) ?? []), words]);
  for (const code of codes) add(httpStatusOf[code], `\`${code}\`: ${errorWords[code]}`);
  if (codes.has('resource_exhausted')) add(requestTooLargeStatus, requestTooLargeWords);
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: list.join('; '),
      content: { 'application/json': { schema: ref('Error') } },
    };
  }
  return responses;
}

export function buildOpenApi(routes: readonly RouteSpec[], version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const parameters = openApiParameters(route);
    const who =
      route.permission === 'public'
        ? 'No API key needed.'
        : `Needs ${rolesWith(route.permission)} (an API key with it, unless the server has no keys).`;
    const operation: JsonSchema = {
      tags: [route.tag],
      summary: route.summary,
      description: [route.description, who].filter(Boolean).join('\n\n'),
      operationId: route.operationId,
      'x-sepp-permission': route.permission,
      parameters,
      responses: responsesOf(route),
      ...(route.permission === 'public' ? { security: [] } : {}),
    };
    if (route.body !== undefined) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: route.body } } };
    }
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'sepp HTTP API',
      version,
      description: [
        'The HTTP/JSON API for applications (docs/http.md): enqueue, reserve, ack, nack, extend, progress,',
        'outcomes and events, with the API keys and roles of gRPC as `Authorization: Bearer <key>`.',
        "Field names are the protocol's JSON names; JSON payloads and results travel as JSON values, other",
        'bytes as base64; integers are accepted as numbers or strings of digits.',
        errorsSentence(httpStatusOf),
      ].join(' '),
    },
    servers: [{ url: '/' }],
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'an API key of [[grpc.api_keys]]' },
      },
    },
    security: [{ apiKey: [] }],
    paths,
  };
}
