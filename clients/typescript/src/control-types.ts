/**
 * Job control's shapes: which jobs a bulk call applies to, what a cancel or an
 * update did, and the audit log's entries.
 */
import type { CallOptions, DeadReason, JobState, TimeInput } from './job-types.ts';

/**
 * Which jobs a bulk call applies to — the filters of the admin UI's jobs list.
 * Give a `queue`, or `allQueues: true` for every queue; every other field
 * narrows the match.
 */
export interface JobFilter {
  /** The queue (required unless `allQueues`). */
  queue?: string;
  /** True: every queue (then no `queue`). */
  allQueues?: boolean;
  /** Only jobs of this type. */
  type?: string;
  /** Only jobs whose type starts with this (not with `type`). */
  typePrefix?: string;
  /** Only jobs in these states (cancel: scheduled, ready, leased; update: scheduled, ready; requeue: dead, completed, cancelled; delete: all but leased). */
  states?: readonly JobState[];
  /** Only jobs of this group (absent: with a group or without). */
  group?: string;
  /** Only jobs whose last error contains this text, in any case. */
  errorText?: string;
  /** Only jobs whose metadata has this key with this value. */
  metadata?: { key: string; value: string };
  /** Only jobs enqueued at or after this time. */
  enqueuedFrom?: TimeInput;
  /** Only jobs enqueued before this time ("older than"). */
  enqueuedBefore?: TimeInput;
  /** Only dead letters of this reason. */
  deadReason?: DeadReason;
  /** Only scheduled jobs waiting for a retry. */
  retriesOnly?: boolean;
  /** Only jobs whose last error is of this group, as `client.dlq.topErrors` answers it. */
  errorGroup?: ErrorGroupKey;
}

/** A group of errors: the last error's class ('' when none was sent) and the first line of its message. */
export interface ErrorGroupKey {
  errorClass: string;
  firstLine: string;
}

/** One group of a queue's dead letters ("top errors"). */
export interface ErrorGroup extends ErrorGroupKey {
  /** Dead letters of the group (among those read). */
  jobs: number;
  firstFailedAt: Date;
  lastFailedAt: Date;
}

/** A queue's dead letters grouped by last error, the most jobs first. */
export interface TopErrors {
  groups: ErrorGroup[];
  /** Groups among the dead letters read (more than `groups` when `limit` cut them). */
  groupCount: number;
  /** Dead letters read: the newest, at most 50,000. */
  scanned: number;
  /** The queue's dead letters in all. */
  deadTotal: number;
  /** True when every dead letter was read. */
  complete: boolean;
}

/** What a bulk operation does to each job it matches. */
export type BulkAction = 'cancel' | 'update' | 'requeue' | 'delete';

/**
 * One server-side bulk operation and its progress. The server runs it in
 * bounded slices (it keeps serving meanwhile), keeps it in memory (running,
 * and the last 64 finished) and audits it once.
 */
export interface BulkOperation {
  /** Its id, for `client.jobs.bulkOperation(id)` and `stopBulkOperation(id)`. */
  id: string;
  action: BulkAction;
  state: 'running' | 'done' | 'cancelled' | 'failed';
  /** The checked filter and changes, as the audit entry records them. */
  details: Record<string, unknown>;
  /** Jobs that matched when it began (`matchedAtLeast`: at least that many). */
  matched: number;
  matchedAtLeast: boolean;
  /** Jobs changed so far (for a cancel: cancelled plus cancel requests). */
  changed: number;
  /** A cancel's leased jobs whose workers were told to stop. */
  cancelRequested: number;
  /** Index entries examined so far, and transactions written. */
  examined: number;
  slices: number;
  startedAt: Date;
  /** null while running. */
  finishedAt: Date | null;
  /** Why it failed, else null. */
  error: string | null;
  actor: string;
}

/** What a bulk call did, or (with `dryRun`) would match. */
export interface BulkResult {
  /** Jobs changed (0 for a dry run, or while a background operation runs). */
  changed: number;
  /** With `dryRun`: the jobs that match now; otherwise what matched when the operation began. */
  matched: number;
  /** True: `matched` is a lower bound (the count stopped at its budget). */
  matchedAtLeast: boolean;
  /** The operation (null for a dry run). */
  operation: BulkOperation | null;
}

/** Options of the bulk calls. */
/** The option of every call that can start a bulk operation. */
export interface RequestKeyOption {
  /**
   * Names this request, so that a repeat of it starts no second operation:
   * within 24 hours, the same key from the same API key answers with the
   * operation it started, as it is now (a different request under it is
   * refused, `invalid_argument`). 1 to 128 characters of letters, digits,
   * `-`, `_`, `.` and `:`. By default the SDK sends a random key per call
   * and reuses it on its own retries; pass one to make your own repeats
   * (e.g. a script run again after a crash) safe too.
   */
  requestKey?: string;
}

export interface BulkOptions extends CallOptions, RequestKeyOption {
  /** Count only; change nothing. */
  dryRun?: boolean;
  /** Answer as soon as the operation has begun; follow it with `bulkOperation(id)`. */
  background?: boolean;
}

/** What a cancel of one job did. */
export interface CancelResult {
  /** The state the job was in. */
  previousState: JobState;
  /** `cancelled`, or `leased` while the worker holding it has not stopped yet (it has been told). */
  state: JobState;
}

/** What a bulk cancel did (or, with `dryRun`, would do). */
export interface CancelJobsResult extends BulkResult {
  /** Scheduled and ready jobs now cancelled. */
  cancelled: number;
  /** Leased jobs whose workers were told to stop (each ends cancelled). */
  cancelRequested: number;
}

/** Changes to a waiting job; at least one. `runAt`, `delayMs` and `runNow` exclude each other. */
export interface JobChanges {
  /** 0 to 9, 9 first. */
  priority?: number;
  /** Due at this time (one job only). */
  runAt?: TimeInput;
  /** Due this many ms from now (one job only). */
  delayMs?: number;
  /** Due now: a scheduled or retrying job becomes ready. */
  runNow?: boolean;
  /** The job's new group; null (or '') takes it out of its group (one job only). */
  group?: string | null;
}

/**
 * The changes of a bulk update (`updateMatching`, `updateJobs`, `startBulk('update')`): run
 * now, a priority, or both. A run time, a delay and a group change one job at a time (`update`).
 */
export type BulkChanges = Pick<JobChanges, 'priority' | 'runNow'>;

/** One change an operator made, from the audit log. */
export interface AuditEntry {
  /** Increases with every entry. */
  id: number;
  /** When. */
  at: Date;
  /** Who: `key:NAME` for an API key, an admin UI user, or `anonymous`. */
  actor: string;
  /** What, e.g. `job.cancel`, `queue.purge`. */
  action: string;
  /** On what, e.g. `job:<id>`, `queue:emails`. */
  target: string;
  /** Parameters and outcome (counts, previous state, `via`: admin, grpc or cli). */
  details: Record<string, unknown>;
}

/** Which audit entries to list. */
export interface AuditQuery extends CallOptions {
  /** Only this actor. */
  actor?: string;
  /** Only this action. */
  action?: string;
  /** Only this target. */
  target?: string;
  /** Most entries per page (default 50). */
  pageSize?: number;
  /** `nextPageToken` of the previous page. */
  pageToken?: string;
}
