/**
 * JobReads.ends on PostgreSQL: where waited-for jobs are, and how the ended ones ended, in
 * one statement by the ids' unique index (at most limits.max_waiters ids, distinct). No
 * payload, metadata or error history: only what an outcome wait answers with, and the row
 * version's `xmin` (the transaction that wrote it: each end writes the row anew), by which a
 * later end of the same state and attempt is told from one read before.
 *
 * The version is left out for a job that others depend on (`jobsWaitOnIt`): the enqueue of a
 * job after it by id marks its row, ended or not (addMarking in dependencies.ts), which writes
 * the row anew without ending it again, and its new `xmin` would tell the same end twice. For
 * such a job an end is known by its time, as on a store that gives no version. Nothing else
 * writes the row of an ended job but an end or a requeue.
 */
import { jobsWaitOnIt } from '../dependencies.ts';
import type { Op } from '../op.ts';
import type { JobEndRow } from '../rows.ts';
import { type Connection, rows, statement } from './sql.ts';

const endsByIds = statement(
  `SELECT id, queue, type, state, attempt, result, result_content_type, last_error, dead_reason,
          completed_at_ms, failed_at_ms, cancelled_at_ms,
          CASE WHEN (dependency_flags & ${jobsWaitOnIt}) = 0 THEN xmin::text END AS version
     FROM jobs WHERE id = ANY($1::text[])`,
);

export function* jobEnds(c: Connection, ids: readonly string[]): Op<JobEndRow[]> {
  if (ids.length === 0) return [];
  const ends = yield* rows<JobEndRow & { version: string | null }>(c, endsByIds, [ids]);
  // NULL (a job others depend on) is no version: JobEndRow's is absent then.
  return ends.map(({ version, ...end }) => (version === null ? end : { ...end, version }));
}
