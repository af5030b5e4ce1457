/**
 * The JSON Schema building blocks both JSON APIs (the admin API in src/admin, the HTTP API
 * in src/http) use for the same things, so one shape has one definition.
 */

/** JSON Schema, as OpenAPI 3.1 uses it. */
export type JsonSchema = Record<string, unknown>;

export const str: JsonSchema = { type: 'string' };
export const strOrNull: JsonSchema = { type: ['string', 'null'] };
export const int: JsonSchema = { type: 'integer' };
export const msOrNull: JsonSchema = { type: ['integer', 'null'], description: 'ms since the Unix epoch' };
export const uuid: JsonSchema = { type: 'string', format: 'uuid' };
