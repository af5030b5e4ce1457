/**
 * Request keys of bulk operations: a client names a request that starts one
 * (CancelJobsRequest.request_key), so that a repeat of it — the SDK's retry
 * after a lost answer, or the user's — answers with the operation the first
 * started instead of starting a second one.
 *
 * A key belongs to a principal (the audit actor: `key:NAME`, an admin UI
 * user, `anonymous`) and holds for `requestKeyWindowMs` from its operation's
 * start. The store keeps it (schema/0024_bulk_operation_keys.sql), written
 * before the caller is answered, so a key holds across a restart and between
 * servers that share a PostgreSQL store; the operation itself lives in the
 * memory of the server that runs it (bulk-operations.ts). A repeat finds:
 * - the same request, operation kept here → that operation, as it is now;
 * - a different request (action, audit action, filter, changes) → invalid_argument;
 * - the same request, operation no longer kept here → failed_precondition.
 */

import { SeppError } from '../errors.ts';

/** How long a key names its request, from its operation's start. */
export const requestKeyWindowMs = 24 * 60 * 60 * 1000;
/** The longest key. */
export const requestKeyMaxChars = 128;

const keyCharacters = /^[A-Za-z0-9._:-]+$/;

/**
 * Whether `key` may name a request: 1 to requestKeyMaxChars letters, digits, `-`, `_`, `.`
 * and `:` (docs/protocol.md, `request_key`). The one statement of the rule: the CLI checks
 * --request-key with it before any call (through config/index.ts).
 */
export function isRequestKey(key: string): boolean {
  return key.length <= requestKeyMaxChars && keyCharacters.test(key);
}

/** A request key as a door received it: checked (invalid_argument); undefined for none (`''`). */
export function checkRequestKey(key: string | undefined, field: string): string | undefined {
  if (key === undefined || key === '') return undefined;
  if (!isRequestKey(key)) {
    throw new SeppError(
      'invalid_argument',
      `${field}: 1 to ${requestKeyMaxChars} characters of letters, digits, '-', '_', '.' and ':' (got ${key.length} characters${keyCharacters.test(key) ? '' : ' with others'}); e.g. 16 random bytes in base64url`,
    );
  }
  return key;
}

/**
 * A door's request key as the engine's request takes it: checked (invalid_argument naming
 * `field`, as the door calls it), and `{}` for none, to spread into the request.
 */
export function requestKeyField(key: string | undefined, field: string): { requestKey?: string } {
  const requestKey = checkRequestKey(key, field);
  return requestKey === undefined ? {} : { requestKey };
}

/** A keyed start: who, the key, and the request it names. */
export interface KeyedRequest {
  actor: string;
  key: string;
  /** The checked request as JSON: a repeat must name the same. */
  requestJson: string;
  /** actor and key in one string, for the in-memory index. */
  slot: string;
}

export function keyedRequest(
  key: string,
  actor: string,
  request: { action: string; auditAction: string | null; details: Readonly<Record<string, unknown>> },
): KeyedRequest {
  return {
    actor,
    key,
    requestJson: JSON.stringify({
      action: request.action,
      auditAction: request.auditAction,
      details: request.details,
    }),
    slot: `${actor}\n${key}`,
  };
}

/** The same key with another request: refused, never taken as a repeat. */
export function otherRequest(keyed: KeyedRequest, startedAtMs: number): SeppError {
  return new SeppError(
    'invalid_argument',
    `request_key ${JSON.stringify(keyed.key)} named another request (action, filter or changes) that started at ${new Date(startedAtMs).toISOString()}; a key names one request for ${requestKeyWindowMs / 3_600_000} hours: use a new key for this one`,
  );
}

/** The key's operation is not in this server's memory. */
export function operationNotKept(keyed: KeyedRequest, operationId: string, keptFinished: number): SeppError {
  return new SeppError(
    'failed_precondition',
    `request_key ${JSON.stringify(keyed.key)} started bulk operation ${operationId}, which this server does not keep: it runs on another server, ended before this server's last restart, or is older than the last ${keptFinished} kept. Its audit entry (details.operationId) says how far it got (none: it changed nothing); nothing was started now. To start another, use a new key`,
  );
}
