/**
 * Leases and their settlements (ack, nack, extend, expiry), and the flow control that
 * admits a lease (rate limits, concurrency, groups): capabilities of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type { AckedRow, AttemptRow, BucketRow, LeasedRow, LeaseHolderRow, ReadyHeadRow } from './rows.ts';

// ---------------------------------------------------------------- leases and settlements

/** What every lease sets. A job with its own `lease_ms` gets at least that long, up to `maxLeaseDeadlineMs`. */
export interface LeaseParams {
  nowMs: number;
  leaseDeadlineMs: number;
  maxLeaseDeadlineMs: number;
  workerId: string | null;
  /**
   * The queue's default_timeout_ms, for jobs without their own timeout_ms; null: none.
   * A lease sets `timeout_at_ms` = now + the job's timeout and caps its deadline there.
   */
  timeoutMs: number | null;
}

/** A lease's fence: the job and the attempt whose lease a settlement ends. */
export interface AttemptKey {
  jobId: string;
  attempt: number;
}

/** A job whose lease was undone (Leases.undoLeases): what its lifecycle event and rate limits need. */
export interface UndoneLeaseRow {
  id: string;
  queue: string;
  type: string;
  /** Its group (whose rate-limit bucket the lease paid); null: none. */
  group_key: string | null;
}

/** An ack that completes its job (kept): the job at its attempt, and the result it carried (null: none). */
export type CompletingAck = AttemptKey & { result: Uint8Array | null; resultContentType: string | null };

export interface LeaseReads {
  /** Leased jobs past their deadline at `nowMs`, earliest deadline first. */
  expired(p: { nowMs: number; limit: number }): Op<AttemptRow[]>;
  /** The earliest lease deadline, or null. */
  nextDeadlineMs(): Op<number | null>;
  /** Leases held now, per worker id. */
  holders(): Op<LeaseHolderRow[]>;
}

export interface Leases extends LeaseReads {
  /**
   * Leases up to `limit` ready jobs of a queue without a group, in the queue's order
   * (priority, then due time, then enqueue order): in SQLite one UPDATE … RETURNING
   * over an index. The rows come in no particular order.
   */
  leaseReady(p: LeaseParams & { queue: string; limit: number }): Op<LeasedRow[]>;
  /** Up to `limit` ready jobs without a group at one priority, oldest due first (rows in no order). */
  leaseUngroupedAt(p: LeaseParams & { queue: string; priority: number; limit: number }): Op<LeasedRow[]>;
  /** Up to `limit` ready jobs of one group at one priority, oldest due first (rows in no order). */
  leaseGroupAt(
    p: LeaseParams & { queue: string; priority: number; groupKey: string; limit: number },
  ): Op<LeasedRow[]>;
  /**
   * Deletes the job if it is leased at that attempt with no cancel asked: an ack when
   * completed jobs are not kept. Its queue, type and times, or undefined when it matched nothing.
   */
  ack(key: AttemptKey): Op<AckedRow | undefined>;
  /** `ack` for many (job ids distinct): the ones it deleted, in no order. */
  ackMany(keys: readonly AttemptKey[]): Op<(AckedRow & { id: string })[]>;
  /** Leased at that attempt with no cancel asked → completed, with its result (null: none). */
  complete(
    p: AttemptKey & { nowMs: number; result: Uint8Array | null; resultContentType: string | null },
  ): Op<void>;
  /**
   * `complete` in one statement for a job others wait on (`jobsWaitOnIt`), which is kept
   * completed for them whatever its queue's retention: its queue, type, times and
   * dependency flags, or undefined when it matched nothing (not leased at that attempt, a
   * cancel asked, or nobody waits on it), and then nothing changed. Optional: without it
   * the engine reads the row and then calls `complete` (both stores have it: the read cost
   * about as much as the UPDATE on SQLite, and a round trip on PostgreSQL, W5).
   */
  completeDependedOn?(
    p: AttemptKey & { nowMs: number; result: Uint8Array | null; resultContentType: string | null },
  ): Op<(AckedRow & { dependency_flags: number }) | undefined>;
  /**
   * `completeDependedOn` for many (job ids distinct), as `ackMany` is `ack` for many: the
   * ones it completed, in no order; an ack it did not match changed nothing. Optional, with
   * `completeDependedOn` (SQLite: one statement per 50 acks of an ack batch; PostgreSQL: one
   * per ack batch, the acks as arrays).
   */
  completeDependedOnMany?(
    keys: readonly CompletingAck[],
    nowMs: number,
  ): Op<(AckedRow & { id: string; dependency_flags: number })[]>;
  /** A progress report of a lease: a null part stays as it was. The progress after it, or undefined when not leased at that attempt. */
  reportProgress(
    p: AttemptKey & { percent: number | null; json: string | null; nowMs: number },
  ): Op<{ progress_percent: number | null; progress_json: string | null } | undefined>;
  extend(p: AttemptKey & { leaseDeadlineMs: number }): Op<void>;
  /** A failed attempt with attempts left → ready or scheduled; its progress is cleared. */
  retry(p: {
    seq: number;
    state: 'ready' | 'scheduled';
    runAtMs: number;
    lastError: string;
    /** The failed attempt's error class (`jobs.last_error_class`); null: none given. */
    lastErrorClass: string | null;
    errorsJson: string;
  }): Op<void>;
  /** A failed attempt → dead. */
  fail(p: {
    seq: number;
    deadReason: string;
    nowMs: number;
    lastError: string;
    lastErrorClass: string | null;
    errorsJson: string;
  }): Op<void>;
  /**
   * Undoes leases that never reached their worker (an answer refused before it was sent): each
   * job still leased at the attempt named, with no cancel asked, is ready again where it was in
   * its queue (its due time, priority and group unchanged), on the attempt it had before the
   * lease, with the lease's fields (deadline, start, worker, hard timeout) cleared and no error
   * recorded. Giving the attempt number back is safe here only because that lease's attempt
   * never left the server: no one holds it to settle with (`giveBackLeases` is the act for a
   * lease a worker did hold). A job leased at another attempt, or no longer leased, is left alone. The job ids
   * must be distinct; returns the jobs it changed, in no order.
   */
  undoLeases(keys: readonly AttemptKey[]): Op<UndoneLeaseRow[]>;
  /**
   * Takes back leases their workers hand back unstarted (a nack's `give_back`), as
   * `undoLeases` undoes them (ready at the old place, the lease's fields cleared, no error, the
   * same fencing and the same rows returned) but with the attempt kept: the worker holds that
   * attempt, so the next lease must take a new one (attempt + 1) or a late settlement of the
   * old lease would pass for the new holder's. Instead the job's attempt budget grows by one
   * (`attempt_base + 1`, its budget being `attempt_base + max_attempts`): no attempt is counted
   * against it, and its backoff, which counts from `attempt_base`, is as before the lease.
   */
  giveBackLeases(keys: readonly AttemptKey[]): Op<UndoneLeaseRow[]>;
  /** A leased job with a cancel request whose attempt ended → cancelled (null keeps the error history). */
  finishCancelled(p: { seq: number; lastError: string | null; errorsJson: string | null }): Op<void>;
}

// ---------------------------------------------------------------- flow control

export interface FlowReads {
  /** The highest priority ≤ `maxPriority` with a ready job without a group (`grouped`: with one). */
  topPriority(p: { queue: string; maxPriority: number; grouped: boolean }): Op<number | undefined>;
  /** Whether a job without a group is ready at `priority`. */
  hasUngroupedAt(p: { queue: string; priority: number }): Op<boolean>;
  /**
   * Priority aging (flow-control/ungrouped-lease.ts): the oldest ready jobs without a group of each of
   * the 10 priorities, up to `limit` per priority, each priority's in lease order (due time,
   * enqueue order): 10 bounded index ranges, never a scan of the queue.
   */
  readyHeads(p: { queue: string; limit: number }): Op<ReadyHeadRow[]>;
  /**
   * The first group after `after` (in name order; '' = from the start) with a ready job
   * at `priority`, and that group's earliest due time there: one index seek.
   */
  nextGroupAt(p: {
    queue: string;
    priority: number;
    after: string;
  }): Op<{ group_key: string; run_at_ms: number } | undefined>;
  /** Leased jobs of one group. */
  leasedInGroup(p: { queue: string; groupKey: string }): Op<number>;
  /** A rate-limit bucket ('' is the queue's own); undefined: never used, or full again and swept. */
  bucket(p: { queue: string; groupKey: string }): Op<BucketRow | undefined>;
}

export interface Flow extends FlowReads {
  /**
   * Takes, for this transaction, what serialises the leases of these limited queues across
   * servers, all at once and in a fixed order, before the reserve's unit leases from any of
   * them. Only a store that several servers share has it (PostgreSQL: limits.ts); it may
   * throw the store's own "locks busy" error before the unit wrote anything, to run the unit
   * again first in its next batch.
   */
  lockLimits?(queues: readonly string[]): Op<void>;
  putBucket(p: BucketRow & { queue: string; groupKey: string }): Op<void>;
  /** Forgets a queue's buckets untouched since `beforeMs` (full again); returns how many. */
  sweepBuckets(p: { queue: string; beforeMs: number; limit: number }): Op<number>;
}
