/**
 * Job control (schema/0009_job_control.sql): cancelling jobs and cancel
 * requests for running ones, changing waiting jobs, an operator's requeue or
 * dead-letter of one job, purges, and expiry. None is on the path of a job
 * that uses none of these features. The bulk forms change at most @limit rows
 * per call, so the engine runs them in chunks.
 */
import type { EndedJobRow, ExpiredRow } from '../rows.ts';
import type { Control, JobMatch } from '../store.ts';
import type { Db } from './open.ts';

type Bulk = JobMatch & { limit: number };

const filterMatch = '(@type IS NULL OR type = @type) AND (@group IS NULL OR group_key = @group)';

export function prepareControlStatements(db: Db) {
  return {
    // ---- cancel
    /** A scheduled or ready job → cancelled. */
    cancelWaiting: db.prepare<[{ seq: number; nowMs: number; by: string | null }]>(
      `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE seq = @seq AND state IN ('scheduled', 'ready')`,
    ),
    /** Records a cancel request on a leased job; it stays leased until its worker stops or the lease ends. */
    requestCancel: db.prepare<[{ seq: number; nowMs: number; by: string | null }]>(
      `UPDATE jobs SET cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE seq = @seq AND state = 'leased' AND cancelled_at_ms IS NULL`,
    ),
    /** Up to @limit scheduled or ready jobs of a queue (and type, group) → cancelled. */
    cancelWaitingChunk: db.prepare<[Bulk & { state: string; nowMs: number; by: string | null }], EndedJobRow>(
      `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND ${filterMatch} LIMIT @limit)
        RETURNING id, idempotency_key, type, attempt`,
    ),
    /** Cancel requests on up to @limit leased jobs of a queue (and type, group) that have none yet. */
    requestCancelChunk: db.prepare<
      [Bulk & { nowMs: number; by: string | null }],
      { id: string; attempt: number; worker_id: string | null; idempotency_key: string | null }
    >(
      `UPDATE jobs SET cancelled_at_ms = @nowMs, cancelled_by = @by
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'leased' AND ${filterMatch}
                        AND cancelled_at_ms IS NULL LIMIT @limit)
        RETURNING id, attempt, worker_id, idempotency_key`,
    ),
    /** Jobs of a queue, state and type: one index range (jobs_by_state_type). */
    countOfType: db
      .prepare<[{ queue: string; state: string; type: string }], number>(
        'SELECT count(*) FROM jobs WHERE queue = @queue AND state = @state AND type = @type',
      )
      .pluck(),
    /** Jobs of a queue, state and group (and type): the queue's range of jobs_by_state_type, each row read. */
    countOfGroup: db
      .prepare<[JobMatch & { state: string }], number>(
        `SELECT count(*) FROM jobs WHERE queue = @queue AND state = @state AND ${filterMatch}`,
      )
      .pluck(),
    /** Leased jobs of a queue (and type, group) with no cancel request yet. */
    countLeasedNotCancelled: db
      .prepare<[JobMatch], number>(
        `SELECT count(*) FROM jobs WHERE queue = @queue AND state = 'leased' AND ${filterMatch}
            AND cancelled_at_ms IS NULL`,
      )
      .pluck(),

    // ---- update waiting jobs
    updateWaiting: db.prepare<
      [{ seq: number; state: string; priority: number; runAtMs: number; groupKey: string | null }]
    >(
      `UPDATE jobs SET state = @state, priority = @priority, run_at_ms = @runAtMs, group_key = @groupKey
        WHERE seq = @seq AND state IN ('scheduled', 'ready')`,
    ),
    /** Up to @limit scheduled jobs of a queue (and type, group) → ready now, optionally with a new priority. */
    runNowChunk: db.prepare<[Bulk & { nowMs: number; priority: number | null }]>(
      `UPDATE jobs SET state = 'ready', run_at_ms = @nowMs, priority = coalesce(@priority, priority)
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'scheduled' AND ${filterMatch}
                      LIMIT @limit)`,
    ),
    /** Up to @limit jobs of a queue, state (and type, group) whose priority is not @priority yet → @priority. */
    setPriorityChunk: db.prepare<[Bulk & { state: string; priority: number }]>(
      `UPDATE jobs SET priority = @priority
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND ${filterMatch}
                        AND priority <> @priority LIMIT @limit)`,
    ),

    // ---- one job, by an operator
    /** Dead, completed or cancelled → ready now, with a fresh attempt budget (and no expiry or cancel). */
    requeueJob: db.prepare<[{ seq: number; nowMs: number }]>(
      `UPDATE jobs SET state = 'ready', attempt_base = attempt, run_at_ms = @nowMs, dead_reason = NULL,
                       failed_at_ms = NULL, completed_at_ms = NULL, leased_at_ms = NULL, lease_deadline_ms = NULL,
                       worker_id = NULL, expires_at_ms = NULL, cancelled_at_ms = NULL, cancelled_by = NULL,
                       result = NULL, result_content_type = NULL,
                       progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL
        WHERE seq = @seq AND state IN ('dead', 'completed', 'cancelled')`,
    ),
    /** Ready or scheduled → dead (reason dead_lettered), keeping its error history. */
    deadLetterJob: db.prepare<[{ seq: number; nowMs: number }]>(
      `UPDATE jobs SET state = 'dead', dead_reason = 'dead_lettered', failed_at_ms = @nowMs, lease_deadline_ms = NULL
        WHERE seq = @seq AND state IN ('ready', 'scheduled')`,
    ),
    /**
     * Deletes up to @limit jobs of a queue in one state (purge of ready and scheduled):
     * their keys, to release them, and their types and attempts, for events.
     */
    deleteStateChunk: db.prepare<[{ queue: string; state: string; limit: number }], EndedJobRow>(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = @state LIMIT @limit)
        RETURNING id, idempotency_key, type, attempt`,
    ),

    // ---- expiry (index jobs_expiry; the WHERE repeats the index's so the planner may use it)
    expiredWaiting: db.prepare<[{ nowMs: number; limit: number }], ExpiredRow>(
      `SELECT seq, id, queue, type, attempt, state, idempotency_key, expires_at_ms FROM jobs
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
    *countMatching(p) {
      // A type alone is one index range; a group reads the queue's range row by row.
      if (p.group === null && p.type !== null) {
        return sql.countOfType.get({ queue: p.queue, state: p.state, type: p.type }) ?? 0;
      }
      return sql.countOfGroup.get(p) ?? 0;
    },
    *countLeasedNotCancelled(p) {
      return sql.countLeasedNotCancelled.get(p) ?? 0;
    },
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
    *cancelWaitingMany(p) {
      return sql.cancelWaitingChunk.all(p);
    },
    *requestCancelMany(p) {
      return sql.requestCancelChunk.all(p);
    },
    *updateWaiting(p) {
      sql.updateWaiting.run(p);
    },
    *runNowMany(p) {
      return sql.runNowChunk.run(p).changes;
    },
    *setPriorityMany(p) {
      return sql.setPriorityChunk.run(p).changes;
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
    *deleteWaitingMany(p) {
      return sql.deleteStateChunk.all(p);
    },
  };
}
