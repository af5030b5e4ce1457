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
  workerId: string | null;
  lastError: string | null;
  deadReason: DeadReason | null;
  failedAtMs: number | null;
  completedAtMs: number | null;
  expiresAtMs: number | null;
  cancelledAtMs: number | null;
  cancelledBy: string | null;
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
