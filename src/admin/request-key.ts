/**
 * The `requestKey` of an admin route that starts a bulk operation (the Jobs
 * list's bulk actions, dead letters' "all", a queue's purge): read and checked
 * as the gRPC `request_key` is (engine/control/bulk-keys.ts), so a repeat of the
 * request — the UI's second press after a lost answer — starts nothing.
 */
import { requestKeyField, requestKeyMaxChars } from '../engine/control/index.ts';
import { type JsonObject, optionalString } from './request-input.ts';

/** The body property, for the OpenAPI document. */
export const requestKeyProperty = {
  type: 'string',
  description: `1 to ${requestKeyMaxChars} letters, digits, \`-\`, \`_\`, \`.\`, \`:\`: names the request, so a repeat starts nothing`,
} as const;

/** What a route's description says of the key. */
export const requestKeyDescription =
  'With `requestKey`, a repeat of the request (same user, same key, within 24 hours) answers with the operation the first one started, as it is now, and starts nothing; the same key with another request is a 400.';

/** The body's key, checked (400 naming `requestKey`); `{}` for none or `''`, to spread into the engine's request. */
export function requestKeyOf(body: JsonObject): { requestKey?: string } {
  // One character over the limit reaches the check, whose message says what a key may hold.
  return requestKeyField(optionalString(body, 'requestKey', requestKeyMaxChars + 1), 'requestKey');
}
