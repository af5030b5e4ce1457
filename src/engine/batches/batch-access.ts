/**
 * Who may act on a batch (issue 33): the key that created it (its `owner`) or an admin
 * changes it and lists it; a running member adds to it (with its lease's token) through any
 * key that may enqueue.
 * The gRPC and HTTP handlers pass their caller in; the engine's own calls pass none.
 */
import type { BatchRow } from '../../store/dependencies.ts';
import { SeppError } from '../errors.ts';

/** Who asks to change or list batches: an API key's name, and whether it has the admin role (or the server has no keys). */
export interface BatchCaller {
  readonly name: string;
  readonly admin: boolean;
}

/** A caller of the gRPC or HTTP API (its key's name and role) as batches see it. */
export function batchCaller(caller: { readonly name: string; readonly role: string }): BatchCaller {
  return { name: caller.name, admin: caller.role === 'admin' };
}

/**
 * Only the key that created a batch, or an admin, adds to it (but for a running member,
 * `from_member` with its lease's token) or seals it: another producer that learned its id could otherwise fill
 * it or end it early. No caller (the engine's own calls) is not checked.
 */
export function checkOwner(row: BatchRow, caller: BatchCaller | undefined, act: string): void {
  if (caller === undefined || caller.admin || caller.name === row.owner) return;
  throw new SeppError(
    'permission_denied',
    `batch ${row.id} was created by ${row.owner === '' ? 'a caller without an API key' : `API key ${row.owner}`}: ` +
      `only that key or an admin key may ${act} it (a running member adds with from_member and from_member_token)`,
  );
}

/**
 * Whose batches a caller may list: an admin (or a server without API keys) any owner's,
 * or all; any other key only its own, which is what it lists when it names no owner.
 */
export function ownerToList(caller: BatchCaller, asked: string | undefined): string | undefined {
  if (caller.admin || asked === caller.name) return asked;
  if (asked === undefined) return caller.name;
  throw new SeppError(
    'permission_denied',
    `owner: API key ${caller.name} lists only the batches it created; listing another key's takes the admin role`,
  );
}
