/**
 * The query parameters a route of either JSON API takes are the ones it declares (its
 * `query`, which its OpenAPI document lists). Any other is refused, naming the closest
 * declared one, as a body's unknown field is: a misspelt filter (`?stat=dead`,
 * `/v1/events?queue=…`) must not widen what the caller gets, nor a misspelt `waitMs` be
 * dropped.
 */
import { closestKey } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';

/**
 * Throws invalid_argument for the first parameter of `query` not in `known`. `operation`
 * names the route in the message: `GET /v1/events`.
 */
export function refuseUnknownQuery(
  operation: string,
  known: readonly string[],
  query: URLSearchParams,
): void {
  for (const name of query.keys()) {
    if (known.includes(name)) continue;
    const shown = name.length > 64 ? `${name.slice(0, 64)}…` : name;
    const near = closestKey(name, known);
    throw new SeppError(
      'invalid_argument',
      `${shown}: unknown query parameter of ${operation}; ${
        known.length === 0
          ? 'it takes none'
          : near === undefined
            ? `its parameters are ${known.join(', ')}`
            : `did you mean ${near}?`
      }`,
    );
  }
}
