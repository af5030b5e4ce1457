/**
 * JobReads.ends on PostgreSQL: where waited-for jobs are, and how the ended ones ended, in
 * one statement by the ids' unique index (at most limits.max_waiters ids, distinct). No
 * payload, metadata or error history: only what an outcome wait answers with, and the row's
 * `end_version` (schema/postgres/0024), by which a later end of the same state and attempt is
 * told from one read before.
 *
 * The database counts a job's ends itself: a trigger adds one to `end_version` on each write
 * that moves the row into an ended state from another, whichever statement or server made it.
 * Writes that rewrite an ended row without ending it again (the enqueue of a job after it by
 * id marks it: addMarking in dependencies.ts) leave it as it is, so two reads of one end give
 * the same version, for every job.
 */
import type { Op } from '../op.ts';
import type { JobEndRow } from '../rows.ts';
import { type Connection, rows, statement } from './sql.ts';

const endsByIds = statement(
  `SELECT id, queue, type, state, attempt, result, result_content_type, last_error, dead_reason,
          completed_at_ms, failed_at_ms, cancelled_at_ms, end_version::text AS version
     FROM jobs WHERE id = ANY($1::text[])`,
);

export function* jobEnds(c: Connection, ids: readonly string[]): Op<JobEndRow[]> {
  if (ids.length === 0) return [];
  return yield* rows<JobEndRow & { version: string }>(c, endsByIds, [ids]);
}
