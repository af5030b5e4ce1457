/**
 * Every SQL statement of the server, prepared once when the store opens.
 * Each lists its parameters; time is always a parameter (`now_ms`), never
 * SQLite's 'now'. The queue semantics that decide *which* statement to run
 * live in src/engine.
 */
import type Database from 'better-sqlite3';
import type { Db } from './open.ts';

/** A row of `jobs` as stored (column names as in schema/0001_initial.sql). */
export interface JobRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  state: string;
  priority: number;
  payload: Buffer;
  content_type: string;
  metadata_json: string | null;
  traceparent: string | null;
  tracestate: string | null;
  idempotency_key: string | null;
  attempt: number;
  max_attempts: number;
  attempt_base: number;
  enqueued_at_ms: number;
  run_at_ms: number;
  leased_at_ms: number | null;
  lease_deadline_ms: number | null;
  worker_id: string | null;
  last_error: string | null;
  errors_json: string | null;
  dead_reason: string | null;
  failed_at_ms: number | null;
  completed_at_ms: number | null;
  expires_at_ms: number | null;
  cancelled_at_ms: number | null;
  cancelled_by: string | null;
  result: Buffer | null;
  result_content_type: string | null;
  progress_percent: number | null;
  progress_json: string | null;
  progress_at_ms: number | null;
  /** The job's group (docs/flow-control.md); NULL when it has none. */
  group_key: string | null;
}

/** What a lease returns: the job as the worker needs it. */
export type LeasedRow = Pick<
  JobRow,
  | 'seq'
  | 'id'
  | 'queue'
  | 'type'
  | 'payload'
  | 'content_type'
  | 'priority'
  | 'attempt'
  | 'max_attempts'
  | 'attempt_base'
  | 'lease_deadline_ms'
  | 'enqueued_at_ms'
  | 'run_at_ms'
  | 'metadata_json'
  | 'traceparent'
  | 'tracestate'
  | 'idempotency_key'
  | 'last_error'
  | 'expires_at_ms'
  | 'group_key'
>;

/**
 * The columns a settlement or a failure (nack, expiry) needs to decide what
 * happens next; `cancelled_at_ms` is set when a cancel was asked for.
 */
export type AttemptRow = Pick<
  JobRow,
  | 'seq'
  | 'id'
  | 'queue'
  | 'type'
  | 'state'
  | 'attempt'
  | 'max_attempts'
  | 'attempt_base'
  | 'errors_json'
  | 'cancelled_at_ms'
  | 'cancelled_by'
>;

export interface InsertJobParams {
  id: string;
  queue: string;
  type: string;
  state: 'scheduled' | 'ready';
  priority: number;
  payload: Uint8Array;
  content_type: string;
  metadata_json: string | null;
  traceparent: string | null;
  tracestate: string | null;
  idempotency_key: string | null;
  max_attempts: number;
  /** The job's own lease length; null: what the reserve asks for. */
  lease_ms: number | null;
  enqueued_at_ms: number;
  run_at_ms: number;
  expires_at_ms: number | null;
  group_key: string | null;
}

/** A deleted job, as far as releasing its idempotency key needs it. */
export interface DeletedRow {
  id: string;
  idempotency_key: string | null;
}

/** The columns of a LeasedRow, for every statement that leases (here and in flow-statements.ts). */
export const leasedColumns =
  'seq, id, queue, type, payload, content_type, priority, attempt, max_attempts, attempt_base, lease_deadline_ms, enqueued_at_ms, run_at_ms, metadata_json, traceparent, tracestate, idempotency_key, last_error, expires_at_ms, group_key';
const attemptColumns =
  'seq, id, queue, type, state, attempt, max_attempts, attempt_base, errors_json, cancelled_at_ms, cancelled_by';

const leasedColumnNames = leasedColumns.split(', ') as (keyof LeasedRow)[];

/**
 * Builds a LeasedRow from a row read as an array: one object literal with every
 * column in `leasedColumns` order, made from that list once, so every row has
 * the same shape from its creation (assigning the properties one by one by
 * computed name measured ~2 % of the server's CPU per drained job).
 */
const leasedRowFromValues = new Function(
  'values',
  `return { ${leasedColumnNames.map((name, i) => `${name}: values[${i}]`).join(', ')} };`,
) as (values: unknown[]) => LeasedRow;

/**
 * A statement that leases, reading its rows as arrays and building each LeasedRow here:
 * the driver's own row objects (one native property definition per column) cost about a
 * quarter of the lease statement's CPU (docs/performance.md). `all` answers as the
 * statement's own would. For every statement that leases (here and in flow-statements.ts).
 */
export function leaseStatement<P>(statement: Database.Statement<[P], unknown>): {
  all(params: P): LeasedRow[];
  readonly source: string;
} {
  const raw = statement.raw(true);
  return {
    source: statement.source,
    all: (params) => (raw.all(params) as unknown[][]).map(leasedRowFromValues),
  };
}

/**
 * What a lease sets, for every statement that leases (here and in flow-statements.ts).
 * A job with its own lease_ms gets at least that long, up to @max_lease_deadline_ms.
 */
export const leaseSet = `SET state = 'leased', attempt = attempt + 1, leased_at_ms = @now_ms,
              lease_deadline_ms = CASE WHEN lease_ms IS NULL THEN @lease_deadline_ms
                                  ELSE max(@lease_deadline_ms, min(@now_ms + lease_ms, @max_lease_deadline_ms)) END,
              worker_id = @worker_id`;

/**
 * The rows an ack deletes without reading them first: leased (at the ack's attempt, which
 * each statement adds) and not asked to stop (a cancel request makes the ack answer
 * `job_cancelled` instead, after reading the row). Shared by deleteLeased and the AckBatch's multi-row delete
 * (batch-statements.ts): a condition added here holds for both.
 */
export const ackableLeased = "state = 'leased' AND cancelled_at_ms IS NULL";

export function prepareStatements(db: Db) {
  return {
    // ---- queues
    /** @param name @param created_at_ms @param settings_json */
    insertQueue: db.prepare<[{ name: string; created_at_ms: number; settings_json: string }]>(
      'INSERT OR IGNORE INTO queues (name, created_at_ms, settings_json) VALUES (@name, @created_at_ms, @settings_json)',
    ),
    updateQueueSettings: db.prepare<[{ name: string; settings_json: string }]>(
      'UPDATE queues SET settings_json = @settings_json WHERE name = @name',
    ),
    setQueuePaused: db.prepare<[{ name: string; paused: 0 | 1 }]>(
      'UPDATE queues SET paused = @paused WHERE name = @name',
    ),
    allQueues: db.prepare<[], { name: string; paused: 0 | 1 }>(
      'SELECT name, paused FROM queues ORDER BY name',
    ),
    allCounts: db.prepare<[], { queue: string; state: string; jobs: number }>(
      'SELECT queue, state, jobs FROM queue_counts',
    ),
    queueCounts: db.prepare<[string], { state: string; jobs: number }>(
      'SELECT state, jobs FROM queue_counts WHERE queue = ?',
    ),
    /** Unfinished jobs of a queue (scheduled + ready + leased), for max_depth. */
    queueDepth: db
      .prepare<[string], number>(
        "SELECT coalesce(sum(jobs), 0) FROM queue_counts WHERE queue = ? AND state IN ('scheduled', 'ready', 'leased')",
      )
      .pluck(),
    /** Earliest due time among the ready jobs without a group of one priority: one index probe. */
    oldestReadyAtPriority: db
      .prepare<[string, number], number | null>(
        "SELECT min(run_at_ms) FROM jobs WHERE queue = ? AND state = 'ready' AND group_key IS NULL AND priority = ?",
      )
      .pluck(),

    /** Moves a queue's count of one state by @delta (the engine's counterpart of every job change). */
    adjustCount: db.prepare<[{ queue: string; state: string; delta: number }]>(
      'UPDATE queue_counts SET jobs = jobs + @delta WHERE queue = @queue AND state = @state',
    ),

    // ---- enqueue
    insertJob: db.prepare<[InsertJobParams]>(
      `INSERT INTO jobs (id, queue, type, state, priority, payload, content_type, metadata_json, traceparent, tracestate,
                         idempotency_key, max_attempts, lease_ms, enqueued_at_ms, run_at_ms, expires_at_ms, group_key)
       VALUES (@id, @queue, @type, @state, @priority, @payload, @content_type, @metadata_json, @traceparent, @tracestate,
               @idempotency_key, @max_attempts, @lease_ms, @enqueued_at_ms, @run_at_ms, @expires_at_ms, @group_key)`,
    ),
    findIdempotencyKey: db.prepare<[string, string], { job_id: string; expires_at_ms: number }>(
      'SELECT job_id, expires_at_ms FROM idempotency_keys WHERE queue = ? AND key = ?',
    ),
    putIdempotencyKey: db.prepare<[{ queue: string; key: string; job_id: string; expires_at_ms: number }]>(
      `INSERT INTO idempotency_keys (queue, key, job_id, expires_at_ms) VALUES (@queue, @key, @job_id, @expires_at_ms)
       ON CONFLICT (queue, key) DO UPDATE SET job_id = excluded.job_id, expires_at_ms = excluded.expires_at_ms`,
    ),

    // ---- lease
    /**
     * Leases up to @limit ready jobs of one queue in order: one UPDATE … RETURNING.
     * Only jobs without a group: a queue that has grouped jobs leases through
     * src/engine/flow-control (its turns across groups) instead.
     * The limit is CAST, not a bare parameter: SQLite lets a bare bound LIMIT shape
     * the plan, so every execution with a new binding re-prepares the statement
     * (10-40 µs measured, several times the cost of leasing one job); an
     * expression does not. A job with its own lease_ms gets at least that long,
     * up to @max_lease_deadline_ms (now + the queue's max_lease_ms).
     */
    leaseReady: leaseStatement(
      db.prepare<
        [
          {
            queue: string;
            limit: number;
            now_ms: number;
            lease_deadline_ms: number;
            max_lease_deadline_ms: number;
            worker_id: string | null;
          },
        ],
        LeasedRow
      >(
        `UPDATE jobs ${leaseSet}
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
                      ORDER BY priority DESC, run_at_ms, seq LIMIT CAST(@limit AS INTEGER))
        RETURNING ${leasedColumns}`,
      ),
    ),

    // ---- settle
    /**
     * Ack when completed jobs are not kept: the job's queue and type, or nothing when it was not
     * leased at that attempt or a cancel was asked for (the ack then reads the row to say why).
     */
    deleteLeased: db.prepare<[string, number], { queue: string; type: string }>(
      `DELETE FROM jobs WHERE id = ? AND ${ackableLeased} AND attempt = ? RETURNING queue, type`,
    ),
    /** Ack when the queue keeps completed jobs: kept with its result (NULL when the ack carried none). */
    completeLeased: db.prepare<
      [
        {
          id: string;
          attempt: number;
          now_ms: number;
          result: Uint8Array | null;
          result_content_type: string | null;
        },
      ]
    >(
      `UPDATE jobs SET state = 'completed', completed_at_ms = @now_ms, lease_deadline_ms = NULL,
                       result = @result, result_content_type = @result_content_type
        WHERE id = @id AND state = 'leased' AND attempt = @attempt AND cancelled_at_ms IS NULL`,
    ),
    /** A progress report of the lease @attempt: NULL leaves that part as it was. */
    reportProgress: db.prepare<
      [{ id: string; attempt: number; percent: number | null; json: string | null; now_ms: number }],
      { progress_percent: number | null; progress_json: string | null }
    >(
      `UPDATE jobs SET progress_percent = coalesce(@percent, progress_percent),
                       progress_json = coalesce(@json, progress_json), progress_at_ms = @now_ms
        WHERE id = @id AND state = 'leased' AND attempt = @attempt
        RETURNING progress_percent, progress_json`,
    ),
    extendLeased: db.prepare<[{ id: string; attempt: number; lease_deadline_ms: number }]>(
      `UPDATE jobs SET lease_deadline_ms = @lease_deadline_ms
        WHERE id = @id AND state = 'leased' AND attempt = @attempt`,
    ),
    attemptById: db.prepare<[string], AttemptRow>(`SELECT ${attemptColumns} FROM jobs WHERE id = ?`),
    /** A failed attempt with attempts left: back to ready or scheduled; the next attempt reports its own progress. */
    retryJob: db.prepare<
      [
        {
          seq: number;
          state: 'ready' | 'scheduled';
          run_at_ms: number;
          last_error: string;
          errors_json: string;
        },
      ]
    >(
      `UPDATE jobs SET state = @state, run_at_ms = @run_at_ms, lease_deadline_ms = NULL,
                       last_error = @last_error, errors_json = @errors_json,
                       progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL
        WHERE seq = @seq`,
    ),
    deadLetterJob: db.prepare<
      [{ seq: number; dead_reason: string; now_ms: number; last_error: string; errors_json: string }]
    >(
      `UPDATE jobs SET state = 'dead', dead_reason = @dead_reason, failed_at_ms = @now_ms, lease_deadline_ms = NULL,
                       last_error = @last_error, errors_json = @errors_json
        WHERE seq = @seq`,
    ),

    // ---- read and cancel
    jobById: db.prepare<[string], JobRow>('SELECT * FROM jobs WHERE id = ?'),
    deleteJob: db.prepare<[number]>('DELETE FROM jobs WHERE seq = ?'),

    // ---- time-driven work
    promoteDue: db.prepare<[{ now_ms: number; limit: number }], { queue: string }>(
      `UPDATE jobs SET state = 'ready'
        WHERE seq IN (SELECT seq FROM jobs WHERE state = 'scheduled' AND run_at_ms <= @now_ms
                      ORDER BY run_at_ms LIMIT @limit)
        RETURNING queue`,
    ),
    expiredLeases: db.prepare<[{ now_ms: number; limit: number }], AttemptRow>(
      `SELECT ${attemptColumns} FROM jobs
        WHERE state = 'leased' AND lease_deadline_ms <= @now_ms ORDER BY lease_deadline_ms LIMIT @limit`,
    ),
    nextRunAt: db
      .prepare<[], number | null>("SELECT min(run_at_ms) FROM jobs WHERE state = 'scheduled'")
      .pluck(),
    nextLeaseDeadline: db
      .prepare<[], number | null>("SELECT min(lease_deadline_ms) FROM jobs WHERE state = 'leased'")
      .pluck(),
    sweepDead: db.prepare<[{ queue: string; before_ms: number; limit: number }]>(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'dead'
                                       AND failed_at_ms < @before_ms ORDER BY failed_at_ms LIMIT @limit)`,
    ),
    sweepCompleted: db.prepare<[{ queue: string; before_ms: number; limit: number }]>(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'completed'
                                       AND completed_at_ms < @before_ms ORDER BY completed_at_ms LIMIT @limit)`,
    ),
    sweepIdempotencyKeys: db.prepare<[{ now_ms: number; limit: number }]>(
      `DELETE FROM idempotency_keys WHERE (queue, key) IN
         (SELECT queue, key FROM idempotency_keys WHERE expires_at_ms <= @now_ms LIMIT @limit)`,
    ),

    // ---- dead letters
    /** One page of a queue's dead letters after the cursor (failed_at_ms, seq). */
    deadPage: db.prepare<
      [{ queue: string; after_failed_at_ms: number; after_seq: number; limit: number }],
      JobRow
    >(
      `SELECT * FROM jobs WHERE queue = @queue AND state = 'dead' AND (failed_at_ms, seq) > (@after_failed_at_ms, @after_seq)
        ORDER BY failed_at_ms, seq LIMIT @limit`,
    ),
    deadPageByReason: db.prepare<
      [{ queue: string; reason: string; after_failed_at_ms: number; after_seq: number; limit: number }],
      JobRow
    >(
      `SELECT * FROM jobs WHERE queue = @queue AND state = 'dead' AND (failed_at_ms, seq) > (@after_failed_at_ms, @after_seq)
          AND dead_reason = @reason
        ORDER BY failed_at_ms, seq LIMIT @limit`,
    ),
    requeueDeadById: db.prepare<[{ queue: string; id: string; now_ms: number }]>(
      `UPDATE jobs SET state = 'ready', attempt_base = attempt, run_at_ms = @now_ms, dead_reason = NULL, failed_at_ms = NULL,
                       leased_at_ms = NULL, worker_id = NULL, expires_at_ms = NULL
        WHERE id = @id AND queue = @queue AND state = 'dead'`,
    ),
    requeueDeadChunk: db.prepare<[{ queue: string; now_ms: number; limit: number }]>(
      `UPDATE jobs SET state = 'ready', attempt_base = attempt, run_at_ms = @now_ms, dead_reason = NULL, failed_at_ms = NULL,
                       leased_at_ms = NULL, worker_id = NULL, expires_at_ms = NULL
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'dead' ORDER BY failed_at_ms LIMIT @limit)`,
    ),
    /** Deletes one dead letter; its key comes back so it can be released. */
    deleteDeadById: db.prepare<[{ queue: string; id: string }], DeletedRow>(
      "DELETE FROM jobs WHERE id = @id AND queue = @queue AND state = 'dead' RETURNING id, idempotency_key",
    ),
    deleteDeadChunk: db.prepare<[{ queue: string; limit: number }], DeletedRow>(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'dead'
                                       ORDER BY failed_at_ms LIMIT @limit)
        RETURNING id, idempotency_key`,
    ),

    // ---- integrity (tests and `sepp doctor`)
    countsFromRows: db.prepare<[], { queue: string; state: string; jobs: number }>(
      'SELECT queue, state, count(*) AS jobs FROM jobs GROUP BY queue, state',
    ),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;
