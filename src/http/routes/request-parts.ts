/** Reading the parts of a request a handler needs: its body and query parameters, checked with named messages. */
import { closestKey } from '../../config/index.ts';
import { holdsNul, nulRefusal } from '../../engine/checks.ts';
import { invalid } from '../errors.ts';
import type { JsonInput } from '../json-input.ts';
import type { ApiRequest, RouteSpec } from '../route-spec.ts';

/** The JSON body of an operation that declares one (the server read and parsed it). */
export function body(request: ApiRequest): JsonInput {
  if (request.body === null) throw new Error('bug: an operation with a body schema got no body');
  return request.body;
}

/**
 * Refuses a query parameter `route` does not declare, naming the closest one, as
 * JsonInput.only does for body fields: a misspelt filter (`/v1/events?queue=…`)
 * must not widen what the caller gets, nor a misspelt `waitMs` be dropped.
 */
export function refuseUnknownQuery(route: RouteSpec, query: URLSearchParams): void {
  const known = Object.keys(route.query ?? {});
  for (const name of query.keys()) {
    if (known.includes(name)) continue;
    const shown = name.length > 64 ? `${name.slice(0, 64)}…` : name;
    const near = closestKey(name, known);
    throw invalid(
      `${shown}: unknown query parameter of ${route.method} ${route.path}; ${
        known.length === 0
          ? 'it takes none'
          : near === undefined
            ? `its parameters are ${known.join(', ')}`
            : `did you mean ${near}?`
      }`,
    );
  }
}

/** A query parameter given once, or undefined. */
export function queryString(request: ApiRequest, name: string, maxLength = 4096): string | undefined {
  const values = request.query.getAll(name);
  if (values.length === 0) return undefined;
  if (values.length > 1) throw invalid(`${name}: give it once`);
  const value = values[0] ?? '';
  if (value.length > maxLength) throw invalid(`${name}: longer than ${maxLength} characters`);
  if (holdsNul(value)) throw invalid(`${name}: ${nulRefusal}`);
  return value;
}

/** A whole number ≥ 0 given as a query parameter. */
export function queryInteger(request: ApiRequest, name: string): number | undefined {
  const value = queryString(request, name, 32);
  if (value === undefined || value === '') return undefined;
  if (!/^\d{1,16}$/.test(value)) throw invalid(`${name}: must be a whole number`);
  return Number(value);
}

export function queryBoolean(request: ApiRequest, name: string): boolean | undefined {
  const value = queryString(request, name, 16);
  if (value === undefined || value === '') return undefined;
  if (value !== 'true' && value !== 'false') throw invalid(`${name}: must be true or false`);
  return value === 'true';
}

/** A list given as repeated parameters, comma-separated values, or both: `queues=a&queues=b,c`. */
export function queryList(request: ApiRequest, name: string, maxItems: number): string[] {
  const items = request.query
    .getAll(name)
    .flatMap((value) => value.split(','))
    .filter((item) => item !== '');
  if (items.length > maxItems) throw invalid(`${name}: ${items.length} items, at most ${maxItems}`);
  if (items.some(holdsNul)) throw invalid(`${name}: ${nulRefusal}`);
  return items;
}
