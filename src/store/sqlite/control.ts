/**
 * Job control (schema/0009_job_control.sql): cancelling jobs and cancel
 * requests for running ones, changing waiting jobs, an operator's requeue or
 * dead-letter of one job, and expiry. None is on the path of a job that uses
 * none of these features. The bulk forms are in bulk.ts.
 */

import { requeuedBatchId } from '../dependencies.ts';
import type { Control } from '../job-control.ts';
import type { ExpiredRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

/**
 * A requeue (one job or in bulk): ready now, a fresh attempt budget, no expiry, cancel, result or
 * progress; a batch member its batch's id if its row has none (requeuedBatchId).
 */
export const requeueSet = `state = 'ready', attempt_base = attempt, run_at_ms = @nowMs, dead_reason = NULL,
  failed_at_ms = NULL, completed_at_ms = NULL, leased_at_ms = NULL, lease_deadline_ms = NULL,
  worker_id = NULL, expires_at_ms = NULL, cancelled_at_ms = NULL, cancelled_by = NULL,
  result = NULL, result_content_type = NULL,
  progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL, ${requeuedBatchId}`;

export function prepareControlStatements(db: Preparer) {
  return {
    // ---- cancel
    /** A scheduled, ready or waiting job → cancelled. */
    cancelWaiting: db.prepare<[{ seq: number; nowMs: number; by: string | null }]>(
      `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE seq = @seq AND state IN ('scheduled', 'ready', 'waiting')`,
    ),
    /** Records a cancel request on a leased job; it stays leased until its worker stops or the lease ends. */
    requestCancel: db.prepare<[{ seq: number; nowMs: number; by: string | null }]>(
      `UPDATE jobs SET cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE seq = @seq AND state = 'leased' AND cancelled_at_ms IS NULL`,
    ),

    // ---- update waiting jobs
    updateWaiting: db.prepare<
      [{ seq: number; state: string; priority: number; runAtMs: number; groupKey: string | null }]
    >(
      `UPDATE jobs SET state = @state, priority = @priority, run_at_ms = @runAtMs, group_key = @groupKey
        WHERE seq = @seq AND state IN ('scheduled', 'ready')`,
    ),

    // ---- one job, by an operator
    /** Dead, completed or cancelled → ready now, with a fresh attempt budget (and no expiry or cancel). */
    requeueJob: db.prepare<[{ seq: number; nowMs: number }]>(
      `UPDATE jobs SET ${requeueSet} WHERE seq = @seq AND state IN ('dead', 'completed', 'cancelled')`,
    ),
    /** Ready or scheduled → dead (reason dead_lettered), keeping its error history. */
    deadLetterJob: db.prepare<[{ seq: number; nowMs: number }]>(
      `UPDATE jobs SET state = 'dead', dead_reason = 'dead_lettered', failed_at_ms = @nowMs, lease_deadline_ms = NULL
        WHERE seq = @seq AND state IN ('ready', 'scheduled')`,
    ),

    // ---- expiry (index jobs_expiry; the WHERE repeats the index's so the planner may use it)
    expiredWaiting: db.prepare<[{ nowMs: number; limit: number }], ExpiredRow>(
      `SELECT seq, id, queue, type, attempt, state, idempotency_key, dependency_flags, expires_at_ms FROM jobs
        WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready') AND expires_at_ms <= @nowMs
        ORDER BY expires_at_ms LIMIT @limit`,
    ),
    nextExpiry: db
      .prepare<[], number | null>(
        "SELECT min(expires_at_ms) FROM jobs WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready')",
      )
      .pluck(),
    /**
     * An expired job → dead (reason expired). @undoLease is 1 for a job the lease
     * just took (the lease's attempt is given back: it never ran), else 0.
     */
    deadLetterExpired: db.prepare<[{ seq: number; nowMs: number; error: string; undoLease: 0 | 1 }]>(
      `UPDATE jobs SET state = 'dead', dead_reason = 'expired', failed_at_ms = @nowMs, last_error = @error,
                       attempt = attempt - @undoLease, lease_deadline_ms = NULL
        WHERE seq = @seq`,
    ),
  };
}

type ControlStatements = ReturnType<typeof prepareControlStatements>;

export function controlOps(sql: ControlStatements): Control {
  return {
    *expiredWaiting(p) {
      return sql.expiredWaiting.all(p);
    },
    *nextExpiryMs() {
      return sql.nextExpiry.get() ?? null;
    },
    *cancelWaiting(p) {
      sql.cancelWaiting.run(p);
    },
    *requestCancel(p) {
      sql.requestCancel.run(p);
    },
    *updateWaiting(p) {
      sql.updateWaiting.run(p);
    },
    *expire({ seq, nowMs, error, undoLease }) {
      sql.deadLetterExpired.run({ seq, nowMs, error, undoLease: undoLease ? 1 : 0 });
    },
    *requeue(p) {
      return sql.requeueJob.run(p).changes > 0;
    },
    *deadLetter(p) {
      return sql.deadLetterJob.run(p).changes > 0;
    },
  };
}
