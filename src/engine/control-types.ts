/**
 * The engine's vocabulary for job control: cancelling jobs (one, or every
 * job a filter matches), changing waiting jobs, and the notice a worker gets
 * when a job it runs is cancelled. Times are milliseconds since the epoch.
 */
import type { JobState } from './types.ts';

/** States a cancel applies to: jobs not finished yet. */
export const cancellableStates = ['scheduled', 'ready', 'leased'] as const;
export type CancellableState = (typeof cancellableStates)[number];

/** States an update applies to: jobs waiting to run. */
export const updatableStates = ['scheduled', 'ready'] as const;

/**
 * Which jobs a bulk action applies to: every job of `queue` in one of
 * `states`, optionally only of one `type` and of one `group`.
 */
export interface JobFilter<S extends JobState = JobState> {
  queue: string;
  /** Only jobs of this type. */
  type?: string;
  /** Only jobs in these states; empty or absent means every state the action applies to. */
  states?: readonly S[];
  /** Only jobs of this group; absent means every job, with a group or without. */
  group?: string;
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
