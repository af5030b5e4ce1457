/**
 * JobReads.ends on PostgreSQL: where waited-for jobs are, and how the ended ones ended, in
 * one statement by the ids' unique index (at most limits.max_waiters ids, distinct). No
 * payload, metadata or error history: only what an outcome wait answers with, and the row
 * version's `xmin` (the transaction that wrote it: each end writes the row anew), by which a
 * later end of the same state and attempt is told from one read before.
 */
import type { Op } from '../op.ts';
import type { JobEndRow } from '../rows.ts';
import { type Connection, rows, statement } from './sql.ts';

const endsByIds = statement(
  `SELECT id, queue, type, state, attempt, result, result_content_type, last_error, dead_reason,
          completed_at_ms, failed_at_ms, cancelled_at_ms, xmin::text AS version
     FROM jobs WHERE id = ANY($1::text[])`,
);

export function* jobEnds(c: Connection, ids: readonly string[]): Op<JobEndRow[]> {
  if (ids.length === 0) return [];
  return yield* rows<JobEndRow>(c, endsByIds, [ids]);
}
