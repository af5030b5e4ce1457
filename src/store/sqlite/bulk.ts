/**
 * Bulk operations' statements (src/engine/control/bulk-operations.ts): the
 * engine reads candidates from an index range (browse.ts' bounded reads) and
 * hands a slice of their seqs here; each statement changes those of them
 * still in the slice's state that pass the filters no index answers (error
 * text, metadata, group, age, dead reason, retries). A slice is one
 * primary-key probe per candidate, so its cost is bounded by its size.
 */
import type { Bulk, BulkEndedRow, BulkKeyRow, BulkSlice } from '../job-control.ts';
import { type KeyShapeParams, keyShapeParams, keyShapesMatch } from './browse.ts';
import { requeueSet } from './control.ts';
import { errorFirstLine } from './dead-letters.ts';
import type { Preparer } from './prepare-on-use.ts';

interface SliceParams extends KeyShapeParams {
  seqsJson: string;
  state: string;
  errorText: string | null;
  metaPath: string | null;
  metaValue: string | null;
  groupKey: string | null;
  enqueuedFromMs: number | null;
  enqueuedBeforeMs: number | null;
  deadReason: string | null;
  retriesOnly: 0 | 1;
  errorClass: string | null;
  errorFirstLine: string | null;
}

/** The slice's jobs: its candidates still in @state that pass every residual filter. */
const sliceMatch = `seq IN (SELECT value FROM json_each(@seqsJson)) AND state = @state
  AND (@errorText IS NULL OR instr(lower(last_error), lower(@errorText)) > 0)
  AND (@metaPath IS NULL OR json_extract(metadata_json, @metaPath) = @metaValue)
  AND (@groupKey IS NULL OR group_key = @groupKey)
  AND (@enqueuedFromMs IS NULL OR enqueued_at_ms >= @enqueuedFromMs)
  AND (@enqueuedBeforeMs IS NULL OR enqueued_at_ms < @enqueuedBeforeMs)
  AND (@deadReason IS NULL OR dead_reason = @deadReason)
  AND (@retriesOnly = 0 OR attempt > 0)
  AND (@errorFirstLine IS NULL OR (coalesce(last_error_class, '') = @errorClass AND ${errorFirstLine} = @errorFirstLine))
  AND ${keyShapesMatch}`;

export function prepareBulkStatements(db: Preparer) {
  return {
    lastSeq: db.prepare<[], number | null>('SELECT max(seq) FROM jobs').pluck(),
    /** One range of jobs_by_state_type. */
    countOfType: db
      .prepare<[{ queue: string; state: string; type: string }], number>(
        'SELECT count(*) FROM jobs WHERE queue = @queue AND state = @state AND type = @type',
      )
      .pluck(),
    /** A leased job counts only without a cancel request (the one change a bulk action makes to it). */
    countMatching: db
      .prepare<[SliceParams], number>(
        `SELECT count(*) FROM jobs WHERE ${sliceMatch} AND (state <> 'leased' OR cancelled_at_ms IS NULL)`,
      )
      .pluck(),
    // Jobs in a workflow (dependency_flags, schema/0012 and 0014) are cancelled and deleted too; the
    // engine passes their end on to what waits on them and to their batch, in the same unit.
    cancelWaiting: db.prepare<[SliceParams & { nowMs: number; by: string | null }], BulkEndedRow>(
      `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE ${sliceMatch} AND state IN ('scheduled', 'ready')
        RETURNING id, idempotency_key, type, attempt, seq, dependency_flags`,
    ),
    requestCancel: db.prepare<
      [SliceParams & { nowMs: number; by: string | null }],
      { id: string; attempt: number; worker_id: string | null; idempotency_key: string | null }
    >(
      `UPDATE jobs SET cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE ${sliceMatch} AND state = 'leased' AND cancelled_at_ms IS NULL
        RETURNING id, attempt, worker_id, idempotency_key`,
    ),
    runNow: db.prepare<[SliceParams & { nowMs: number; priority: number | null }]>(
      `UPDATE jobs SET state = 'ready', run_at_ms = @nowMs, priority = coalesce(@priority, priority)
        WHERE ${sliceMatch} AND state = 'scheduled'`,
    ),
    setPriority: db.prepare<[SliceParams & { priority: number }]>(
      `UPDATE jobs SET priority = @priority WHERE ${sliceMatch} AND priority <> @priority
        AND state IN ('scheduled', 'ready')`,
    ),
    requeue: db.prepare<[SliceParams & { nowMs: number }]>(
      `UPDATE jobs SET ${requeueSet} WHERE ${sliceMatch} AND state IN ('dead', 'completed', 'cancelled')`,
    ),
    delete: db.prepare<[SliceParams], BulkEndedRow>(
      `DELETE FROM jobs WHERE ${sliceMatch} AND state <> 'leased'
        RETURNING id, idempotency_key, type, attempt, seq, dependency_flags`,
    ),
    /** Expired request keys, oldest first, a few per start (bounds the table by the keys of one window). */
    pruneKeys: db.prepare<[{ validFromMs: number }]>(
      `DELETE FROM bulk_operation_keys WHERE (actor, request_key) IN (
         SELECT actor, request_key FROM bulk_operation_keys
          WHERE started_at_ms < @validFromMs ORDER BY started_at_ms LIMIT ${keysPrunedPerStart})`,
    ),
    /** A free or expired key becomes this operation's; one held within the window stays as it is. */
    claimKey: db.prepare<[KeyParams]>(
      `INSERT INTO bulk_operation_keys (actor, request_key, operation_id, request_json, started_at_ms)
         VALUES (@actor, @requestKey, @operationId, @requestJson, @nowMs)
       ON CONFLICT (actor, request_key) DO UPDATE
         SET operation_id = excluded.operation_id, request_json = excluded.request_json,
             started_at_ms = excluded.started_at_ms
         WHERE bulk_operation_keys.started_at_ms < @validFromMs`,
    ),
    keyHolder: db.prepare<[{ actor: string; requestKey: string }], BulkKeyRow>(
      `SELECT operation_id, request_json, started_at_ms FROM bulk_operation_keys
        WHERE actor = @actor AND request_key = @requestKey`,
    ),
  };
}

/** Expired request keys one start deletes (more than one: the table shrinks when starts slow down). */
const keysPrunedPerStart = 16;

/** claimKey's parameters, as its statement binds them. */
type KeyParams = Parameters<Bulk['claimKey']>[0];

type BulkStatements = ReturnType<typeof prepareBulkStatements>;

function sliceParams(p: BulkSlice): SliceParams {
  return {
    seqsJson: JSON.stringify(p.seqs),
    state: p.state,
    errorText: p.errorText,
    metaPath: p.metadata === null ? null : `$."${p.metadata.key}"`,
    metaValue: p.metadata === null ? null : p.metadata.value,
    groupKey: p.groupKey,
    enqueuedFromMs: p.enqueuedFromMs,
    enqueuedBeforeMs: p.enqueuedBeforeMs,
    deadReason: p.deadReason,
    retriesOnly: p.retriesOnly ? 1 : 0,
    errorClass: p.errorGroup?.errorClass ?? null,
    errorFirstLine: p.errorGroup?.firstLine ?? null,
    ...keyShapeParams(p.keyShapes),
  };
}

export function bulkOps(sql: BulkStatements): Bulk {
  return {
    *lastSeq() {
      return sql.lastSeq.get() ?? 0;
    },
    *countOfType(p) {
      return sql.countOfType.get(p) ?? 0;
    },
    *countMatching(p) {
      if (p.seqs.length === 0) return 0;
      return sql.countMatching.get(sliceParams(p)) ?? 0;
    },
    *cancelWaiting(p) {
      if (p.seqs.length === 0) return [];
      return sql.cancelWaiting.all({ ...sliceParams(p), nowMs: p.nowMs, by: p.by });
    },
    *requestCancel(p) {
      if (p.seqs.length === 0) return [];
      return sql.requestCancel.all({ ...sliceParams(p), nowMs: p.nowMs, by: p.by });
    },
    *runNow(p) {
      if (p.seqs.length === 0) return 0;
      return sql.runNow.run({ ...sliceParams(p), nowMs: p.nowMs, priority: p.priority }).changes;
    },
    *setPriority(p) {
      if (p.seqs.length === 0) return 0;
      return sql.setPriority.run({ ...sliceParams(p), priority: p.priority }).changes;
    },
    *requeue(p) {
      if (p.seqs.length === 0) return 0;
      return sql.requeue.run({ ...sliceParams(p), nowMs: p.nowMs }).changes;
    },
    *delete(p) {
      if (p.seqs.length === 0) return [];
      return sql.delete.all(sliceParams(p));
    },
    *claimKey(p) {
      sql.pruneKeys.run({ validFromMs: p.validFromMs });
      sql.claimKey.run(p);
      const holder = sql.keyHolder.get({ actor: p.actor, requestKey: p.requestKey });
      if (holder === undefined) throw new Error('bulk_operation_keys: the claimed key has no row');
      return holder;
    },
  };
}
