/**
 * The statements behind the admin UI and HTTP API: browsing jobs, one-job
 * operator actions, purges and the audit log (schema/0002_admin.sql). Kept
 * apart from statements.ts because none of them is on the producers' and
 * workers' hot path. Prepared once; each lists its parameters; every read is an
 * index range read (tests/admin/query-plans.test.ts checks the plans).
 */
import type { Db } from './open.ts';
import type { DeletedRow } from './statements.ts';

/** A job as a list shows it: everything but the payload, whose size is given instead. */
export interface JobSummaryRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  state: string;
  priority: number;
  content_type: string;
  payload_bytes: number;
  attempt: number;
  max_attempts: number;
  attempt_base: number;
  idempotency_key: string | null;
  enqueued_at_ms: number;
  run_at_ms: number;
  lease_deadline_ms: number | null;
  worker_id: string | null;
  /** The first 200 characters of the last error; the job detail has all of it. */
  last_error: string | null;
  dead_reason: string | null;
  failed_at_ms: number | null;
  completed_at_ms: number | null;
  expires_at_ms: number | null;
  cancelled_at_ms: number | null;
  cancelled_by: string | null;
  group_key: string | null;
}

export interface AuditRow {
  id: number;
  at_ms: number;
  actor: string;
  action: string;
  target: string;
  details_json: string;
}

/** Optional audit filters: null matches anything. */
export interface AuditFilterParams {
  actor: string | null;
  action: string | null;
  target: string | null;
  before_id: number;
  limit: number;
}

interface SeqRangeParams {
  queue: string;
  state: string;
  type: string;
  /** Exclusive bound: after it when ascending, before it when descending. */
  from_seq: number;
  limit: number;
}

interface DeadRangeParams {
  queue: string;
  /** Exclusive bound on (failed_at_ms, seq): after it ascending, before it descending. */
  from_failed_at_ms: number;
  from_seq: number;
  limit: number;
}

const summaryColumns = `seq, id, queue, type, state, priority, content_type, length(payload) AS payload_bytes, attempt,
  max_attempts, attempt_base, idempotency_key, enqueued_at_ms, run_at_ms, lease_deadline_ms, worker_id,
  substr(last_error, 1, 200) AS last_error, dead_reason, failed_at_ms, completed_at_ms, expires_at_ms,
  cancelled_at_ms, cancelled_by, group_key`;

const auditFilters = `(@actor IS NULL OR actor = @actor) AND (@action IS NULL OR action = @action)
  AND (@target IS NULL OR target = @target) AND id < @before_id`;

export function prepareAdminStatements(db: Db) {
  return {
    // ---- browsing jobs (index jobs_by_state_type: queue, state, type, then seq)
    /** The next job type present in a queue and state after @after_type: one index seek (a loose index scan step). */
    nextTypeInState: db
      .prepare<[{ queue: string; state: string; after_type: string }], string>(
        `SELECT type FROM jobs WHERE queue = @queue AND state = @state AND type > @after_type
          ORDER BY type LIMIT 1`,
      )
      .pluck(),
    /** Seqs of one type in a queue and state, ascending after @from_seq. */
    seqsOfTypeAsc: db
      .prepare<[SeqRangeParams], number>(
        `SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND type = @type AND seq > @from_seq
          ORDER BY seq LIMIT @limit`,
      )
      .pluck(),
    /** Seqs of one type in a queue and state, descending before @from_seq. */
    seqsOfTypeDesc: db
      .prepare<[SeqRangeParams], number>(
        `SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND type = @type AND seq < @from_seq
          ORDER BY seq DESC LIMIT @limit`,
      )
      .pluck(),
    /**
     * Fallback for a queue with very many job types: seqs of any type, which sorts
     * the queue's rows in that state. Used only past the merge's type limit.
     */
    seqsAnyTypeAsc: db
      .prepare<[Omit<SeqRangeParams, 'type'>], number>(
        `SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND seq > @from_seq
          ORDER BY seq LIMIT @limit`,
      )
      .pluck(),
    seqsAnyTypeDesc: db
      .prepare<[Omit<SeqRangeParams, 'type'>], number>(
        `SELECT seq FROM jobs WHERE queue = @queue AND state = @state AND seq < @from_seq
          ORDER BY seq DESC LIMIT @limit`,
      )
      .pluck(),
    /** Summaries of the jobs whose seqs are in @seqs_json (a JSON array): one primary-key probe each. */
    summariesBySeqs: db.prepare<[{ seqs_json: string }], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs WHERE seq IN (SELECT value FROM json_each(@seqs_json))`,
    ),
    /** The newest stored job of a queue with this idempotency key. */
    jobIdByIdempotencyKey: db
      .prepare<[{ queue: string; key: string }], string>(
        `SELECT id FROM jobs WHERE queue = @queue AND idempotency_key = @key ORDER BY seq DESC LIMIT 1`,
      )
      .pluck(),

    // ---- dead letters (indexes jobs_dead and jobs_dead_reason: queue[, reason], failed_at_ms, then seq)
    deadSummariesAsc: db.prepare<[DeadRangeParams], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs INDEXED BY jobs_dead
        WHERE queue = @queue AND state = 'dead' AND (failed_at_ms, seq) > (@from_failed_at_ms, @from_seq)
        ORDER BY failed_at_ms, seq LIMIT @limit`,
    ),
    deadSummariesDesc: db.prepare<[DeadRangeParams], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs INDEXED BY jobs_dead
        WHERE queue = @queue AND state = 'dead' AND (failed_at_ms, seq) < (@from_failed_at_ms, @from_seq)
        ORDER BY failed_at_ms DESC, seq DESC LIMIT @limit`,
    ),
    deadSummariesByReasonAsc: db.prepare<[DeadRangeParams & { reason: string }], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs INDEXED BY jobs_dead_reason
        WHERE queue = @queue AND state = 'dead' AND dead_reason = @reason
          AND (failed_at_ms, seq) > (@from_failed_at_ms, @from_seq)
        ORDER BY failed_at_ms, seq LIMIT @limit`,
    ),
    deadSummariesByReasonDesc: db.prepare<[DeadRangeParams & { reason: string }], JobSummaryRow>(
      `SELECT ${summaryColumns} FROM jobs INDEXED BY jobs_dead_reason
        WHERE queue = @queue AND state = 'dead' AND dead_reason = @reason
          AND (failed_at_ms, seq) < (@from_failed_at_ms, @from_seq)
        ORDER BY failed_at_ms DESC, seq DESC LIMIT @limit`,
    ),

    // ---- one-job operator actions
    /** Dead, completed or cancelled → ready now, with a fresh attempt budget (and no expiry or cancel). */
    requeueJob: db.prepare<[{ seq: number; now_ms: number }]>(
      `UPDATE jobs SET state = 'ready', attempt_base = attempt, run_at_ms = @now_ms, dead_reason = NULL,
                       failed_at_ms = NULL, completed_at_ms = NULL, leased_at_ms = NULL, lease_deadline_ms = NULL,
                       worker_id = NULL, expires_at_ms = NULL, cancelled_at_ms = NULL, cancelled_by = NULL,
                       result = NULL, result_content_type = NULL,
                       progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL
        WHERE seq = @seq AND state IN ('dead', 'completed', 'cancelled')`,
    ),
    /** Ready or scheduled → dead (reason dead_lettered), keeping its error history. */
    deadLetterJob: db.prepare<[{ seq: number; now_ms: number }]>(
      `UPDATE jobs SET state = 'dead', dead_reason = 'dead_lettered', failed_at_ms = @now_ms, lease_deadline_ms = NULL
        WHERE seq = @seq AND state IN ('ready', 'scheduled')`,
    ),

    // ---- queues
    /** Whether a queue's row exists (the truth inside a write, where memory may lag the batch). */
    queueExists: db.prepare<[string], 1>('SELECT 1 FROM queues WHERE name = ?').pluck(),
    /** Removes an empty queue: its counters first, then its row (jobs reference it, so a queue with jobs cannot go). */
    deleteQueueCounts: db.prepare<[string]>('DELETE FROM queue_counts WHERE queue = ?'),
    deleteQueue: db.prepare<[string]>('DELETE FROM queues WHERE name = ?'),

    // ---- bulk changes, in chunks
    /**
     * Deletes up to @limit jobs of a queue in one state (purge of ready and scheduled):
     * their keys, to release them, and their types and attempts, for events.
     */
    deleteStateChunk: db.prepare<
      [{ queue: string; state: string; limit: number }],
      DeletedRow & { type: string; attempt: number }
    >(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = @state LIMIT @limit)
        RETURNING id, idempotency_key, type, attempt`,
    ),
    requeueDeadChunkByReason: db.prepare<[{ queue: string; reason: string; now_ms: number; limit: number }]>(
      `UPDATE jobs SET state = 'ready', attempt_base = attempt, run_at_ms = @now_ms, dead_reason = NULL, failed_at_ms = NULL,
                       leased_at_ms = NULL, worker_id = NULL, expires_at_ms = NULL
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'dead' AND dead_reason = @reason
                      ORDER BY failed_at_ms LIMIT @limit)`,
    ),
    deleteDeadChunkByReason: db.prepare<[{ queue: string; reason: string; limit: number }], DeletedRow>(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'dead'
                                       AND dead_reason = @reason ORDER BY failed_at_ms LIMIT @limit)
        RETURNING id, idempotency_key`,
    ),

    // ---- audit log
    insertAudit: db
      .prepare<
        [{ at_ms: number; actor: string; action: string; target: string; details_json: string }],
        number
      >(
        `INSERT INTO audit_log (at_ms, actor, action, target, details_json)
         VALUES (@at_ms, @actor, @action, @target, @details_json) RETURNING id`,
      )
      .pluck(),
    updateAuditDetails: db.prepare<[{ id: number; details_json: string }]>(
      'UPDATE audit_log SET details_json = @details_json WHERE id = @id',
    ),
    /** Newest first before @before_id; the other filters narrow it. Driven by the primary key. */
    auditPage: db.prepare<[AuditFilterParams], AuditRow>(
      `SELECT * FROM audit_log WHERE ${auditFilters} ORDER BY id DESC LIMIT @limit`,
    ),
    /** Driven by audit_log_target (the most selective filter). */
    auditPageByTarget: db.prepare<[AuditFilterParams], AuditRow>(
      `SELECT * FROM audit_log INDEXED BY audit_log_target WHERE target = @target AND ${auditFilters}
        ORDER BY id DESC LIMIT @limit`,
    ),
    auditPageByActor: db.prepare<[AuditFilterParams], AuditRow>(
      `SELECT * FROM audit_log INDEXED BY audit_log_actor WHERE actor = @actor AND ${auditFilters}
        ORDER BY id DESC LIMIT @limit`,
    ),
    auditPageByAction: db.prepare<[AuditFilterParams], AuditRow>(
      `SELECT * FROM audit_log INDEXED BY audit_log_action WHERE action = @action AND ${auditFilters}
        ORDER BY id DESC LIMIT @limit`,
    ),
  };
}

export type AdminStatements = ReturnType<typeof prepareAdminStatements>;
