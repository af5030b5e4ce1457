/**
 * The rows a store hands back and takes, named as the tables' columns
 * (schema/NNNN_*.sql): a row is what is stored, so its fields are the columns,
 * units in their names (`run_at_ms`). Bytes are `Uint8Array` (a driver may hand
 * out a subclass, such as Node's Buffer). The engine turns rows into its own
 * shapes (src/engine/jobs/job-rows.ts); nothing here is a driver's type.
 */

/** A row of `jobs` as stored. */
export interface JobRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  state: string;
  priority: number;
  payload: Uint8Array;
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
  result: Uint8Array | null;
  result_content_type: string | null;
  progress_percent: number | null;
  progress_json: string | null;
  progress_at_ms: number | null;
  /** The job's group (docs/flow-control.md); null when it has none. */
  group_key: string | null;
  /** The job's part in dependencies (dependencies.ts: waitsOnJobs, jobsWaitOnIt); 0 for most jobs. */
  dependency_flags: number;
  /** The job's own hard timeout per attempt, in ms; null: its queue's default_timeout_ms. */
  timeout_ms: number | null;
  /** When the current (or last) attempt must end: set by the lease; null: no timeout. */
  timeout_at_ms: number | null;
  /** The key later enqueues may replace this job's content under (issue 35); null: not debounced. */
  debounce_key: string | null;
  /** The latest run time a later enqueue may push it to; null: no cap. */
  debounce_until_ms: number | null;
  /**
   * The batch it joined (schema/0030_job_batch_id.sql), written as it joins; null outside
   * batches. Kept after the batch is swept: GetJob reads batch_members instead.
   */
  batch_id: string | null;
}

/** A ready job at the head of its priority, as priority aging compares them. */
export type ReadyHeadRow = Pick<JobRow, 'priority' | 'run_at_ms' | 'seq'>;

/** A job a debounced enqueue may still absorb: waiting (scheduled or ready) and never leased. */
export type DebounceTargetRow = Pick<
  JobRow,
  'seq' | 'id' | 'queue' | 'state' | 'run_at_ms' | 'debounce_until_ms'
>;

/** What a debounced enqueue changes in the job that absorbs it. */
export type DebounceUpdate = Pick<
  JobRow,
  'seq' | 'payload' | 'content_type' | 'metadata_json' | 'traceparent' | 'tracestate' | 'run_at_ms'
> & { state: 'scheduled' | 'ready' };

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
  | 'timeout_at_ms'
  | 'batch_id'
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
  | 'dependency_flags'
  | 'timeout_at_ms'
  | 'run_at_ms'
  | 'leased_at_ms'
  | 'worker_id'
>;

/** The columns an operator's action on one job needs. */
export type ControlRow = Pick<
  JobRow,
  | 'seq'
  | 'id'
  | 'queue'
  | 'type'
  | 'state'
  | 'priority'
  | 'attempt'
  | 'run_at_ms'
  | 'expires_at_ms'
  | 'worker_id'
  | 'idempotency_key'
  | 'group_key'
  | 'cancelled_at_ms'
  | 'cancelled_by'
  | 'completed_at_ms'
  | 'dependency_flags'
>;

/** A waiting job whose expiry has passed. */
export type ExpiredRow = Pick<
  JobRow,
  'seq' | 'id' | 'queue' | 'type' | 'attempt' | 'state' | 'idempotency_key' | 'dependency_flags'
> & { expires_at_ms: number };

/** A job to store: every column an enqueue writes, in the row's own names. */
export type NewJobRow = Pick<
  JobRow,
  | 'id'
  | 'queue'
  | 'type'
  | 'priority'
  | 'payload'
  | 'content_type'
  | 'metadata_json'
  | 'traceparent'
  | 'tracestate'
  | 'idempotency_key'
  | 'max_attempts'
  | 'enqueued_at_ms'
  | 'run_at_ms'
  | 'expires_at_ms'
  | 'group_key'
  | 'timeout_ms'
> & {
  /** `waiting`: it named dependencies (the dependency capability stores its edges next). */
  state: 'scheduled' | 'ready' | 'waiting';
  /** The job's own lease length; null: what the reserve asks for. */
  lease_ms: number | null;
  /**
   * Its `dependency_flags` (src/store/dependencies.ts), written by the INSERT; absent or 0 for
   * a job outside workflows. A job that names dependencies carries `waitsOnJobs` (its edges are
   * stored next, `Dependencies.add`); a job of a flow that a later job of the same flow waits
   * on may carry `jobsWaitOnIt`, so that its edges' `add` need not write its row again.
   */
  dependency_flags?: number;
  /** Its name in the flow that stored it (schema/0029_flow_names.sql); absent or null outside flows. */
  flow_name?: string | null;
  /**
   * The API key's name that made it (schema/0032_job_creators.sql); absent or null: made without
   * a key. Keys other than it make at most a share of its dependents (engine/dependencies/edges.ts).
   */
  created_by?: string | null;
};

/** A deleted (or released) job, as far as releasing its idempotency key needs it. */
export interface KeyedJobRow {
  id: string;
  idempotency_key: string | null;
}

/** A job a bulk change ended, as its event needs it. */
export interface EndedJobRow extends KeyedJobRow {
  type: string;
  attempt: number;
}

/** A job as a list shows it: everything but the payload, whose size is given instead. */
export type JobSummaryRow = Pick<
  JobRow,
  | 'seq'
  | 'id'
  | 'queue'
  | 'type'
  | 'state'
  | 'priority'
  | 'content_type'
  | 'attempt'
  | 'max_attempts'
  | 'attempt_base'
  | 'idempotency_key'
  | 'enqueued_at_ms'
  | 'run_at_ms'
  | 'lease_deadline_ms'
  | 'worker_id'
  | 'dead_reason'
  | 'failed_at_ms'
  | 'completed_at_ms'
  | 'expires_at_ms'
  | 'cancelled_at_ms'
  | 'cancelled_by'
  | 'group_key'
  | 'leased_at_ms'
> & {
  payload_bytes: number;
  /** The first 200 characters of the last error; the job detail has all of it. */
  last_error: string | null;
};

/** A queue's count of jobs in one state (`queue_counts`). */
export interface QueueCountRow {
  queue: string;
  state: string;
  jobs: number;
}

/** Leases held by one worker id (null: leased without one). */
export interface LeaseHolderRow {
  worker_id: string | null;
  jobs: number;
  since_ms: number;
}

/** A scheduled job's place in due order. */
export interface DueRow {
  seq: number;
  run_at_ms: number;
}

/** A rate-limit bucket as stored (src/engine/flow-control/token-bucket.ts says what it means). */
export interface BucketRow {
  tokens: number;
  carry_units: number;
  refilled_at_ms: number;
}

export interface AuditRow {
  id: number;
  at_ms: number;
  actor: string;
  action: string;
  target: string;
  details_json: string;
}

/** A row of `schedules` as stored. */
export interface ScheduleRow {
  name: string;
  source: 'config' | 'api';
  cron: string | null;
  interval_ms: number | null;
  timezone: string;
  anchor_ms: number;
  start_at_ms: number | null;
  end_at_ms: number | null;
  misfire: 'run_latest' | 'skip' | 'catch_up';
  catch_up_max: number;
  overlap: 'allow' | 'skip';
  jitter_ms: number;
  queue: string;
  type: string;
  payload: Uint8Array;
  content_type: string;
  priority: number;
  metadata_json: string | null;
  max_attempts: number | null;
  lease_ms: number | null;
  /** The hard execution timeout per attempt of the jobs it enqueues; null: the queue's default. */
  timeout_ms: number | null;
  paused: 0 | 1;
  next_tick_ms: number | null;
  last_tick_ms: number | null;
  last_run_at_ms: number | null;
  last_outcome: string | null;
  last_detail: string | null;
  last_job_id: string | null;
  ticks_enqueued: number;
  ticks_skipped: number;
  created_at_ms: number;
  updated_at_ms: number;
}

/** A schedule as a listing reads it: the payload's size instead of the payload. */
export type ScheduleListRow = Omit<ScheduleRow, 'payload'> & { payload_bytes: number };

/** The definition columns: what storing a schedule writes. */
export type ScheduleDefinitionRow = Pick<
  ScheduleRow,
  | 'name'
  | 'source'
  | 'cron'
  | 'interval_ms'
  | 'timezone'
  | 'anchor_ms'
  | 'start_at_ms'
  | 'end_at_ms'
  | 'misfire'
  | 'catch_up_max'
  | 'overlap'
  | 'jitter_ms'
  | 'queue'
  | 'type'
  | 'payload'
  | 'content_type'
  | 'priority'
  | 'metadata_json'
  | 'max_attempts'
  | 'lease_ms'
  | 'timeout_ms'
  | 'next_tick_ms'
>;

/** A queue setting overridden at run time (`queue_setting_overrides`). */
export interface OverrideRow {
  queue: string;
  key: string;
  value_json: string;
}

/** An admin UI session (`admin_sessions`): the SHA-256 of its id and CSRF token, never either. */
export interface SessionRow {
  id_sha256: string;
  user: string;
  role: string;
  csrf_sha256: string;
  /** A fingerprint of the password hash the user logged in with ('' for none). */
  password_tag: string;
  created_at_ms: number;
  expires_at_ms: number;
}

/**
 * One row of the job history (schema/0016_job_history.sql): what one server process
 * counted of a (queue, type) in one bucket; queue '' and type '' is the bucket's coverage.
 */
export interface HistoryRow {
  resolution: 'm' | 'h';
  bucket_ms: number;
  queue: string;
  type: string;
  writer: string;
  completed: number;
  failed: number;
  dead: number;
  covered_ms: number;
  wait_hist: string | null;
  run_hist: string | null;
}

/** What an ack that deleted its job tells of it: where it was, and when its attempt was due and began (the history). */
export interface AckedRow {
  queue: string;
  type: string;
  run_at_ms: number;
  leased_at_ms: number | null;
  worker_id: string | null;
}

/** One run of a schedule (schema/0017_schedule_runs.sql): a handled tick or a manual trigger. */
export interface ScheduleRunRow {
  seq: number;
  run_at_ms: number;
  tick_ms: number | null;
  outcome: string;
  detail: string | null;
  job_id: string | null;
}

/**
 * What a wait needs of a job's row (JobReads.ends): where it is, and in a final state
 * how it ended. The result, error and times are null while it has not ended.
 */
export type JobEndRow = Pick<
  JobRow,
  | 'id'
  | 'queue'
  | 'type'
  | 'state'
  | 'attempt'
  | 'result'
  | 'result_content_type'
  | 'last_error'
  | 'dead_reason'
  | 'completed_at_ms'
  | 'failed_at_ms'
  | 'cancelled_at_ms'
> & {
  /**
   * Which end of the job this is, where the store can say (PostgreSQL: the row's
   * `end_version`, which each end adds to: job-ends.ts): two reads of one end give the same, a
   * later end of the same state and attempt (a dead letter requeued and dead-lettered again)
   * another.
   */
  version?: string;
};
