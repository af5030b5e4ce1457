/**
 * The engine's vocabulary for job control: cancelling jobs (one, or every
 * job a filter matches), changing waiting jobs, and the notice a worker gets
 * when a job it runs is cancelled. Times are milliseconds since the epoch.
 */
import type { ErrorGroupKey } from '../store/job-control.ts';
import type { DeadReason, JobState } from './types.ts';

/** States a cancel applies to: jobs not finished yet. */
export const cancellableStates = ['scheduled', 'ready', 'leased'] as const;
export type CancellableState = (typeof cancellableStates)[number];

/** States an update applies to: jobs waiting to run. */
export const updatableStates = ['scheduled', 'ready'] as const;

/** States a requeue applies to: jobs that have finished. */
export const requeueableStates = ['dead', 'completed', 'cancelled'] as const;

/** States a delete applies to: every job but a running one. */
export const deletableStates = ['scheduled', 'ready', 'dead', 'completed', 'cancelled'] as const;

/** What a bulk operation does to every job its filter matches. */
export type BulkAction = 'cancel' | 'update' | 'requeue' | 'delete';

/** The states each bulk action applies to; a filter without states means all of them. */
export const bulkActionStates: Readonly<Record<BulkAction, readonly JobState[]>> = {
  cancel: cancellableStates,
  update: updatableStates,
  requeue: requeueableStates,
  delete: deletableStates,
};

/**
 * Which jobs a bulk action applies to — the filters of the jobs list: one
 * queue or every queue, states, a type (exact, or a prefix), a group, text in
 * the last error, a metadata value, the age (enqueue time), a dead letter's
 * reason, retries only. Every field is optional but the action's states bound it.
 */
export interface JobFilter<S extends JobState = JobState> {
  /** One queue; absent or empty: every queue. */
  queue?: string;
  /** Only jobs of this type. */
  type?: string;
  /** Only jobs whose type starts with this. */
  typePrefix?: string;
  /** Only jobs in these states; empty or absent means every state the action applies to. */
  states?: readonly S[];
  /** Only jobs of this group; absent means every job, with a group or without. */
  group?: string;
  /** Only jobs whose last error contains this text (any case). */
  errorText?: string;
  /** Only jobs whose metadata has this key with this value. */
  metadata?: { key: string; value: string };
  /** Only jobs enqueued at or after this time (ms since the epoch). */
  enqueuedFromMs?: number;
  /** Only jobs enqueued before this time (ms since the epoch): "older than". */
  enqueuedBeforeMs?: number;
  /** Only dead letters of this reason (the filter's states are then `dead`). */
  deadReason?: DeadReason;
  /** Only scheduled jobs waiting for a retry (delivered before): the list's `retrying`. */
  retriesOnly?: boolean;
  /** Only jobs whose last error is of this group (top errors: class, first line). */
  errorGroup?: ErrorGroupKey;
  /** Only jobs this schedule enqueued (by their idempotency keys, `schedule:NAME:…`). */
  schedule?: string;
}

/** How many jobs a filter matches now, as a bounded count says it. */
export interface MatchCount {
  /** Jobs that match (`exact` false: at least this many). */
  matched: number;
  /** False when the count stopped at its budget before the end. */
  exact: boolean;
  /** Index entries the count examined (0 when the counters answered). */
  examined: number;
}

export type BulkOperationState = 'running' | 'done' | 'cancelled' | 'failed';

/** A bulk operation as its progress reports it (src/engine/control/bulk-operations.ts). */
export interface BulkOperationInfo {
  /** Its id, for polling (`GetBulkOperation`) and cancelling (`CancelBulkOperation`). */
  id: string;
  action: BulkAction;
  /** The checked filter and changes, as the audit entry records them. */
  details: Readonly<Record<string, unknown>>;
  state: BulkOperationState;
  /** What matched when it began (a bounded count: see `matchedExact`). */
  matched: number;
  matchedExact: boolean;
  /** Jobs changed so far (for a cancel: cancelled plus cancel requests). */
  changed: number;
  /** A cancel's leased jobs whose workers were told to stop (part of `changed`). */
  cancelRequested: number;
  /** Index entries examined so far, and the transactions it took. */
  examined: number;
  slices: number;
  startedAtMs: number;
  finishedAtMs: number | null;
  /** Why it failed (state `failed`), else null. */
  error: string | null;
  /** Who started it (the audit actor), or null. */
  actor: string | null;
}

/** What a cancel did to one job. */
export interface CancelResult {
  /** The state the job was in when the cancel was asked for. */
  previousState: JobState;
  /**
   * `cancelled`, or `leased` when a worker holds the job: the worker has been
   * told, and the job becomes `cancelled` when it stops or its lease ends.
   */
  state: JobState;
}

/** What a bulk cancel did. */
export interface BulkCancelResult {
  /** Jobs that are `cancelled` now. */
  cancelled: number;
  /** Leased jobs whose workers were told to stop (they become `cancelled` when they do). */
  cancelRequested: number;
}

/** Changes to a waiting job. At least one is given; `runAtMs`, `delayMs` and `runNow` exclude each other. */
export interface JobChanges {
  /** 0–9, 9 first. */
  priority?: number;
  /** Due at this time (past times mean now). One job only. */
  runAtMs?: number;
  /** Due this long from now. One job only. */
  delayMs?: number;
  /** Due now: a scheduled (or retrying) job becomes ready. */
  runNow?: boolean;
  /** The job's new group; null takes it out of its group. One job only. */
  group?: string | null;
}

/** Told to the worker holding a job when the server ended its attempt by its hard timeout, after the commit. */
export interface TimeoutNotice {
  jobId: string;
  queue: string;
  /** The attempt that timed out: a notice names exactly one lease. */
  attempt: number;
  /** The `worker_id` the lease was taken with, if any. */
  workerId: string | null;
  timeoutAtMs: number;
}

/** Told to the worker holding a job when a cancel is asked for, after the request is durable. */
export interface CancelNotice {
  jobId: string;
  queue: string;
  /** The lease's attempt: a notice names exactly one lease. */
  attempt: number;
  /** The `worker_id` the lease was taken with, if any. */
  workerId: string | null;
  cancelledBy: string | null;
  cancelledAtMs: number;
}
