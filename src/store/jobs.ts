/**
 * Jobs as they are stored and looked up, and the idempotency keys that point at them:
 * capabilities of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type {
  AttemptRow,
  ControlRow,
  DebounceTargetRow,
  DebounceUpdate,
  JobEndRow,
  JobRow,
  JobSummaryRow,
  NewJobRow,
} from './rows.ts';

// ---------------------------------------------------------------- jobs

export interface JobReads {
  get(id: string): Op<JobRow | undefined>;
  attempt(id: string): Op<AttemptRow | undefined>;
  control(id: string): Op<ControlRow | undefined>;
  stateOf(id: string): Op<string | undefined>;
  /** Summaries of the jobs with these seqs (one primary-key probe each), in no particular order. */
  summaries(seqs: readonly number[]): Op<JobSummaryRow[]>;
  /** The earliest run time among scheduled jobs, or null. */
  nextRunAtMs(): Op<number | null>;
  /**
   * Where the jobs with these ids are (at most limits.max_waiters ids, distinct), and how
   * those in a final state ended: one row per job stored, in no order; an id with no row is
   * left out. For a store other servers share (PostgreSQL: one statement, `id = ANY`), so
   * that outcome waits hear of ends committed elsewhere (engine/events/remote-ends.ts);
   * absent on a store that is this server's alone, whose waits hear of every end as it commits.
   */
  ends?(ids: readonly string[]): Op<JobEndRow[]>;
}

export interface Jobs extends JobReads {
  /** Stores new jobs in the order given (their seqs follow it). */
  insert(rows: readonly NewJobRow[]): Op<void>;
  /** Deletes one job. */
  delete(seq: number): Op<void>;
  /**
   * The newest job of a queue holding debounce key `key` that can still absorb an enqueue:
   * scheduled or ready, never leased (one probe of `jobs_debounce`). A store shared by
   * several servers serialises the callers per (queue, key) until the unit ends.
   */
  debounceTarget(p: { queue: string; key: string }): Op<DebounceTargetRow | undefined>;
  /** Gives new jobs (inserted in this unit) their debounce key and cap. */
  markDebounced(rows: readonly { id: string; key: string; untilMs: number | null }[]): Op<void>;
  /** A debounced enqueue absorbed by a waiting job: its new content, run time and state. */
  debounce(p: DebounceUpdate): Op<void>;
  /** Scheduled jobs due at `nowMs` → ready, earliest first: one row (its queue) per job. */
  promoteDue(p: { nowMs: number; limit: number }): Op<{ queue: string }[]>;
  /**
   * Forgets a queue's jobs in a final state that ended before `beforeMs`, oldest first: how
   * many, and the ones others depended on (so the engine passes their deletion on). A job
   * others depend on stays while one of them may still read it: any not ended, for a completed
   * job; for a dead or cancelled one, only those running or about to (a job still `waiting`
   * on it is cancelled when it is swept, as when it is deleted).
   */
  sweep(p: {
    queue: string;
    state: 'dead' | 'completed' | 'cancelled';
    beforeMs: number;
    limit: number;
  }): Op<SweptJobs>;
}

/** What a retention sweep deleted: how many, and those others depended on. */
export interface SweptJobs {
  swept: number;
  dependedOn: { seq: number; id: string; dependency_flags: number }[];
}

// ---------------------------------------------------------------- idempotency keys

export interface KeyReads {
  /** What a queue's dedup window remembers of a key. */
  remembered(p: { queue: string; key: string }): Op<{ job_id: string; expires_at_ms: number } | undefined>;
  /** The newest unfinished job (waiting, scheduled, ready, leased, no cancel asked) of a queue holding this key. */
  activeJob(p: { queue: string; key: string }): Op<string | undefined>;
  /** The newest stored job of a queue with this key, whatever its state. */
  newestJob(p: { queue: string; key: string }): Op<string | undefined>;
}

export interface Keys extends KeyReads {
  /** Remembers a key for a queue's dedup window (replacing what it remembered). */
  remember(p: { queue: string; key: string; jobId: string; expiresAtMs: number }): Op<void>;
  /** Forgets a key if it still names this job. */
  release(p: { queue: string; key: string; jobId: string }): Op<void>;
  /** Forgets keys whose window ended; returns how many. */
  sweep(p: { nowMs: number; limit: number }): Op<number>;
  /**
   * Serialises the write's key lookups with other writers of the same keys until it commits:
   * a store several servers write (PostgreSQL) has it, and the engine calls it before it
   * looks any of the keys up; a store with one writer (SQLite) needs none.
   */
  lock?(keys: readonly { queue: string; key: string }[]): Op<void>;
}
