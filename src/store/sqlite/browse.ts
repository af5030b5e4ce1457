/**
 * The reads behind the operators' job lists (src/engine/operators/job-browse.ts,
 * src/engine/jobs/job-queries.ts) and the admin search box. Each is a bounded
 * index range read: `@scan` caps how many index entries one range read may
 * examine, so a filter the index cannot answer (error text, metadata) costs at
 * most that many row probes per page, never a scan of the table.
 * tests/admin/query-plans.test.ts checks the plans.
 */

import type { Browse, KeyShapes } from '../browse.ts';
import type { DueRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

interface SeqRange {
  queue: string;
  state: string;
  /** Absent: any type (the statements without `AND type = @type`). */
  type?: string;
  /** Exclusive bound: after it when ascending, before it when descending. */
  fromSeq: number;
  limit?: number;
  scan?: number;
}

interface AcrossTypes {
  /** The queues, a JSON array. */
  queuesJson: string;
  state: string;
  type: string | null;
  typeLo: string;
  typeHi: string;
  fromSeq: number;
  scan: number;
}

interface DueScan {
  queue: string;
  /** Exclusive bound on (run_at_ms, seq). */
  fromDueMs: number;
  fromSeq: number;
  scan: number;
}

interface ResidualFilter {
  seqsJson: string;
  /** Case-insensitive text the last error must contain; null: any. */
  errorText: string | null;
  /** A JSON path ($."key") into the metadata and the value it must have; null: any. */
  metaPath: string | null;
  metaValue: string | null;
  /** Type range [typeLo, typeHi) for a type prefix; null: any. */
  typeLo: string | null;
  typeHi: string | null;
  /** The group the job must be in; null: any (with a group or without). */
  groupKey: string | null;
  /** Only jobs enqueued before this time; null: any. */
  enqueuedBeforeMs: number | null;
  /** Only dead letters of this reason; null: any. */
  deadReason: string | null;
}

/** Named parameters of `keyShapesMatch`: two key shapes, or nulls for any key. */
export interface KeyShapeParams {
  keyA: string | null;
  keyALen: number | null;
  keyB: string | null;
  keyBLen: number | null;
}

/**
 * Jobs whose idempotency key has one of two shapes (prefix and length; null: any job).
 * Checked on the row a primary-key probe read, like the other residual filters: the
 * prefix is compared as text (substr), so a name's `%` or `_` is no wildcard.
 */
export const keyShapesMatch = `(@keyA IS NULL
    OR (substr(idempotency_key, 1, length(@keyA)) = @keyA AND length(idempotency_key) = @keyALen)
    OR (substr(idempotency_key, 1, length(@keyB)) = @keyB AND length(idempotency_key) = @keyBLen))`;

export function keyShapeParams(shapes: KeyShapes | null): KeyShapeParams {
  return {
    keyA: shapes?.[0].prefix ?? null,
    keyALen: shapes?.[0].length ?? null,
    keyB: shapes?.[1].prefix ?? null,
    keyBLen: shapes?.[1].length ?? null,
  };
}

export function prepareBrowseStatements(db: Preparer) {
  const seqs = (op: '>' | '<', dir: 'ASC' | 'DESC', byType: boolean, indexed: boolean, bound: string) =>
    db
      .prepare<[SeqRange], number>(
        `SELECT seq FROM jobs ${indexed ? 'INDEXED BY jobs_by_state_type' : ''}
          WHERE queue = @queue AND state = @state ${byType ? 'AND type = @type' : ''} AND seq ${op} @fromSeq
          ORDER BY seq ${dir} LIMIT ${bound}`,
      )
      .pluck();
  const acrossTypes = (op: '>' | '<', dir: 'ASC' | 'DESC') =>
    db
      .prepare<[AcrossTypes], number>(
        `SELECT seq FROM jobs WHERE queue IN (SELECT value FROM json_each(@queuesJson)) AND state = @state
          AND (@type IS NULL OR type = @type)
          AND type >= @typeLo AND type < @typeHi AND seq ${op} @fromSeq ORDER BY seq ${dir} LIMIT @scan`,
      )
      .pluck();
  const dueScan = (index: string, extra: string, op: '>' | '<', dir: 'ASC' | 'DESC') =>
    db.prepare<[DueScan], DueRow>(
      `SELECT seq, run_at_ms FROM jobs INDEXED BY ${index}
        WHERE queue = @queue AND state = 'scheduled' ${extra}
          AND (run_at_ms, seq) ${op} (@fromDueMs, @fromSeq)
        ORDER BY run_at_ms ${dir}, seq ${dir} LIMIT @scan`,
    );
  return {
    // ---- a queue's jobs in one state, in enqueue order (index jobs_by_state_type: queue, state, type, then seq)
    /** The next job type present in a queue and state after @afterType: one index seek (a loose index scan step). */
    nextTypeInState: db
      .prepare<[{ queue: string; state: string; afterType: string }], string>(
        `SELECT type FROM jobs WHERE queue = @queue AND state = @state AND type > @afterType
          ORDER BY type LIMIT 1`,
      )
      .pluck(),
    /** Seqs of one type in a queue and state, ascending after @fromSeq. */
    seqsOfTypeAsc: seqs('>', 'ASC', true, false, '@limit'),
    /** Seqs of one type in a queue and state, descending before @fromSeq. */
    seqsOfTypeDesc: seqs('<', 'DESC', true, false, '@limit'),
    /**
     * Fallback for a queue with very many job types: seqs of any type, which sorts
     * the queue's rows in that state. Used only past the merge's type limit.
     */
    seqsAnyTypeAsc: seqs('>', 'ASC', false, false, '@limit'),
    seqsAnyTypeDesc: seqs('<', 'DESC', false, false, '@limit'),

    /**
     * Seqs of some queues' jobs in a state in enqueue order, of @type (or any) among those in [@typeLo,
     * @typeHi): the one range of a state of `unindexedByType`, none on this store (its
     * jobs_by_state_type holds every state), so no list reads it; it sorts the state's rows.
     */
    acrossTypesAsc: acrossTypes('>', 'ASC'),
    acrossTypesDesc: acrossTypes('<', 'DESC'),

    // ---- lists across queues and states
    /** The first job type at or after @fromType (and before @belowType) in a queue and state: one index seek. */
    typeAtOrAfter: db
      .prepare<[{ queue: string; state: string; fromType: string; belowType: string }], string>(
        `SELECT type FROM jobs INDEXED BY jobs_by_state_type
          WHERE queue = @queue AND state = @state AND type >= @fromType AND type < @belowType
          ORDER BY type LIMIT 1`,
      )
      .pluck(),
    /** Seqs of one queue, state and type, in enqueue order after (before) @fromSeq, at most @scan. */
    seqScanAsc: seqs('>', 'ASC', true, true, '@scan'),
    seqScanDesc: seqs('<', 'DESC', true, true, '@scan'),
    /** Scheduled jobs of a queue by due time. */
    dueScanAsc: dueScan('jobs_scheduled_due', '', '>', 'ASC'),
    dueScanDesc: dueScan('jobs_scheduled_due', '', '<', 'DESC'),
    /** Retries (scheduled after a delivery) of a queue by due time. */
    retryScanAsc: dueScan('jobs_retrying_due', 'AND attempt > 0', '>', 'ASC'),
    retryScanDesc: dueScan('jobs_retrying_due', 'AND attempt > 0', '<', 'DESC'),
    /** Which of the jobs in @seqsJson pass the filters the indexes cannot answer: one primary-key probe each. */
    residual: db
      .prepare<[ResidualFilter & KeyShapeParams], number>(
        `SELECT seq FROM jobs WHERE seq IN (SELECT value FROM json_each(@seqsJson))
          AND (@errorText IS NULL OR instr(lower(last_error), lower(@errorText)) > 0)
          AND (@metaPath IS NULL OR json_extract(metadata_json, @metaPath) = @metaValue)
          AND (@typeLo IS NULL OR (type >= @typeLo AND type < @typeHi))
          AND (@groupKey IS NULL OR group_key = @groupKey)
          AND (@enqueuedBeforeMs IS NULL OR enqueued_at_ms < @enqueuedBeforeMs)
          AND (@deadReason IS NULL OR dead_reason = @deadReason)
          AND ${keyShapesMatch}`,
      )
      .pluck(),
    /** Ids starting with @lo (up to @hi, exclusive), newest first: a range of the id index. */
    idsByPrefix: db
      .prepare<[{ lo: string; hi: string; limit: number }], string>(
        'SELECT id FROM jobs WHERE id >= @lo AND id < @hi ORDER BY id DESC LIMIT @limit',
      )
      .pluck(),
    /**
     * Ids containing @fragment among the newest @scan ids (ids are time-ordered, so the
     * id index read backwards is newest first): bounded, and the caller says so.
     */
    idsContaining: db
      .prepare<[{ fragment: string; scan: number; limit: number }], string>(
        `SELECT id FROM (SELECT id FROM jobs ORDER BY id DESC LIMIT @scan)
          WHERE instr(id, @fragment) > 0 LIMIT @limit`,
      )
      .pluck(),
  };
}

type BrowseStatements = ReturnType<typeof prepareBrowseStatements>;

/** Every state is in jobs_by_state_type here: a list reads each type's range. */
const unindexedByType: ReadonlySet<string> = new Set();

export function browseOps(sql: BrowseStatements): Browse {
  return {
    unindexedByType,
    *typeAfter(p) {
      return sql.nextTypeInState.get(p);
    },
    *typeFrom(p) {
      return sql.typeAtOrAfter.get(p);
    },
    *seqs(p) {
      return (p.descending ? sql.seqsOfTypeDesc : sql.seqsOfTypeAsc).all(p);
    },
    *seqsAnyType(p) {
      return (p.descending ? sql.seqsAnyTypeDesc : sql.seqsAnyTypeAsc).all(p);
    },
    *scanSeqs(p) {
      return (p.descending ? sql.seqScanDesc : sql.seqScanAsc).all(p);
    },
    *scanSeqsAcrossTypes(p) {
      return (p.descending ? sql.acrossTypesDesc : sql.acrossTypesAsc).all({
        queuesJson: JSON.stringify(p.queues),
        state: p.state,
        type: p.type,
        typeLo: p.typePrefix,
        typeHi: `${p.typePrefix}\u{10ffff}`,
        fromSeq: p.fromSeq,
        scan: p.scan,
      });
    },
    *scanDue(p) {
      const statement = p.retries
        ? p.descending
          ? sql.retryScanDesc
          : sql.retryScanAsc
        : p.descending
          ? sql.dueScanDesc
          : sql.dueScanAsc;
      return statement.all(p);
    },
    *filter({ seqs, errorText, metadata, typePrefix, groupKey, enqueuedBeforeMs, deadReason, keyShapes }) {
      if (seqs.length === 0) return [];
      return sql.residual.all({
        ...keyShapeParams(keyShapes),
        seqsJson: JSON.stringify(seqs),
        errorText,
        metaPath: metadata === null ? null : `$."${metadata.key}"`,
        metaValue: metadata === null ? null : metadata.value,
        typeLo: typePrefix,
        typeHi: typePrefix === null ? null : `${typePrefix}\u{10ffff}`,
        groupKey,
        enqueuedBeforeMs,
        deadReason,
      });
    },
    *idsBetween(p) {
      return sql.idsByPrefix.all(p);
    },
    *idsContaining(p) {
      return sql.idsContaining.all(p);
    },
  };
}
