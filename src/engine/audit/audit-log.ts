/**
 * The audit log: who changed what, when. An entry is written inside the same
 * write operation (so the same transaction) as the change it records: either
 * both are durable or neither is. Entries are never changed afterwards, except
 * that a change made in several transactions (a purge in chunks) updates its
 * own entry's running totals.
 */
import type { Op } from '../../store/op.ts';
import type { AuditRow } from '../../store/rows.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditEntry, AuditInput, AuditQuery } from '../admin-types.ts';
import type { Clock } from '../clock.ts';
import { SeppError } from '../errors.ts';
import { pageSizeOf } from '../page-size.ts';
import type { EngineLimits } from '../settings.ts';
import type { Page } from '../types.ts';

/** Details longer than this are shortened: an audit entry records an action, not its data. */
const maxDetailsBytes = 8 * 1024;
/** Longest actor, action or target string. */
const maxFieldLength = 256;
const arrayItemsKept = 50;
const pageSizeDefault = 50;

export class AuditLog {
  constructor(
    private readonly clock: Clock,
    /** The limits in force: a reload may change max_page_size. */
    private readonly limits: Pick<EngineLimits, 'maxPageSize'>,
  ) {}

  /** Writes an entry in the unit `tx`. Returns its id. */
  *write(tx: StoreTx, input: AuditInput, outcome: Readonly<Record<string, unknown>> = {}): Op<number> {
    checkInput(input);
    return yield* tx.audit.insert({
      atMs: this.clock.nowMs(),
      actor: input.actor,
      action: input.action,
      target: input.target,
      detailsJson: boundedJson({ ...input.details, ...outcome }),
    });
  }

  /** Replaces an entry's outcome (running totals of a change made in chunks) in the unit `tx`. */
  update(tx: StoreTx, id: number, input: AuditInput, outcome: Readonly<Record<string, unknown>>): Op<void> {
    return tx.audit.updateDetails({ id, detailsJson: boundedJson({ ...input.details, ...outcome }) });
  }

  *list(view: StoreView, query: AuditQuery): Op<Page<AuditEntry>> {
    const pageSize = pageSizeOf(query.pageSize, pageSizeDefault, this.limits.maxPageSize);
    const rows = yield* view.audit.page({
      actor: nonEmpty(query.actor),
      action: nonEmpty(query.action),
      target: nonEmpty(query.target),
      beforeId: decodeAuditCursor(query.cursor),
      limit: pageSize + 1,
    });
    const items = rows.slice(0, pageSize).map(entryFromRow);
    const last = items.at(-1);
    return {
      items,
      nextCursor: rows.length > pageSize && last ? Buffer.from(`a${last.id}`).toString('base64url') : null,
    };
  }
}

function checkInput(input: AuditInput): void {
  for (const field of ['actor', 'action', 'target'] as const) {
    const value = input[field];
    if (typeof value !== 'string' || value.length === 0 || value.length > maxFieldLength) {
      // The admin layer builds these: a bad one is a bug, not bad input.
      throw new SeppError('internal', `audit ${field} must be 1–${maxFieldLength} characters`);
    }
  }
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}

function decodeAuditCursor(cursor: string | undefined): number {
  if (cursor === undefined || cursor === '') return Number.MAX_SAFE_INTEGER;
  const match = /^a(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) {
    throw new SeppError('invalid_argument', 'cursor is not one this list issued; start again without it');
  }
  return Number(match[1]);
}

function entryFromRow(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    atMs: row.at_ms,
    actor: row.actor,
    action: row.action,
    target: row.target,
    details: JSON.parse(row.details_json) as Record<string, unknown>,
  };
}

/** JSON of `details`, shortened to maxDetailsBytes: long arrays keep their first items and a count. */
export function boundedJson(details: Readonly<Record<string, unknown>>): string {
  const json = JSON.stringify(details);
  if (Buffer.byteLength(json) <= maxDetailsBytes) return json;
  const shortened: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (Array.isArray(value) && value.length > arrayItemsKept) {
      shortened[key] = value.slice(0, arrayItemsKept);
      shortened[`${key}Count`] = value.length;
    } else if (typeof value === 'string' && value.length > 512) {
      shortened[key] = `${value.slice(0, 512)}…`;
    } else {
      shortened[key] = value;
    }
  }
  const again = JSON.stringify({ ...shortened, truncated: true });
  if (Buffer.byteLength(again) <= maxDetailsBytes) return again;
  return JSON.stringify({ truncated: true, keys: Object.keys(details).slice(0, 50) });
}
