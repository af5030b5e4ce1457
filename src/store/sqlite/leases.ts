/**
 * Leases and their settlements: the producers' and workers' hot path after
 * the insert. The lease is one prepared `UPDATE … RETURNING` over an index
 * (jobs_ready, or jobs_group_ready for a queue's turns across groups); an ack
 * is one `DELETE … RETURNING` by id, or one per 50 acks (multi-row.ts).
 * Prepared once; tests/admin/query-plans.test.ts checks every plan.
 */
import type Database from 'better-sqlite3';
import { jobsWaitOnIt } from '../dependencies.ts';
import type { AttemptKey, CompletingAck, LeaseParams, Leases, UndoneLeaseRow } from '../leases.ts';
import type { Op } from '../op.ts';
import type { AckedRow, AttemptRow, LeasedRow } from '../rows.ts';
import { MultiRowStatement } from './multi-row.ts';
import { objectRows } from './object-rows.ts';
import type { Preparer } from './prepare-on-use.ts';

/**
 * The columns of a LeasedRow, in the order every leasing statement returns them. `batch_id`
 * is NULL but for a batch's members (schema/0030_job_batch_id.sql): the lease hands a member
 * its batch from the row it updates, without reading batch_members.
 */
export const leasedColumns =
  'seq, id, queue, type, payload, content_type, priority, attempt, max_attempts, attempt_base, lease_deadline_ms, enqueued_at_ms, run_at_ms, metadata_json, traceparent, tracestate, idempotency_key, last_error, expires_at_ms, group_key, timeout_at_ms, batch_id';

/** The columns of an AttemptRow (jobs.ts reads them too). */
export const attemptColumns =
  'seq, id, queue, type, state, attempt, max_attempts, attempt_base, errors_json, cancelled_at_ms, cancelled_by, dependency_flags, timeout_at_ms, run_at_ms, leased_at_ms, worker_id';

/** What an ack that deleted its job returns (AckedRow). */
const ackedColumns = 'queue, type, run_at_ms, leased_at_ms, worker_id';

const ackedColumnNames = ackedColumns.split(', ') as (keyof AckedRow)[];
const leasedColumnNames = leasedColumns.split(', ') as (keyof LeasedRow)[];

/** A statement that leases: its rows read as arrays, each made into a LeasedRow here (object-rows.ts). */
function leaseStatement<P>(statement: Database.Statement<[P], unknown>): {
  all(params: P): LeasedRow[];
  readonly source: string;
} {
  return objectRows<[P], LeasedRow>(statement, leasedColumnNames);
}

/**
 * What a lease sets, for every statement that leases. A job with its own lease_ms
 * gets at least that long, up to @maxLeaseDeadlineMs. A job with a hard timeout (its
 * own timeout_ms, else the queue's @timeoutMs; NULL for neither) gets `timeout_at_ms`,
 * and its deadline is capped there, so the lease-expiry sweep ends the attempt then.
 */
const leaseSet = `SET state = 'leased', attempt = attempt + 1, leased_at_ms = @nowMs,
              lease_deadline_ms = min(CASE WHEN lease_ms IS NULL THEN @leaseDeadlineMs
                                  ELSE max(@leaseDeadlineMs, min(@nowMs + lease_ms, @maxLeaseDeadlineMs)) END,
                                  coalesce(@nowMs + coalesce(timeout_ms, @timeoutMs), @maxLeaseDeadlineMs)),
              timeout_at_ms = @nowMs + coalesce(timeout_ms, @timeoutMs),
              worker_id = @workerId`;

/**
 * The rows an ack deletes without reading them first: leased (at the ack's attempt, which
 * each statement adds) and not asked to stop (a cancel request makes the ack answer
 * `job_cancelled` instead, after reading the row), and in no dependency (a job others
 * wait on is kept completed and releases them, a waiting job's edges go with it: the
 * Settler's slow path; the column is 0 for every other job, so it pays one comparison
 * of a row already found). Shared by `ack` and `ackMany`: a condition added here holds
 * for both.
 */
const ackableLeased = "state = 'leased' AND cancelled_at_ms IS NULL AND dependency_flags = 0";

export function prepareLeaseStatements(db: Preparer) {
  return {
    /**
     * Leases up to @limit ready jobs of one queue in order: one UPDATE … RETURNING.
     * Only jobs without a group: a queue that has grouped jobs leases by turns
     * (leaseUngroupedAt, leaseGroupAt). The limit is CAST, not a bare parameter:
     * SQLite lets a bare bound LIMIT shape the plan, so every execution with a new
     * binding re-prepares the statement (10-40 µs measured, several times the cost of
     * leasing one job); an expression does not.
     */
    leaseReady: leaseStatement(
      db.prepare<[LeaseParams & { queue: string; limit: number }], LeasedRow>(
        `UPDATE jobs ${leaseSet}
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
                      ORDER BY priority DESC, run_at_ms, seq LIMIT CAST(@limit AS INTEGER))
        RETURNING ${leasedColumns}`,
      ),
    ),
    /** Up to @limit ready jobs without a group at @priority, oldest due first. */
    leaseUngroupedAt: leaseStatement(
      db.prepare<[LeaseParams & { queue: string; priority: number; limit: number }], LeasedRow>(
        `UPDATE jobs ${leaseSet}
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
                        AND priority = @priority ORDER BY run_at_ms, seq LIMIT CAST(@limit AS INTEGER))
        RETURNING ${leasedColumns}`,
      ),
    ),
    /** Up to @limit ready jobs of one group at @priority, oldest due first. */
    leaseGroupAt: leaseStatement(
      db.prepare<
        [LeaseParams & { queue: string; priority: number; groupKey: string; limit: number }],
        LeasedRow
      >(
        `UPDATE jobs ${leaseSet}
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key = @groupKey
                        AND priority = @priority ORDER BY run_at_ms, seq LIMIT CAST(@limit AS INTEGER))
        RETURNING ${leasedColumns}`,
      ),
    ),
    /** Ack when completed jobs are not kept: the job's queue and type, or nothing when it did not match. */
    deleteLeased: db.prepare<[AttemptKey], AckedRow>(
      `DELETE FROM jobs WHERE id = @jobId AND ${ackableLeased} AND attempt = @attempt RETURNING ${ackedColumns}`,
    ),
    /** Ack when the queue keeps completed jobs: kept with its result (NULL when the ack carried none). */
    completeLeased: db.prepare<
      [AttemptKey & { nowMs: number; result: Uint8Array | null; resultContentType: string | null }]
    >(
      `UPDATE jobs SET state = 'completed', completed_at_ms = @nowMs, lease_deadline_ms = NULL,
                       result = @result, result_content_type = @resultContentType
        WHERE id = @jobId AND state = 'leased' AND attempt = @attempt AND cancelled_at_ms IS NULL`,
    ),
    /** `completeLeased` of a job others wait on (it is kept for them), returning what the ack goes on with. */
    completeDependedOn: db.prepare<
      [AttemptKey & { nowMs: number; result: Uint8Array | null; resultContentType: string | null }],
      AckedRow & { dependency_flags: number }
    >(
      `UPDATE jobs SET state = 'completed', completed_at_ms = @nowMs, lease_deadline_ms = NULL,
                       result = @result, result_content_type = @resultContentType
        WHERE id = @jobId AND state = 'leased' AND attempt = @attempt AND cancelled_at_ms IS NULL
          AND dependency_flags & ${jobsWaitOnIt} <> 0
        RETURNING ${ackedColumns}, dependency_flags`,
    ),
    /** A progress report of the lease @attempt: NULL leaves that part as it was. */
    reportProgress: db.prepare<
      [AttemptKey & { percent: number | null; json: string | null; nowMs: number }],
      { progress_percent: number | null; progress_json: string | null }
    >(
      `UPDATE jobs SET progress_percent = coalesce(@percent, progress_percent),
                       progress_json = coalesce(@json, progress_json), progress_at_ms = @nowMs
        WHERE id = @jobId AND state = 'leased' AND attempt = @attempt
        RETURNING progress_percent, progress_json`,
    ),
    extendLeased: db.prepare<[AttemptKey & { leaseDeadlineMs: number }]>(
      `UPDATE jobs SET lease_deadline_ms = @leaseDeadlineMs
        WHERE id = @jobId AND state = 'leased' AND attempt = @attempt`,
    ),
    /** A failed attempt with attempts left: back to ready or scheduled; the next attempt reports its own progress. */
    retryJob: db.prepare<
      [
        {
          seq: number;
          state: 'ready' | 'scheduled';
          runAtMs: number;
          lastError: string;
          lastErrorClass: string | null;
          errorsJson: string;
        },
      ]
    >(
      `UPDATE jobs SET state = @state, run_at_ms = @runAtMs, lease_deadline_ms = NULL,
                       last_error = @lastError, last_error_class = @lastErrorClass, errors_json = @errorsJson,
                       progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL
        WHERE seq = @seq`,
    ),
    failJob: db.prepare<
      [
        {
          seq: number;
          deadReason: string;
          nowMs: number;
          lastError: string;
          lastErrorClass: string | null;
          errorsJson: string;
        },
      ]
    >(
      `UPDATE jobs SET state = 'dead', dead_reason = @deadReason, failed_at_ms = @nowMs, lease_deadline_ms = NULL,
                       last_error = @lastError, last_error_class = @lastErrorClass, errors_json = @errorsJson
        WHERE seq = @seq`,
    ),
    /**
     * A lease that never reached its worker, undone (Leases.undoLeases): ready again at its old
     * place, on the attempt it had before (its number never left the server, so no one can
     * settle with it), the lease's fields cleared. Fenced by the attempt; a job asked to stop is
     * left to the engine (it ends cancelled, as a settled one would).
     */
    undoLease: db.prepare<[AttemptKey], UndoneLeaseRow>(undoneLease('attempt = attempt - 1')),
    /**
     * A lease its worker gave back unstarted (Leases.giveBackLeases): as undoLease, but the
     * attempt stays (its worker holds that number: the next lease takes a new one) and the
     * job's budget grows by one instead, so no attempt is counted.
     */
    giveBackLease: db.prepare<[AttemptKey], UndoneLeaseRow>(undoneLease('attempt_base = attempt_base + 1')),
    /** The attempt of a job with a cancel request ended (settled, or its lease ran out) → cancelled. */
    finishCancelled: db.prepare<[{ seq: number; lastError: string | null; errorsJson: string | null }]>(
      `UPDATE jobs SET state = 'cancelled', lease_deadline_ms = NULL,
                       last_error = coalesce(@lastError, last_error), errors_json = coalesce(@errorsJson, errors_json)
        WHERE seq = @seq AND state = 'leased'`,
    ),
    expiredLeases: db.prepare<[{ nowMs: number; limit: number }], AttemptRow>(
      `SELECT ${attemptColumns} FROM jobs
        WHERE state = 'leased' AND lease_deadline_ms <= @nowMs ORDER BY lease_deadline_ms LIMIT @limit`,
    ),
    nextLeaseDeadline: db
      .prepare<[], number | null>("SELECT min(lease_deadline_ms) FROM jobs WHERE state = 'leased'")
      .pluck(),
    /**
     * Leases held per worker id: reads the jobs_leased partial index only (it holds
     * worker_id and leased_at_ms, migration 0013), so it costs what is running now, not
     * what is stored, and no table read per lease.
     */
    leasesByWorker: db.prepare<[], { worker_id: string | null; jobs: number; since_ms: number }>(
      `SELECT worker_id, count(*) AS jobs, min(leased_at_ms) AS since_ms FROM jobs INDEXED BY jobs_leased
        WHERE state = 'leased' GROUP BY worker_id`,
    ),
  };
}

type LeaseStatements = ReturnType<typeof prepareLeaseStatements>;

/**
 * A leased job at the attempt named, with no cancel asked, ready again at its old place with
 * its lease's fields cleared; `attemptSet` says what becomes of its attempt.
 */
function undoneLease(attemptSet: string): string {
  return `UPDATE jobs SET state = 'ready', ${attemptSet}, leased_at_ms = NULL, lease_deadline_ms = NULL,
                          worker_id = NULL, timeout_at_ms = NULL
           WHERE id = @jobId AND state = 'leased' AND attempt = @attempt AND cancelled_at_ms IS NULL
           RETURNING id, queue, type, group_key`;
}

/** Runs an undoneLease statement per key (ids distinct): the rows it changed. */
function eachRow(statement: Database.Statement<[AttemptKey], UndoneLeaseRow>, keys: readonly AttemptKey[]) {
  const undone: UndoneLeaseRow[] = [];
  for (const key of keys) {
    const row = statement.get(key);
    if (row !== undefined) undone.push(row);
  }
  return undone;
}

/**
 * Deletes the jobs that are leased at the attempt each ack names (found through the
 * `id` index, one probe per ack), and returns the ones it deleted; an ack it did not
 * match deletes nothing. The acks' job ids must be distinct.
 */
export function prepareAckDeletes(db: Preparer): MultiRowStatement<AttemptKey, AckedRow & { id: string }> {
  return new MultiRowStatement<AttemptKey, AckedRow & { id: string }>(
    db,
    2,
    // One row: the plain form. `IN (VALUES …)` builds its list for every execution, which
    // costs more than it saves below ~10 rows (measured: acks in batches of 2-5 cost +37 %).
    (tuples, rows) =>
      rows === 1
        ? `DELETE FROM jobs WHERE id = ? AND attempt = ? AND ${ackableLeased} RETURNING id, ${ackedColumns}`
        : `DELETE FROM jobs WHERE ${ackableLeased} AND (id, attempt) IN (VALUES ${tuples}) RETURNING id, ${ackedColumns}`,
    (values, offset, ack) => {
      values[offset] = ack.jobId;
      values[offset + 1] = ack.attempt;
    },
  );
}

/** The kept acks' statement: the acks, the rows they completed, and the time they completed. */
type KeptCompletes = MultiRowStatement<
  CompletingAck,
  AckedRow & { id: string; dependency_flags: number },
  number
>;

/**
 * `completeDependedOn` for many: the jobs others wait on that are leased at the attempt
 * each ack names (found through the `id` index, one probe per ack) become completed with
 * their results, and come back. The acks' job ids must be distinct. The ack batch of a
 * W5 flow is mostly such jobs (the children of a collector): one statement per 50 instead
 * of one each.
 */
export function prepareKeptCompletes(db: Preparer): KeptCompletes {
  const returned = `id, ${ackedColumns}, dependency_flags`;
  return new MultiRowStatement<CompletingAck, AckedRow & { id: string; dependency_flags: number }, number>(
    db,
    5,
    // One form for every size: a batch has several such acks or goes through completeDependedOn.
    // `exact`: a W5 ack batch of 25 is one statement, not seven (10, 10, 1 × 5).
    (tuples) =>
      `UPDATE jobs SET state = 'completed', completed_at_ms = v.column5, lease_deadline_ms = NULL,
                          result = v.column3, result_content_type = v.column4
            FROM (VALUES ${tuples}) AS v
            WHERE jobs.id = v.column1 AND jobs.attempt = v.column2 AND jobs.state = 'leased'
              AND jobs.cancelled_at_ms IS NULL AND jobs.dependency_flags & ${jobsWaitOnIt} <> 0
            RETURNING ${returned}`,
    // `nowMs`, the time they completed, is the call's for every row (no object per ack for it).
    (values, offset, ack, nowMs) => {
      values[offset] = ack.jobId;
      values[offset + 1] = ack.attempt;
      values[offset + 2] = ack.result;
      values[offset + 3] = ack.resultContentType;
      values[offset + 4] = nowMs;
    },
    'exact',
    // Many rows per call (a W5 ack batch's children): read as arrays (object-rows.ts).
    ['id', ...ackedColumnNames, 'dependency_flags'],
  );
}

export function leaseOps(
  sql: LeaseStatements,
  ackDeletes: MultiRowStatement<AttemptKey, AckedRow & { id: string }>,
  keptCompletes?: KeptCompletes,
): Leases {
  return {
    *leaseReady(p): Op<LeasedRow[]> {
      return sql.leaseReady.all(p);
    },
    *leaseUngroupedAt(p): Op<LeasedRow[]> {
      return sql.leaseUngroupedAt.all(p);
    },
    *leaseGroupAt(p): Op<LeasedRow[]> {
      return sql.leaseGroupAt.all(p);
    },
    *ack(key) {
      return sql.deleteLeased.get(key);
    },
    *ackMany(keys) {
      return ackDeletes.all(keys);
    },
    *complete(p) {
      sql.completeLeased.run(p);
    },
    *completeDependedOn(p) {
      return sql.completeDependedOn.get(p);
    },
    ...(keptCompletes === undefined
      ? {}
      : {
          *completeDependedOnMany(keys, nowMs) {
            return keptCompletes.all(keys, nowMs);
          },
        }),
    *reportProgress(p) {
      return sql.reportProgress.get(p);
    },
    *extend(p) {
      sql.extendLeased.run(p);
    },
    *retry(p) {
      sql.retryJob.run(p);
    },
    *fail(p) {
      sql.failJob.run(p);
    },
    *undoLeases(keys) {
      return eachRow(sql.undoLease, keys);
    },
    *giveBackLeases(keys) {
      return eachRow(sql.giveBackLease, keys);
    },
    *finishCancelled(p) {
      sql.finishCancelled.run(p);
    },
    *expired(p) {
      return sql.expiredLeases.all(p);
    },
    *nextDeadlineMs() {
      return sql.nextLeaseDeadline.get() ?? null;
    },
    *holders() {
      return sql.leasesByWorker.all();
    },
  };
}
