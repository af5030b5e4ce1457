/**
 * The OpenAPI 3.1 document served at /api/openapi.json, generated from the
 * same route declarations the app registers. Each operation names the role it
 * needs (`x-sepp-role`, and in words in its description) and whether it is
 * audited.
 */
import { errorsSentence, openApiParameters } from '../api-schema/openapi.ts';
import { httpStatusOf } from './http-errors.ts';
import { isSharedRead, type JsonSchema, type RouteSpec } from './route-spec.ts';
import { components } from './schemas.ts';

export const openApiPath = '/api/openapi.json';

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

export function buildOpenApi(routes: readonly RouteSpec[], version: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const parameters = openApiParameters(route);
    const who =
      route.access === 'public' ? 'No login needed.' : `Requires the ${route.access} role or higher.`;
    const mutation = route.method !== 'get';
    const notes = [
      route.description,
      who,
      mutation
        ? 'CSRF: same-origin requests only, with the session’s token in X-CSRF-Token (except login).'
        : '',
      route.audits ? `Recorded in the audit log as \`${route.audits}\`.` : '',
    ].filter(Boolean);
    const responses: Record<string, JsonSchema> = {
      '200': { description: 'OK', content: { 'application/json': { schema: route.response } } },
      '400': errorResponse(
        'invalid input, or a query parameter the operation does not list; the message names the field',
      ),
    };
    if (route.access !== 'public') {
      responses['401'] = errorResponse('not logged in, or the session expired');
      responses['403'] = errorResponse('the role is too low, or the CSRF check failed');
    }
    responses['404'] = errorResponse('no such job or queue');
    if (mutation) responses['409'] = errorResponse('the job is not in a state that allows this');
    if (route.method === 'post' && route.path === '/api/v1/session') {
      responses['429'] = errorResponse('too many failed logins; see Retry-After');
    }
    if (isSharedRead(route)) {
      responses['429'] = errorResponse(
        "PostgreSQL: the server's reads wait for a connection and this user has its share of them in flight (store.max_waiting_reads_per_key), or the queue is full; see Retry-After",
      );
    }
    responses['500'] = errorResponse('a bug; the server log has details');
    responses['503'] = errorResponse('storage unavailable or shutting down; safe to retry');
    const operation: JsonSchema = {
      tags: [route.tag],
      summary: route.summary,
      description: notes.join('\n\n'),
      operationId: operationId(route),
      'x-sepp-role': route.access,
      ...(route.audits ? { 'x-sepp-audit-action': route.audits } : {}),
      parameters,
      responses,
      ...(route.access === 'public' ? { security: [] } : {}),
    };
    if (route.body !== undefined) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: route.body } } };
    }
    paths[route.path] ??= {};
    paths[route.path]![route.method] = operation;
  }
  paths[openApiPath] = {
    get: {
      tags: ['meta'],
      summary: 'This document',
      description: 'No login needed.',
      operationId: 'getOpenApi',
      'x-sepp-role': 'public',
      security: [],
      responses: {
        '200': { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } },
      },
    },
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'sepp admin API',
      version,
      description: [
        'The JSON API behind the sepp admin UI. Log in with POST /api/v1/session; the session cookie',
        'then authenticates every call. Roles: viewer (read) < operator (change jobs and queues, read the',
        'audit log) < admin (purge, delete all dead letters, configuration). An operation takes the query',
        'parameters it lists and no other: one it does not list is a 400 naming it, never ignored.',
        errorsSentence(httpStatusOf),
      ].join(' '),
    },
    servers: [{ url: '/' }],
    components: {
      schemas: components,
      securitySchemes: {
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'sepp_session',
          description: '`__Host-sepp_session` under TLS',
        },
        csrf: { type: 'apiKey', in: 'header', name: 'X-CSRF-Token', description: 'from GET /api/v1/session' },
      },
    },
    security: [{ session: [] }],
    paths,
  };
}

function operationId(route: RouteSpec): string {
  const words = route.path
    .replace('/api/v1/', '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => (part.startsWith('{') ? `by-${part.slice(1, -1)}` : part));
  const camel = [route.method, ...words]
    .join('-')
    .split(/[-_]/)
    .map((w, i) => (i === 0 ? w : w.charAt(0).toUpperCase() + w.slice(1)))
    .join('');
  return camel;
}
