/**
 * What both APIs' OpenAPI documents write alike: a route's path and query parameters, as both
 * APIs declare them, and the sentence that says how error codes map to statuses.
 */
import { requestTooLargeStatus } from './error-status.ts';
import type { JsonSchema } from './primitives.ts';

export interface QueryParamDoc {
  description: string;
  schema: JsonSchema;
}

/** What a route declares of its parameters: path ones by name and description, query ones with a schema. */
export interface RouteParams {
  pathParams?: Readonly<Record<string, string>>;
  query?: Readonly<Record<string, QueryParamDoc>>;
}

/** The operation's `parameters`: path ones first (required strings), then the optional query ones. */
export const openApiParameters = (route: RouteParams): JsonSchema[] => [
  ...Object.entries(route.pathParams ?? {}).map(([name, description]) => ({
    name,
    in: 'path',
    required: true,
    description,
    schema: { type: 'string' },
  })),
  ...Object.entries(route.query ?? {}).map(([name, doc]) => ({
    name,
    in: 'query',
    required: false,
    description: doc.description,
    schema: doc.schema,
  })),
];

/** The document's sentence on errors, from the API's table of code to status. */
export const errorsSentence = (statusOf: Readonly<Record<string, number>>): string =>
  `Errors are {"error": {"code", "message"}}; codes map to statuses as: ${Object.entries(statusOf)
    .map(([code, status]) => `${code} ${status}`)
    .join(', ')}; but a resource_exhausted whose request is over a per-call limit (jobs in a batch, ` +
  `acks or ids in one call…) is ${requestTooLargeStatus}, without Retry-After: split the request or make it smaller.`;
