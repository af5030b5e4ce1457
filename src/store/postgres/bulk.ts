/**
 * Bulk operations' statements (src/engine/control/bulk-operations.ts), as the
 * SQLite store's (src/store/sqlite/bulk.ts): the engine reads candidates from
 * an index range and hands a slice of their seqs here; each statement changes
 * those still in the slice's state that pass the filters no index answers.
 *
 * A slice's rows are locked in seq order (`ORDER BY seq FOR UPDATE`) before
 * they change, so two slices, or a slice and another server's acks, never
 * wait on each other in a cycle. A row another server holds is waited for,
 * not skipped: a slice is read once, and a skipped job would be missed.
 */

import type { Bulk, BulkEndedRow, BulkKeyRow, BulkSlice } from '../job-control.ts';
import { byState, inState, keyShapesMatch, keyShapeValues } from './browse.ts';
import { requeueSet } from './control.ts';
import { errorFirstLine } from './dead-letters.ts';
import { type Connection, changes, firstRow, rows, sendAhead, statement, value } from './sql.ts';

/** $1–$16: the slice's candidates, state and residual filters (sliceValues). */
const sliceMatch = `seq = ANY($1::bigint[]) AND state = $2
  AND ($3::text IS NULL OR strpos(lower(last_error), lower($3)) > 0)
  AND ($4::text IS NULL OR (metadata_json::jsonb ->> $4) = $5)
  AND ($6::text IS NULL OR group_key = $6)
  AND ($7::bigint IS NULL OR enqueued_at_ms >= $7)
  AND ($8::bigint IS NULL OR enqueued_at_ms < $8)
  AND ($9::text IS NULL OR dead_reason = $9)
  AND (NOT $10::boolean OR attempt > 0)
  AND ($12::text IS NULL OR (coalesce(last_error_class, '') = $11 AND ${errorFirstLine} = $12))
  AND ${keyShapesMatch(13)}`;
/** The slice's matching rows, locked in seq order; `extra` narrows them further. */
const locked = (extra: string) =>
  `seq IN (SELECT seq FROM jobs WHERE ${sliceMatch} ${extra} ORDER BY seq FOR UPDATE)`;

const lastSeq = statement('SELECT coalesce(max(seq), 0) AS v FROM jobs');
/** A range's jobs counted (one version per state: browse.ts `byState`). */
const countOfType = byState((from) => `SELECT count(*) AS v FROM ${from} AND type = $3`);
const countMatching = statement(
  `SELECT count(*) AS v FROM jobs WHERE ${sliceMatch} AND (state <> 'leased' OR cancelled_at_ms IS NULL)`,
);
const cancelWaiting = statement(
  `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = $17, cancelled_by = $18
    WHERE ${locked("AND state IN ('scheduled', 'ready')")}
   RETURNING id, idempotency_key, type, attempt, seq, dependency_flags`,
);
const requestCancel = statement(
  `UPDATE jobs SET cancelled_at_ms = $17, cancelled_by = $18
    WHERE ${locked("AND state = 'leased' AND cancelled_at_ms IS NULL")}
   RETURNING id, attempt, worker_id, idempotency_key`,
);
const runNow = statement(
  `UPDATE jobs SET state = 'ready', run_at_ms = $17, priority = coalesce($18, priority)
    WHERE ${locked("AND state = 'scheduled'")}`,
);
const setPriority = statement(
  `UPDATE jobs SET priority = $17
    WHERE ${locked("AND priority <> $17 AND state IN ('scheduled', 'ready')")}`,
);
const requeue = statement(
  `UPDATE jobs SET ${requeueSet('$17')}
    WHERE ${locked("AND state IN ('dead', 'completed', 'cancelled')")}`,
);
const remove = statement(
  `DELETE FROM jobs WHERE ${locked("AND state <> 'leased'")}
   RETURNING id, idempotency_key, type, attempt, seq, dependency_flags`,
);

function sliceValues(p: BulkSlice): unknown[] {
  return [
    p.seqs,
    p.state,
    p.errorText,
    p.metadata?.key ?? null,
    p.metadata?.value ?? null,
    p.groupKey,
    p.enqueuedFromMs,
    p.enqueuedBeforeMs,
    p.deadReason,
    p.retriesOnly,
    p.errorGroup?.errorClass ?? null,
    p.errorGroup?.firstLine ?? null,
    ...keyShapeValues(p.keyShapes),
  ];
}

/** Expired request keys one start deletes, oldest first (more than one: the table shrinks when starts slow down). */
const pruneKeys = statement(
  `DELETE FROM bulk_operation_keys WHERE (actor, request_key) IN (
     SELECT actor, request_key FROM bulk_operation_keys
      WHERE started_at_ms < $1 ORDER BY started_at_ms LIMIT 16 FOR UPDATE SKIP LOCKED)`,
);
/**
 * A free or expired key becomes this operation's; one held within the window stays as it is.
 * Another server's start under the same key, not yet committed, is waited for (the primary key):
 * the SELECT after it then reads the row that won.
 */
const claimKey = statement(
  `INSERT INTO bulk_operation_keys (actor, request_key, operation_id, request_json, started_at_ms)
     VALUES ($1, $2, $3, $4, $5)
   ON CONFLICT (actor, request_key) DO UPDATE
     SET operation_id = excluded.operation_id, request_json = excluded.request_json,
         started_at_ms = excluded.started_at_ms
     WHERE bulk_operation_keys.started_at_ms < $6`,
);
const keyHolder = statement(
  `SELECT operation_id, request_json, started_at_ms FROM bulk_operation_keys
    WHERE actor = $1 AND request_key = $2`,
);

export function bulkOps(c: Connection): Bulk {
  return {
    *lastSeq() {
      return (yield* value<number>(c, lastSeq, [])) ?? 0;
    },
    *countOfType(p) {
      return (yield* value<number>(c, inState(countOfType, p.state), [p.queue, p.state, p.type])) ?? 0;
    },
    *countMatching(p) {
      if (p.seqs.length === 0) return 0;
      return (yield* value<number>(c, countMatching, sliceValues(p))) ?? 0;
    },
    *cancelWaiting(p) {
      if (p.seqs.length === 0) return [];
      return yield* rows<BulkEndedRow>(c, cancelWaiting, [...sliceValues(p), p.nowMs, p.by]);
    },
    *requestCancel(p) {
      if (p.seqs.length === 0) return [];
      return yield* rows<{
        id: string;
        attempt: number;
        worker_id: string | null;
        idempotency_key: string | null;
      }>(c, requestCancel, [...sliceValues(p), p.nowMs, p.by]);
    },
    *runNow(p) {
      if (p.seqs.length === 0) return 0;
      return yield* changes(c, runNow, [...sliceValues(p), p.nowMs, p.priority]);
    },
    *setPriority(p) {
      if (p.seqs.length === 0) return 0;
      return yield* changes(c, setPriority, [...sliceValues(p), p.priority]);
    },
    *requeue(p) {
      if (p.seqs.length === 0) return 0;
      return yield* changes(c, requeue, [...sliceValues(p), p.nowMs]);
    },
    *delete(p) {
      if (p.seqs.length === 0) return [];
      return yield* rows<BulkEndedRow>(c, remove, sliceValues(p));
    },
    *claimKey(p) {
      yield* sendAhead(c, pruneKeys, [p.validFromMs]);
      yield* sendAhead(c, claimKey, [
        p.actor,
        p.requestKey,
        p.operationId,
        p.requestJson,
        p.nowMs,
        p.validFromMs,
      ]);
      const holder = yield* firstRow<BulkKeyRow>(c, keyHolder, [p.actor, p.requestKey]);
      if (holder === undefined) throw new Error('bulk_operation_keys: the claimed key has no row');
      return holder;
    },
  };
}
