/**
 * Dead letters: pages of a queue's dead jobs by failure time (indexes jobs_dead
 * and jobs_dead_reason: queue[, reason], failed_at_ms, then seq), and requeue
 * or delete by id or in chunks of @limit, oldest failure first.
 */

import { requeuedBatchId } from '../dependencies.ts';
import type { DeadLetters, DeletedDeadRow, ErrorGroupsRow } from '../job-control.ts';
import type { JobRow, JobSummaryRow } from '../rows.ts';
import { summaryColumns } from './jobs.ts';
import type { Preparer } from './prepare-on-use.ts';

interface DeadRange {
  queue: string;
  /** Exclusive bound on (failed_at_ms, seq): after it ascending, before it descending. */
  fromFailedAtMs: number;
  fromSeq: number;
  limit: number;
}

/** The first line of a job's last error, at most 200 characters (ErrorGroupKey.firstLine). */
export const errorFirstLine =
  "substr(coalesce(last_error, ''), 1, min(instr(coalesce(last_error, '') || char(10), char(10)) - 1, 200))";

type GroupRow = ErrorGroupsRow['groups'][number] & { group_count: number; scanned: number };

/** A requeued dead letter: ready now with a fresh attempt budget; a member its batch's id if its row has none. */
const fresh = `state = 'ready', attempt_base = attempt, run_at_ms = @nowMs, dead_reason = NULL, failed_at_ms = NULL,
                       leased_at_ms = NULL, worker_id = NULL, expires_at_ms = NULL, ${requeuedBatchId}`;

export function prepareDeadLetterStatements(db: Preparer) {
  const summaries = (index: string, byReason: boolean, op: '>' | '<', dir: 'ASC' | 'DESC') =>
    db.prepare<[DeadRange & { reason: string | null }], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs INDEXED BY ${index}
        WHERE queue = @queue AND state = 'dead' ${byReason ? 'AND dead_reason = @reason' : ''}
          AND (failed_at_ms, seq) ${op} (@fromFailedAtMs, @fromSeq)
        ORDER BY failed_at_ms ${dir}, seq ${dir} LIMIT @limit`,
    );
  return {
    /** One page of a queue's dead letters after the cursor (failed_at_ms, seq). */
    deadPage: db.prepare<[DeadRange], JobRow>(
      `SELECT * FROM jobs WHERE queue = @queue AND state = 'dead' AND (failed_at_ms, seq) > (@fromFailedAtMs, @fromSeq)
        ORDER BY failed_at_ms, seq LIMIT @limit`,
    ),
    deadPageByReason: db.prepare<[DeadRange & { reason: string }], JobRow>(
      `SELECT * FROM jobs WHERE queue = @queue AND state = 'dead' AND (failed_at_ms, seq) > (@fromFailedAtMs, @fromSeq)
          AND dead_reason = @reason
        ORDER BY failed_at_ms, seq LIMIT @limit`,
    ),
    deadSummariesAsc: summaries('jobs_dead', false, '>', 'ASC'),
    deadSummariesDesc: summaries('jobs_dead', false, '<', 'DESC'),
    deadSummariesByReasonAsc: summaries('jobs_dead_reason', true, '>', 'ASC'),
    deadSummariesByReasonDesc: summaries('jobs_dead_reason', true, '<', 'DESC'),
    /** The newest @scan dead letters grouped by last error; each row also carries the totals. */
    errorGroups: db.prepare<[{ queue: string; scan: number; limit: number }], GroupRow>(
      `SELECT error_class, first_line, count(*) AS jobs, min(failed_at_ms) AS first_failed_at_ms,
              max(failed_at_ms) AS last_failed_at_ms,
              count(*) OVER () AS group_count, sum(count(*)) OVER () AS scanned
         FROM (SELECT coalesce(last_error_class, '') AS error_class, ${errorFirstLine} AS first_line, failed_at_ms
                 FROM jobs INDEXED BY jobs_dead WHERE queue = @queue AND state = 'dead'
                ORDER BY failed_at_ms DESC, seq DESC LIMIT @scan)
        GROUP BY error_class, first_line
        ORDER BY jobs DESC, last_failed_at_ms DESC, error_class, first_line LIMIT @limit`,
    ),
    deadCountByReason: db
      .prepare<[{ queue: string; reason: string }], number>(
        "SELECT count(*) FROM jobs INDEXED BY jobs_dead_reason WHERE queue = @queue AND state = 'dead' AND dead_reason = @reason",
      )
      .pluck(),
    requeueDeadById: db.prepare<[{ queue: string; id: string; nowMs: number }]>(
      `UPDATE jobs SET ${fresh} WHERE id = @id AND queue = @queue AND state = 'dead'`,
    ),
    /** Deletes one dead letter; its key comes back so it can be released, its seq and flags for its edges. */
    deleteDeadById: db.prepare<[{ queue: string; id: string }], DeletedDeadRow>(
      "DELETE FROM jobs WHERE id = @id AND queue = @queue AND state = 'dead' RETURNING id, idempotency_key, seq, dependency_flags",
    ),
  };
}

type DeadLetterStatements = ReturnType<typeof prepareDeadLetterStatements>;

export function deadLetterOps(sql: DeadLetterStatements): DeadLetters {
  return {
    *page({ queue, reason, after, limit }) {
      const range = { queue, fromFailedAtMs: after.failedAtMs, fromSeq: after.seq, limit };
      return reason === null ? sql.deadPage.all(range) : sql.deadPageByReason.all({ ...range, reason });
    },
    *summaries({ queue, reason, from, descending, limit }) {
      const range = { queue, reason, fromFailedAtMs: from.failedAtMs, fromSeq: from.seq, limit };
      if (reason === null) return (descending ? sql.deadSummariesDesc : sql.deadSummariesAsc).all(range);
      return (descending ? sql.deadSummariesByReasonDesc : sql.deadSummariesByReasonAsc).all(range);
    },
    *errorGroups(p) {
      return groupsOf(sql.errorGroups.all(p));
    },
    *countByReason(p) {
      return sql.deadCountByReason.get(p) ?? 0;
    },
    *requeue(p) {
      return sql.requeueDeadById.run(p).changes > 0;
    },
    *delete(p) {
      return sql.deleteDeadById.get(p);
    },
  };
}

/** The groups without the totals each row repeats. */
export function groupsOf(rows: readonly GroupRow[]): ErrorGroupsRow {
  const first = rows[0];
  return {
    groups: rows.map(({ group_count: _g, scanned: _s, ...group }) => group),
    group_count: first === undefined ? 0 : Number(first.group_count),
    scanned: first === undefined ? 0 : Number(first.scanned),
  };
}
