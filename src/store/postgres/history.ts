/**
 * The job history (schema/postgres/0002_job_history.sql, as SQLite's 0016): rows per
 * bucket, by resolution; a flush's rows go in one statement (arrays), every read and
 * delete is a range of the primary key.
 */

import type { History } from '../history.ts';
import type { HistoryRow } from '../rows.ts';
import { type Connection, changes, rows, statement } from './sql.ts';

const between = statement(
  `SELECT resolution, bucket_ms, queue, type, writer, completed, failed, dead, covered_ms, wait_hist, run_hist
     FROM job_history WHERE resolution = $1 AND bucket_ms >= $2 AND bucket_ms < $3`,
);
const put = statement(
  `INSERT INTO job_history
     (resolution, bucket_ms, queue, type, writer, completed, failed, dead, covered_ms, wait_hist, run_hist)
   SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[],
                        $7::bigint[], $8::bigint[], $9::bigint[], $10::text[], $11::text[])
   ON CONFLICT (resolution, bucket_ms, queue, type, writer) DO UPDATE SET
     completed = excluded.completed, failed = excluded.failed, dead = excluded.dead,
     covered_ms = excluded.covered_ms, wait_hist = excluded.wait_hist, run_hist = excluded.run_hist`,
);
const forget = statement('DELETE FROM job_history WHERE resolution = $1 AND bucket_ms < $2');

const columns = [
  'resolution',
  'bucket_ms',
  'queue',
  'type',
  'writer',
  'completed',
  'failed',
  'dead',
  'covered_ms',
  'wait_hist',
  'run_hist',
] as const satisfies readonly (keyof HistoryRow)[];

export function historyOps(c: Connection): History {
  return {
    *between(p) {
      return yield* rows<HistoryRow>(c, between, [p.resolution, p.fromMs, p.toMs]);
    },
    *put(list) {
      if (list.length === 0) return;
      yield* changes(
        c,
        put,
        columns.map((column) => list.map((row) => row[column])),
      );
    },
    *forget(p) {
      yield* changes(c, forget, [p.resolution, p.beforeMs]);
    },
  };
}
