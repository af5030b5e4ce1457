/**
 * Reading request input: query parameters and JSON bodies, each checked with
 * a message that names the field. Bodies must be `application/json` — which
 * also means a cross-site form cannot send one without a CORS preflight that
 * this server never grants.
 */
import type { Context } from 'hono';
import { checkIdsPerCall, holdsNul, nulRefusal } from '../engine/checks.ts';
import { SeppError } from '../engine/errors.ts';
import { pageSizeProblem } from '../engine/page-size.ts';
import { AdminHttpError } from './http-errors.ts';

export function bad(message: string): SeppError {
  return new SeppError('invalid_argument', message);
}

export type JsonObject = Record<string, unknown>;

/** The request's JSON object body; an empty body reads as `{}`. */
export async function readJsonObject(c: Context): Promise<JsonObject> {
  const type = (c.req.header('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
  const text = await c.req.text();
  if (text.length === 0) return {};
  if (type !== 'application/json') {
    throw new AdminHttpError(
      'invalid_argument',
      'send the request body as JSON (Content-Type: application/json)',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw bad('the request body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw bad('the request body must be a JSON object');
  }
  return value as JsonObject;
}

export function optionalString(body: JsonObject, field: string, maxLength = 4096): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw bad(`${field} must be a string`);
  if (value.length > maxLength) throw bad(`${field} is longer than ${maxLength} characters`);
  if (holdsNul(value)) throw bad(`${field} ${nulRefusal}`);
  return value;
}

export function requiredString(body: JsonObject, field: string, maxLength = 4096): string {
  const value = optionalString(body, field, maxLength);
  if (value === undefined || value === '') throw bad(`${field} is required`);
  return value;
}

export function optionalInteger(body: JsonObject, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw bad(`${field} must be an integer`);
  return value;
}

export function optionalBoolean(body: JsonObject, field: string): boolean | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') throw bad(`${field} must be true or false`);
  return value;
}

export function stringArray(body: JsonObject, field: string, maxItems: number): string[] {
  const value = body[field];
  if (!Array.isArray(value) || value.length === 0) throw bad(`${field} must be a non-empty array of strings`);
  if (value.length > maxItems)
    throw bad(`${field} has ${value.length} items; at most ${maxItems} per request`);
  if (!value.every((v): v is string => typeof v === 'string' && v.length > 0 && v.length <= 256)) {
    throw bad(`${field} must hold only non-empty strings`);
  }
  if (value.some(holdsNul)) throw bad(`${field}: an item ${nulRefusal}`);
  return value;
}

/**
 * The ids a call names, at most limits.max_batch_jobs: more is over a per-call bound, which the
 * HTTP API and the engine answer 413 (SeppError.tooLarge) in the same words; the rest as stringArray.
 */
export function batchIds(body: JsonObject, field: string, maxBatchJobs: number): string[] {
  const value = body[field];
  if (Array.isArray(value)) checkIdsPerCall(field, value.length, maxBatchJobs);
  return stringArray(body, field, maxBatchJobs);
}

export function stringMap(body: JsonObject, field: string): Record<string, string> | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw bad(`${field} must be an object of strings`);
  const entries = Object.entries(value as JsonObject);
  for (const [key, v] of entries) {
    if (typeof v !== 'string') throw bad(`${field}.${key} must be a string`);
    if (holdsNul(key) || holdsNul(v)) throw bad(`${field}: a key or value ${nulRefusal}`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/**
 * A query parameter given once, or undefined (also when empty). Given twice (`?state=a&state=b`)
 * it is refused, as the HTTP API does: taking one of them would answer a question not asked.
 */
export function queryString(c: Context, name: string, maxLength = 512): string | undefined {
  const values = c.req.queries(name) ?? [];
  if (values.length > 1) throw bad(`${name}: give it once`);
  const value = values[0];
  if (value === undefined || value === '') return undefined;
  if (value.length > maxLength) throw bad(`${name} is longer than ${maxLength} characters`);
  if (holdsNul(value)) throw bad(`${name} ${nulRefusal}`);
  return value;
}

export function queryInteger(c: Context, name: string): number | undefined {
  const value = queryString(c, name, 20);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw bad(`${name} must be a whole number`);
  return Number(value);
}

/**
 * A list's `limit` (its page size): none for 0 or absent, which the engine reads as the list's
 * default; above limits.max_page_size is refused naming `limit` (the engine would say page_size).
 */
export function queryPageSize(c: Context, maxPageSize: number): number | undefined {
  const size = queryInteger(c, 'limit');
  if (size !== undefined && size > maxPageSize) throw bad(pageSizeProblem('limit', size, maxPageSize));
  return size === 0 ? undefined : size;
}

export function queryChoice<T extends string>(
  c: Context,
  name: string,
  choices: readonly T[],
): T | undefined {
  const value = queryString(c, name, 64);
  if (value === undefined) return undefined;
  if (!(choices as readonly string[]).includes(value))
    throw bad(`${name} must be one of ${choices.join(', ')}`);
  return value as T;
}

export function pathParam(c: Context, name: string): string {
  const value = c.req.param(name);
  if (value === undefined || value === '') throw bad(`${name} is missing from the path`);
  if (holdsNul(value)) throw bad(`${name} ${nulRefusal}`);
  return value;
}
