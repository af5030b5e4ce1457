/**
 * GET /v1/server-info: what an HTTP client needs to know of the server before it relies on
 * something — its version, its clock, the limits in force (the protocol's ServerLimits names) and
 * its protocol features — as GetServerInfo answers them. Nothing of where it runs or its store:
 * GetServerInfo gives those to an admin key for every queue alone, and an HTTP client has no use
 * for them.
 */
import { protocolFeatures } from '../../api-schema/protocol-features.ts';
import { defaultEngineLimits } from '../../engine/settings.ts';
import type { ApiContext, JsonRoute } from '../route-spec.ts';
import { int, type JsonSchema, ms, str } from '../schema-primitives.ts';

/** Every engine limit, an integer each, by the protocol's JSON name; and the HTTP API's own. */
const limitNames = [...Object.keys(defaultEngineLimits), 'maxRequestBytes'];
const limitsSchema: JsonSchema = {
  type: 'object',
  description:
    "the server-wide limits in force (a reload changes them), named as GetServerInfo's `limits`; " +
    '`maxRequestBytes` is http.max_request_bytes',
  properties: Object.fromEntries(limitNames.map((name) => [name, int])),
  required: limitNames,
};

const serverInfoResponse: JsonSchema = {
  type: 'object',
  properties: {
    version: { ...str, description: "sepp's version, e.g. 0.1.0" },
    serverTimeMs: { ...ms, description: "the server's clock now, in ms since the Unix epoch" },
    limits: limitsSchema,
    features: {
      type: 'array',
      items: str,
      description:
        'protocol features this server has that older ones lack, by name (docs/protocol.md, "Features"); ' +
        'a server without this operation has none of them',
    },
  },
  required: ['version', 'serverTimeMs', 'limits', 'features'],
};

export function serverInfoRoute(ctx: ApiContext): JsonRoute {
  return {
    kind: 'json',
    method: 'GET',
    path: '/v1/server-info',
    operationId: 'getServerInfo',
    permission: 'read',
    scope: 'none',
    tag: 'meta',
    summary: "The server's version, clock, limits and protocol features",
    response: serverInfoResponse,
    handle: () => ({
      version: ctx.version,
      serverTimeMs: ctx.clock.nowMs(),
      limits: { ...ctx.engine.limits, maxRequestBytes: ctx.maxRequestBytes },
      features: [...protocolFeatures],
    }),
  };
}
