/**
 * The job history (schema/0016_job_history.sql): rows per bucket, by resolution,
 * written by the engine's history writer once a minute (src/engine/history/).
 * Every statement is a range of the primary key.
 */

import type { History } from '../history.ts';
import type { HistoryRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareHistoryStatements(db: Preparer) {
  return {
    between: db.prepare<[{ resolution: string; fromMs: number; toMs: number }], HistoryRow>(
      `SELECT * FROM job_history
        WHERE resolution = @resolution AND bucket_ms >= @fromMs AND bucket_ms < @toMs`,
    ),
    put: db.prepare<[HistoryRow]>(
      `INSERT OR REPLACE INTO job_history
         (resolution, bucket_ms, queue, type, writer, completed, failed, dead, covered_ms, wait_hist, run_hist)
       VALUES (@resolution, @bucket_ms, @queue, @type, @writer, @completed, @failed, @dead, @covered_ms,
               @wait_hist, @run_hist)`,
    ),
    forget: db.prepare<[{ resolution: string; beforeMs: number }]>(
      'DELETE FROM job_history WHERE resolution = @resolution AND bucket_ms < @beforeMs',
    ),
  };
}

type HistoryStatements = ReturnType<typeof prepareHistoryStatements>;

export function historyOps(sql: HistoryStatements): History {
  return {
    *between(p) {
      return sql.between.all(p);
    },
    *put(rows) {
      for (const row of rows) sql.put.run(row);
    },
    *forget(p) {
      sql.forget.run(p);
    },
  };
}
