/**
 * The statements of job control (schema/0009_job_control.sql): cancelling
 * jobs and cancel requests for running ones, changing waiting jobs, expiry,
 * and idempotency keys that follow their jobs. None is on the path of a job
 * that uses none of these features, except the one index probe that a keyed
 * enqueue makes. Prepared once; each lists its parameters; the bulk forms
 * change at most @limit rows per call, so the engine runs them in chunks.
 */
import type { Db } from './open.ts';

/** The columns an operator's action on one job needs. */
export interface ControlRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  state: string;
  priority: number;
  attempt: number;
  run_at_ms: number;
  expires_at_ms: number | null;
  worker_id: string | null;
  idempotency_key: string | null;
  group_key: string | null;
  cancelled_at_ms: number | null;
  cancelled_by: string | null;
  completed_at_ms: number | null;
}

/** A waiting job whose expiry has passed. */
export interface ExpiredRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  attempt: number;
  state: string;
  idempotency_key: string | null;
  expires_at_ms: number;
}

/** Bulk filters: a queue and one state, optionally one type and one group (NULL: any). */
interface ChunkParams {
  queue: string;
  state: string;
  type: string | null;
  group: string | null;
  limit: number;
}

const filterMatch = '(@type IS NULL OR type = @type) AND (@group IS NULL OR group_key = @group)';

export function prepareControlStatements(db: Db) {
  return {
    controlRowById: db.prepare<[string], ControlRow>(
      `SELECT seq, id, queue, type, state, priority, attempt, run_at_ms, expires_at_ms, worker_id, idempotency_key,
              group_key, cancelled_at_ms, cancelled_by, completed_at_ms
         FROM jobs WHERE id = ?`,
    ),

    // ---- cancel
    /** A scheduled or ready job → cancelled. */
    cancelWaiting: db.prepare<[{ seq: number; now_ms: number; by: string | null }]>(
      `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = @now_ms, cancelled_by = @by
        WHERE seq = @seq AND state IN ('scheduled', 'ready')`,
    ),
    /** Records a cancel request on a leased job; it stays leased until its worker stops or the lease ends. */
    requestCancel: db.prepare<[{ seq: number; now_ms: number; by: string | null }]>(
      `UPDATE jobs SET cancelled_at_ms = @now_ms, cancelled_by = @by
        WHERE seq = @seq AND state = 'leased' AND cancelled_at_ms IS NULL`,
    ),
    /** The attempt of a job with a cancel request ended (settled, or its lease ran out) → cancelled. */
    finishCancelled: db.prepare<[{ seq: number; last_error: string | null; errors_json: string | null }]>(
      `UPDATE jobs SET state = 'cancelled', lease_deadline_ms = NULL,
                       last_error = coalesce(@last_error, last_error), errors_json = coalesce(@errors_json, errors_json)
        WHERE seq = @seq AND state = 'leased'`,
    ),
    /** Up to @limit scheduled or ready jobs of a queue (and type, group) → cancelled. */
    cancelWaitingChunk: db.prepare<
      [ChunkParams & { now_ms: number; by: string | null }],
      { id: string; idempotency_key: string | null; type: string; attempt: number }
    >(
      `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = @now_ms, cancelled_by = @by
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND ${filterMatch} LIMIT @limit)
        RETURNING id, idempotency_key, type, attempt`,
    ),
    /** Cancel requests on up to @limit leased jobs of a queue (and type, group) that have none yet. */
    requestCancelChunk: db.prepare<
      [Omit<ChunkParams, 'state'> & { now_ms: number; by: string | null }],
      { id: string; attempt: number; worker_id: string | null; idempotency_key: string | null }
    >(
      `UPDATE jobs SET cancelled_at_ms = @now_ms, cancelled_by = @by
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
      .prepare<[{ queue: string; state: string; type: string | null; group: string }], number>(
        `SELECT count(*) FROM jobs WHERE queue = @queue AND state = @state AND ${filterMatch}`,
      )
      .pluck(),
    /** Leased jobs of a queue (and type, group) with no cancel request yet. */
    countLeasedNotCancelled: db
      .prepare<[{ queue: string; type: string | null; group: string | null }], number>(
        `SELECT count(*) FROM jobs WHERE queue = @queue AND state = 'leased' AND ${filterMatch}
            AND cancelled_at_ms IS NULL`,
      )
      .pluck(),

    // ---- update waiting jobs
    updateWaiting: db.prepare<
      [{ seq: number; state: string; priority: number; run_at_ms: number; group_key: string | null }]
    >(
      `UPDATE jobs SET state = @state, priority = @priority, run_at_ms = @run_at_ms, group_key = @group_key
        WHERE seq = @seq AND state IN ('scheduled', 'ready')`,
    ),
    /** Up to @limit scheduled jobs of a queue (and type, group) → ready now, optionally with a new priority. */
    runNowChunk: db.prepare<[Omit<ChunkParams, 'state'> & { now_ms: number; priority: number | null }]>(
      `UPDATE jobs SET state = 'ready', run_at_ms = @now_ms, priority = coalesce(@priority, priority)
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'scheduled' AND ${filterMatch}
                      LIMIT @limit)`,
    ),
    /** Up to @limit jobs of a queue, state (and type, group) whose priority is not @priority yet → @priority. */
    setPriorityChunk: db.prepare<[ChunkParams & { priority: number }]>(
      `UPDATE jobs SET priority = @priority
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND ${filterMatch}
                        AND priority <> @priority LIMIT @limit)`,
    ),

    // ---- expiry (index jobs_expiry; the WHERE repeats the index's so the planner may use it)
    expiredWaiting: db.prepare<[{ now_ms: number; limit: number }], ExpiredRow>(
      `SELECT seq, id, queue, type, attempt, state, idempotency_key, expires_at_ms FROM jobs
        WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready') AND expires_at_ms <= @now_ms
        ORDER BY expires_at_ms LIMIT @limit`,
    ),
    nextExpiry: db
      .prepare<[], number | null>(
        "SELECT min(expires_at_ms) FROM jobs WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready')",
      )
      .pluck(),
    /**
     * An expired job → dead (reason expired). @undo_lease is 1 for a job the lease
     * just took (the lease's attempt is given back: it never ran), else 0.
     */
    deadLetterExpired: db.prepare<[{ seq: number; now_ms: number; error: string; undo_lease: 0 | 1 }]>(
      `UPDATE jobs SET state = 'dead', dead_reason = 'expired', failed_at_ms = @now_ms, last_error = @error,
                       attempt = attempt - @undo_lease, lease_deadline_ms = NULL
        WHERE seq = @seq`,
    ),
    sweepCancelled: db.prepare<[{ queue: string; before_ms: number; limit: number }]>(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'cancelled'
                                       AND cancelled_at_ms < @before_ms ORDER BY cancelled_at_ms LIMIT @limit)`,
    ),

    // ---- idempotency keys
    /** The newest unfinished job of a queue with this key (index jobs_idempotency): a key in use. */
    activeJobByKey: db
      .prepare<[{ queue: string; key: string }], string>(
        `SELECT id FROM jobs WHERE queue = @queue AND idempotency_key = @key
            AND state IN ('scheduled', 'ready', 'leased') AND cancelled_at_ms IS NULL
          ORDER BY seq DESC LIMIT 1`,
      )
      .pluck(),
    /** Forgets a key, if it still names this job (cancel and delete release keys). */
    releaseKey: db.prepare<[{ queue: string; key: string; job_id: string }]>(
      'DELETE FROM idempotency_keys WHERE queue = @queue AND key = @key AND job_id = @job_id',
    ),
  };
}

export type ControlStatements = ReturnType<typeof prepareControlStatements>;
