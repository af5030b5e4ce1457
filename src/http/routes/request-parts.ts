/** Reading the parts of a request a handler needs: its body and query parameters, checked with named messages. */
import { holdsNul, nulRefusal } from '../../engine/checks.ts';
import { invalid } from '../errors.ts';
import type { JsonInput } from '../json-input.ts';
import type { ApiRequest } from '../route-spec.ts';

/** The JSON body of an operation that declares one (the server read and parsed it). */
export function body(request: ApiRequest): JsonInput {
  if (request.body === null) throw new Error('bug: an operation with a body schema got no body');
  return request.body;
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
