/**
 * Dead letters: pages of a queue's dead jobs by failure time (indexes jobs_dead
 * and jobs_dead_reason), and requeue or delete by id. $2 is the reason (null: any).
 */

import { requeuedBatchId } from '../dependencies.ts';
import type { DeadLetters, DeletedDeadRow, ErrorGroupsRow } from '../job-control.ts';
import type { JobRow, JobSummaryRow } from '../rows.ts';
import { jobColumns, summaryColumns } from './jobs.ts';
import { type Connection, changes, firstRow, rows, statement, value } from './sql.ts';

/** The first line of a job's last error, at most 200 characters (ErrorGroupKey.firstLine). */
export const errorFirstLine = "left(split_part(coalesce(last_error, ''), E'\\n', 1), 200)";

type GroupRow = ErrorGroupsRow['groups'][number] & { group_count: number; scanned: number };

const errorGroups = statement(
  `SELECT error_class, first_line, count(*)::int AS jobs, min(failed_at_ms) AS first_failed_at_ms,
          max(failed_at_ms) AS last_failed_at_ms,
          count(*) OVER ()::int AS group_count, (sum(count(*)) OVER ())::int AS scanned
     FROM (SELECT coalesce(last_error_class, '') AS error_class, ${errorFirstLine} AS first_line, failed_at_ms
             FROM jobs WHERE queue = $1 AND state = 'dead'
            ORDER BY failed_at_ms DESC, seq DESC LIMIT $2) AS newest
    GROUP BY error_class, first_line
    ORDER BY jobs DESC, last_failed_at_ms DESC, error_class, first_line LIMIT $3`,
);

const countByReason = statement(
  "SELECT count(*) AS v FROM jobs WHERE queue = $1 AND state = 'dead' AND dead_reason = $2",
);

const byReason = '($2::text IS NULL OR dead_reason = $2)';
/** A requeued dead letter: ready at $3 with a fresh attempt budget; a member its batch's id if its row has none. */
const fresh = `state = 'ready', attempt_base = attempt, run_at_ms = $3, dead_reason = NULL, failed_at_ms = NULL,
               leased_at_ms = NULL, worker_id = NULL, expires_at_ms = NULL, ${requeuedBatchId}`;

const page = statement(
  `SELECT ${jobColumns} FROM jobs WHERE queue = $1 AND state = 'dead' AND ${byReason}
      AND (failed_at_ms, seq) > ($3, $4)
    ORDER BY failed_at_ms, seq LIMIT $5`,
);
const summaries = (op: '>' | '<', dir: 'ASC' | 'DESC') =>
  statement(
    `SELECT ${summaryColumns} FROM jobs WHERE queue = $1 AND state = 'dead' AND ${byReason}
        AND (failed_at_ms, seq) ${op} ($3, $4)
      ORDER BY failed_at_ms ${dir}, seq ${dir} LIMIT $5`,
  );
const summariesAsc = summaries('>', 'ASC');
const summariesDesc = summaries('<', 'DESC');
const requeueById = statement(`UPDATE jobs SET ${fresh} WHERE id = $2 AND queue = $1 AND state = 'dead'`);
const deleteById = statement(
  "DELETE FROM jobs WHERE id = $2 AND queue = $1 AND state = 'dead' RETURNING id, idempotency_key, seq, dependency_flags",
);

export function deadLetterOps(c: Connection): DeadLetters {
  return {
    *page({ queue, reason, after, limit }) {
      return yield* rows<JobRow>(c, page, [queue, reason, after.failedAtMs, after.seq, limit]);
    },
    *summaries({ queue, reason, from, descending, limit }) {
      return yield* rows<JobSummaryRow>(c, descending ? summariesDesc : summariesAsc, [
        queue,
        reason,
        from.failedAtMs,
        from.seq,
        limit,
      ]);
    },
    *errorGroups(p) {
      const found = yield* rows<GroupRow>(c, errorGroups, [p.queue, p.scan, p.limit]);
      const first = found[0];
      return {
        groups: found.map(({ group_count: _g, scanned: _s, ...group }) => ({
          ...group,
          first_failed_at_ms: Number(group.first_failed_at_ms),
          last_failed_at_ms: Number(group.last_failed_at_ms),
        })),
        group_count: first === undefined ? 0 : first.group_count,
        scanned: first === undefined ? 0 : first.scanned,
      };
    },
    *countByReason(p) {
      return (yield* value<number>(c, countByReason, [p.queue, p.reason])) ?? 0;
    },
    *requeue(p) {
      return (yield* changes(c, requeueById, [p.queue, p.id, p.nowMs])) > 0;
    },
    *delete(p) {
      return yield* firstRow<DeletedDeadRow>(c, deleteById, [p.queue, p.id]);
    },
  };
}
