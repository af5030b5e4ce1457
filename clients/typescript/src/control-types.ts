/**
 * Job control's shapes: which jobs a bulk call applies to, what a cancel or an
 * update did, and the audit log's entries.
 */
import type { CallOptions, JobState, TimeInput } from './job-types.ts';

/**
 * Which jobs of one queue a bulk call applies to: every job in `states`
 * (default: every state the call applies to), optionally only of one `type`.
 */
export interface JobFilter {
  /** The queue. */
  queue: string;
  /** Only jobs of this type. */
  type?: string;
  /** Only jobs in these states (cancel: scheduled, ready, leased; update: scheduled, ready). */
  states?: readonly JobState[];
  /** Only jobs of this group (absent: with a group or without). */
  group?: string;
}

/** What a cancel of one job did. */
export interface CancelResult {
  /** The state the job was in. */
  previousState: JobState;
  /** `cancelled`, or `leased` while the worker holding it has not stopped yet (it has been told). */
  state: JobState;
}

/** What a bulk cancel did (or, with `dryRun`, would do). */
export interface CancelJobsResult {
  /** Scheduled and ready jobs now cancelled. */
  cancelled: number;
  /** Leased jobs whose workers were told to stop (each ends cancelled). */
  cancelRequested: number;
  /** The jobs the filter matched: those it changed (`cancelled + cancelRequested`), or with `dryRun` those it would change now. */
  matched: number;
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
