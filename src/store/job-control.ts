/**
 * What operators do to jobs: one job (cancel, requeue, change), many by a filter (bulk),
 * and the dead letters: capabilities of the Store (store.ts).
 */
import type { KeyShapes } from './browse.ts';
import type { Op } from './op.ts';
import type { EndedJobRow, ExpiredRow, JobRow, JobSummaryRow, KeyedJobRow } from './rows.ts';

// ---------------------------------------------------------------- job control

export interface ControlReads {
  /** Waiting jobs whose expiry passed at `nowMs`, earliest first. */
  expiredWaiting(p: { nowMs: number; limit: number }): Op<ExpiredRow[]>;
  /** The earliest expiry among waiting jobs, or null. */
  nextExpiryMs(): Op<number | null>;
}

export interface Control extends ControlReads {
  /** A scheduled or ready job → cancelled. */
  cancelWaiting(p: { seq: number; nowMs: number; by: string | null }): Op<void>;
  /** Records a cancel request on a leased job that has none; it stays leased. */
  requestCancel(p: { seq: number; nowMs: number; by: string | null }): Op<void>;
  /** A scheduled or ready job's new state, priority, run time and group. */
  updateWaiting(p: {
    seq: number;
    state: 'scheduled' | 'ready';
    priority: number;
    runAtMs: number;
    groupKey: string | null;
  }): Op<void>;
  /** An expired job → dead (reason expired); `undoLease` gives back the attempt a lease just took. */
  expire(p: { seq: number; nowMs: number; error: string; undoLease: boolean }): Op<void>;
  /** A dead, completed or cancelled job → ready now with a fresh attempt budget; returns whether it changed. */
  requeue(p: { seq: number; nowMs: number }): Op<boolean>;
  /** A ready or scheduled job → dead (reason dead_lettered); returns whether it changed. */
  deadLetter(p: { seq: number; nowMs: number }): Op<boolean>;
}

// ---------------------------------------------------------------- bulk

/**
 * What a bulk operation's jobs must be besides their queue, state and type
 * (which the index ranges it reads answer): the filters no index answers,
 * checked on each candidate row (null: any).
 */
export interface BulkResidual {
  /** Case-insensitive text the last error must contain. */
  errorText: string | null;
  /** A metadata key and the value it must have. */
  metadata: { key: string; value: string } | null;
  groupKey: string | null;
  /** Enqueued at or after this time. */
  enqueuedFromMs: number | null;
  /** Enqueued before this time. */
  enqueuedBeforeMs: number | null;
  deadReason: string | null;
  /** Only scheduled jobs that were delivered before (retries). */
  retriesOnly: boolean;
  /** Only jobs whose last error is of this group (DeadLetterReads.errorGroups). */
  errorGroup: ErrorGroupKey | null;
  /** Only jobs whose idempotency key has one of these shapes (a schedule's jobs). */
  keyShapes: KeyShapes | null;
}

/**
 * A group of errors: the last error's class ('' when none was given) and the first line
 * of its message (up to the first newline, at most 200 characters).
 */
export interface ErrorGroupKey {
  errorClass: string;
  firstLine: string;
}

/**
 * The jobs a bulk operation changes in one slice: candidates read from an
 * index range (`seqs`), each changed only if it is still in `state` and
 * passes the residual filter, as this transaction sees it.
 */
export interface BulkSlice extends BulkResidual {
  seqs: readonly number[];
  state: string;
}

export interface BulkReads {
  /** The highest seq stored, 0 with no job: a bulk operation leaves jobs enqueued after it began alone. */
  lastSeq(): Op<number>;
  /** Jobs of one queue, state and type: one index range, counted. */
  countOfType(p: { queue: string; state: string; type: string }): Op<number>;
  /** How many of the slice's jobs match (a leased job only without a cancel request). */
  countMatching(p: BulkSlice): Op<number>;
}

/**
 * A job a bulk cancel or delete ended, with its part in workflows (`dependency_flags`,
 * dependencies.ts) when the store keeps dependencies: the engine passes its end on.
 */
export interface BulkEndedRow extends EndedJobRow {
  seq?: number;
  dependency_flags?: number;
}

/** The request key a bulk operation started under (schema/0024_bulk_operation_keys.sql). */
export interface BulkKeyRow {
  operation_id: string;
  request_json: string;
  started_at_ms: number;
}

export interface Bulk extends BulkReads {
  /**
   * Holds `requestKey` of `actor` for `operationId` unless a row started at or after
   * `validFromMs` holds it; returns the row that holds it now (this operation's if the key
   * was free or its row older). Deletes a few other rows older than `validFromMs`.
   */
  claimKey(p: {
    actor: string;
    requestKey: string;
    operationId: string;
    requestJson: string;
    nowMs: number;
    validFromMs: number;
  }): Op<BulkKeyRow>;
  /** Scheduled or ready matching jobs → cancelled (jobs in workflows too: the engine passes the end on). */
  cancelWaiting(p: BulkSlice & { nowMs: number; by: string | null }): Op<BulkEndedRow[]>;
  /** Cancel requests on matching leased jobs that have none yet. */
  requestCancel(
    p: BulkSlice & { nowMs: number; by: string | null },
  ): Op<{ id: string; attempt: number; worker_id: string | null; idempotency_key: string | null }[]>;
  /** Matching scheduled jobs → ready now (with `priority`, unless null); returns how many. */
  runNow(p: BulkSlice & { nowMs: number; priority: number | null }): Op<number>;
  /** Matching jobs whose priority differs → `priority`; returns how many. */
  setPriority(p: BulkSlice & { priority: number }): Op<number>;
  /** Matching dead, completed or cancelled jobs → ready now with a fresh attempt budget; returns how many. */
  requeue(p: BulkSlice & { nowMs: number }): Op<number>;
  /** Deletes matching jobs (not leased ones); returns their keys (to release), types and attempts (for events). */
  delete(p: BulkSlice): Op<BulkEndedRow[]>;
}

// ---------------------------------------------------------------- dead letters

/** A dead letter deleted by id. */
export interface DeletedDeadRow extends KeyedJobRow {
  seq: number;
  dependency_flags: number;
}

/** A position in a queue's dead letters, by (failed_at_ms, seq). */
export interface DeadPosition {
  failedAtMs: number;
  seq: number;
}

export interface DeadLetterReads {
  /** A page of whole rows after `after`, oldest failure first (`reason` null: any). */
  page(p: { queue: string; reason: string | null; after: DeadPosition; limit: number }): Op<JobRow[]>;
  /** A page of summaries from `from` (exclusive), oldest first or, `descending`, newest first. */
  summaries(p: {
    queue: string;
    reason: string | null;
    from: DeadPosition;
    descending: boolean;
    limit: number;
  }): Op<JobSummaryRow[]>;
  /**
   * The newest `scan` dead letters of a queue (index jobs_dead, newest failure first)
   * grouped by their last error (ErrorGroupKey), the most jobs first, at most `limit`
   * groups; with the number of groups and of jobs read.
   */
  errorGroups(p: { queue: string; scan: number; limit: number }): Op<ErrorGroupsRow>;
  /** How many dead letters of a queue have this reason (one range of jobs_dead_reason). */
  countByReason(p: { queue: string; reason: string }): Op<number>;
}

export interface ErrorGroupsRow {
  groups: {
    error_class: string;
    first_line: string;
    jobs: number;
    first_failed_at_ms: number;
    last_failed_at_ms: number;
  }[];
  /** Groups among the jobs read (more than `groups` when `limit` cut them). */
  group_count: number;
  /** Dead letters read (at most `scan`). */
  scanned: number;
}

export interface DeadLetters extends DeadLetterReads {
  /** One dead letter → ready now, fresh attempt budget; returns whether it changed. */
  requeue(p: { queue: string; id: string; nowMs: number }): Op<boolean>;
  /** Deletes one dead letter; its key comes back to be released, its seq and flags for its workflow's rows. */
  delete(p: { queue: string; id: string }): Op<DeletedDeadRow | undefined>;
}
