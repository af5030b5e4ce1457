/**
 * The engine's vocabulary for operators (the admin UI and API): browsing jobs,
 * one-job actions and the audit log. Times are milliseconds since the epoch.
 */
import type { DeadReason, JobState } from './types.ts';

/** A job in a list: no payload, only its size; `lastError` cut to 200 characters. */
export interface JobSummary {
  id: string;
  seq: number;
  queue: string;
  type: string;
  state: JobState;
  priority: number;
  contentType: string;
  payloadBytes: number;
  attempt: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  enqueuedAtMs: number;
  runAtMs: number;
  leaseDeadlineMs: number | null;
  /** When its latest attempt started (a leased job: how long it has run so far); null: never leased. */
  leasedAtMs: number | null;
  workerId: string | null;
  lastError: string | null;
  deadReason: DeadReason | null;
  failedAtMs: number | null;
  completedAtMs: number | null;
  expiresAtMs: number | null;
  cancelledAtMs: number | null;
  cancelledBy: string | null;
  /** The job's group; null when it has none. */
  group: string | null;
}

export type ListOrder = 'oldest_first' | 'newest_first';

export interface JobListQuery {
  queue: string;
  state: JobState;
  /** Only jobs of this type. */
  type?: string;
  /** Enqueue order; default oldest first. */
  order?: ListOrder;
  /** From a previous page's `nextCursor` (with the same queue, state, type and order). */
  cursor?: string;
  /** Default 50, capped at limits.maxPageSize. */
  pageSize?: number;
}

/**
 * An audit entry to write in the same transaction as the change it describes.
 * The engine adds what the change did (counts, previous state, job id) to `details`.
 */
export interface AuditInput {
  /** Who: a user name, or `anonymous` when login is off. */
  actor: string;
  /** What, as `noun.verb`: `queue.pause`, `job.requeue`, `session.login`. */
  action: string;
  /** On what, as `kind:name`: `queue:emails`, `job:0190…`, `user:alice`. */
  target: string;
  /** Parameters of the action; never secrets or payloads. */
  details?: Readonly<Record<string, unknown>>;
}

export interface AuditEntry {
  id: number;
  atMs: number;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
}

export interface AuditQuery {
  actor?: string;
  action?: string;
  target?: string;
  /** From a previous page's `nextCursor`; entries come newest first. */
  cursor?: string;
  /** Default 50, capped at limits.maxPageSize. */
  pageSize?: number;
}

/** A state, or `retrying`: scheduled jobs waiting for another attempt. */
export type BrowseState = JobState | 'retrying';

export interface JobBrowseQuery {
  /** One queue; absent: every queue. */
  queue?: string;
  /** One state; absent: every state. */
  state?: BrowseState;
  /** Only types starting with this. */
  typePrefix?: string;
  /** Only jobs whose last error contains this (any case). */
  errorText?: string;
  /** Only jobs with this metadata value. */
  metadata?: { key: string; value: string };
  /** Only jobs of this group (a residual filter, like the error text). */
  group?: string;
  /** Only jobs enqueued before this time, in ms since the epoch ("older than"; a residual filter). */
  enqueuedBeforeMs?: number;
  /** Only dead letters of this reason (a residual filter; the list is then of dead jobs). */
  deadReason?: DeadReason;
  /** Only jobs this schedule enqueued, by their idempotency keys (a residual filter). */
  schedule?: string;
  /** Enqueue order, or due order for scheduled and retrying jobs; default oldest (soonest) first. */
  order?: ListOrder;
  cursor?: string;
  pageSize?: number;
}

export interface JobBrowsePage {
  items: JobSummary[];
  nextCursor: string | null;
  prevCursor: string | null;
  orderedBy: 'enqueue' | 'due';
  /** How many jobs the list has in all, when the counters know it (no filter); else null. */
  total: number | null;
  /** Index entries examined for a filter the indexes cannot answer; null without one. */
  scanned: number | null;
  /** The search budget ran out before the page filled: `nextCursor` searches on. */
  scanLimited: boolean;
}

export type SearchMatch = 'id' | 'id_prefix' | 'id_fragment' | 'idempotency_key';

export interface JobSearchResult {
  items: (JobSummary & { matchedBy: SearchMatch })[];
  /** Idempotency keys still remembered whose job is no longer stored (acked, cancelled or swept). */
  keysWithoutJob: { queue: string; key: string; jobId: string }[];
  /** For a piece of an id: how many of the newest ids were searched; null otherwise. */
  idsSearched: number | null;
  /** Jobs stored now. */
  storedJobs: number;
}

export type WorkerTransport = 'work_stream' | 'reserve';

export interface WorkerInfo {
  /** The worker_id the client gave, or `(none)`. */
  workerId: string;
  /** The peer address, as the transport reports it (127.0.0.1:53122). */
  address: string;
  transport: WorkerTransport;
  /** Streams (or Reserve callers) of this worker id from this address: an SDK Worker opens two. */
  connections: number;
  queues: string[];
  /** When this stream (or, for unary callers, the first call) began. */
  connectedAtMs: number;
  /** Its last reserve, settlement or credit. */
  lastSeenAtMs: number;
  /** Jobs leased to this worker id now, and since when the oldest of them. */
  jobsHeld: number;
  oldestLeaseAtMs: number | null;
  /**
   * Attempts of this worker id that completed and failed over the last `recentWindowMs`
   * (15 minutes, in one-minute steps; counted in memory since the server started).
   */
  completedRecent: number;
  failedRecent: number;
  recentWindowMs: number;
}

/** A group of a queue's dead letters by last error (jobs/error-groups.ts). */
export interface ErrorGroup {
  /** The last error's class ('' when none was given). */
  errorClass: string;
  /** The first line of its message, at most 200 characters. */
  firstLine: string;
  /** Dead letters of the group among those read. */
  jobs: number;
  firstFailedAtMs: number;
  lastFailedAtMs: number;
}

export interface TopErrors {
  queue: string;
  /** The groups, the most jobs first (at most the query's limit). */
  groups: ErrorGroup[];
  /** Groups among the dead letters read (more than `groups.length` when the limit cut them). */
  groupCount: number;
  /** Dead letters read: the newest ones, at most 50,000 (jobs/error-groups.ts). */
  scanned: number;
  /** The queue's dead letters in all (its counter). */
  deadTotal: number;
  /** True when every dead letter was read. */
  complete: boolean;
}
