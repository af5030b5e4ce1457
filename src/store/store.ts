/**
 * The Store: everything the engine keeps, as named, typed operations grouped
 * by capability. The engine describes storage work with them and never sees a
 * driver; a backend implements them (src/store/sqlite/ today) and proves it
 * with the conformance suite (tests/store/conformance/).
 *
 * How work runs (op.ts): an operation is a generator the engine composes with
 * `yield*` into a unit; `write(unit)` runs a unit in a transaction and resolves
 * after the commit that holds it is durable, `read(unit)` runs one against a
 * consistent view. An operation takes a parameter object (names with units) or
 * the one key it looks up, and returns plain rows (rows.ts) or values.
 *
 * Conventions every backend keeps:
 * - time is a parameter (`nowMs`); a store never reads the clock;
 * - a `limit` bounds what one call changes or returns; a `scan` bounds the
 *   index entries one read may examine;
 * - "as this transaction sees it": inside a write, reads see the unit's own
 *   changes and those of the units committed before it;
 * - rows a statement returns from an UPDATE or DELETE come in no particular
 *   order unless the operation says so.
 */
import type { Dependencies, DependencyReads } from './dependencies.ts';
import type { Op } from './op.ts';
import type {
  AckedRow,
  AttemptRow,
  AuditRow,
  BucketRow,
  ControlRow,
  DebounceTargetRow,
  DebounceUpdate,
  DueRow,
  EndedJobRow,
  ExpiredRow,
  HistoryRow,
  JobRow,
  JobSummaryRow,
  KeyedJobRow,
  LeasedRow,
  LeaseHolderRow,
  NewJobRow,
  OverrideRow,
  QueueCountRow,
  ReadyHeadRow,
  ScheduleDefinitionRow,
  ScheduleListRow,
  ScheduleRow,
  ScheduleRunRow,
  SessionRow,
} from './rows.ts';

// ---------------------------------------------------------------- queues

export interface QueueReads {
  /** Every queue by name, with its paused flag. */
  all(): Op<{ name: string; paused: boolean }[]>;
  /** Whether the queue's row exists, as this transaction sees it. */
  exists(name: string): Op<boolean>;
  /** The queues that have had a job with a group (they lease by turns across groups). */
  withGroups(): Op<string[]>;
  /** The earliest due time among the queue's ready jobs without a group, or null: an index probe per priority. */
  oldestUngroupedReadyMs(queue: string): Op<number | null>;
}

export interface Queues extends QueueReads {
  /** Creates the queue's row (and its counters, all 0) unless it exists. */
  create(p: { name: string; createdAtMs: number; settingsJson: string }): Op<void>;
  /** Records the queue's effective settings, for forensics (the engine reads its own). */
  recordSettings(p: { name: string; settingsJson: string }): Op<void>;
  setPaused(p: { name: string; paused: boolean }): Op<void>;
  /** Marks the queue as one that has had a job with a group. */
  markGrouped(name: string): Op<void>;
  /** Removes a queue that holds no job: its counters, its rate-limit buckets and its row. */
  delete(name: string): Op<void>;
}

// ---------------------------------------------------------------- counts

/**
 * Per-queue, per-state counts of jobs. The engine keeps them exact: every
 * operation that adds, removes or moves jobs is followed by `adjust` in the
 * same unit, so nothing ever counts rows to answer (`mismatches` checks it).
 */
export interface CountReads {
  all(): Op<QueueCountRow[]>;
  ofQueue(queue: string): Op<{ state: string; jobs: number }[]>;
  inState(p: { queue: string; state: string }): Op<number>;
  /** Scheduled, ready and leased jobs of a queue (max_depth). */
  unfinished(queue: string): Op<number>;
  /** Every job stored, from the counts. */
  total(): Op<number>;
  /** One line per count that disagrees with its rows (`queue/state: counter N, rows M`); empty when exact. */
  mismatches(): Op<string[]>;
}

export interface Counts extends CountReads {
  /** `jobs` jobs of `queue` left state `from` (null: they are new) for state `to` (null: they are gone). */
  adjust(p: { queue: string; from: string | null; to: string | null; jobs: number }): Op<void>;
}

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
  /** Forgets a queue's jobs in a final state that ended before `beforeMs`, oldest first; returns how many. */
  sweep(p: {
    queue: string;
    state: 'dead' | 'completed' | 'cancelled';
    beforeMs: number;
    limit: number;
  }): Op<number>;
}

// ---------------------------------------------------------------- idempotency keys

export interface KeyReads {
  /** What a queue's dedup window remembers of a key. */
  remembered(p: { queue: string; key: string }): Op<{ job_id: string; expires_at_ms: number } | undefined>;
  /** The newest unfinished job (scheduled, ready, leased, no cancel asked) of a queue holding this key. */
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
   * Priority aging (leases/aged-lease.ts): the oldest ready jobs without a group of each of
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
  putBucket(p: BucketRow & { queue: string; groupKey: string }): Op<void>;
  /** Forgets a queue's buckets untouched since `beforeMs` (full again); returns how many. */
  sweepBuckets(p: { queue: string; beforeMs: number; limit: number }): Op<number>;
}

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

export interface Bulk extends BulkReads {
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
  /** Deletes one dead letter. */
  delete(p: { queue: string; id: string }): Op<KeyedJobRow | undefined>;
}

// ---------------------------------------------------------------- admin browse (reads only)

/** A range of one queue, state and job type in enqueue order (seq), from `fromSeq` exclusive. */
export interface SeqRange {
  queue: string;
  state: string;
  type: string;
  fromSeq: number;
  descending: boolean;
}

export interface Browse {
  /** The next job type after `afterType` present in a queue and state: one seek (a loose index scan step). */
  typeAfter(p: { queue: string; state: string; afterType: string }): Op<string | undefined>;
  /** The first job type in [`fromType`, `belowType`) present in a queue and state. */
  typeFrom(p: { queue: string; state: string; fromType: string; belowType: string }): Op<string | undefined>;
  /** Seqs of a range, at most `limit`. */
  seqs(p: SeqRange & { limit: number }): Op<number[]>;
  /** Seqs of a queue and state of any type (sorts them: for queues with very many types only). */
  seqsAnyType(p: Omit<SeqRange, 'type'> & { limit: number }): Op<number[]>;
  /** Seqs of a range as the browse list reads it: at most `scan` index entries. */
  scanSeqs(p: SeqRange & { scan: number }): Op<number[]>;
  /** A queue's scheduled jobs (`retries`: only those scheduled after a delivery) by due time, from a position. */
  scanDue(p: {
    queue: string;
    retries: boolean;
    fromDueMs: number;
    fromSeq: number;
    descending: boolean;
    scan: number;
  }): Op<DueRow[]>;
  /** Which of `seqs` pass the filters no index answers (null: any); one primary-key probe each. */
  filter(p: {
    seqs: readonly number[];
    errorText: string | null;
    metadata: { key: string; value: string } | null;
    typePrefix: string | null;
    groupKey: string | null;
  }): Op<number[]>;
  /** Ids in [`lo`, `hi`), newest first. */
  idsBetween(p: { lo: string; hi: string; limit: number }): Op<string[]>;
  /** Ids containing `fragment` among the newest `scan` ids. */
  idsContaining(p: { fragment: string; scan: number; limit: number }): Op<string[]>;
}

// ---------------------------------------------------------------- schedules

export interface ScheduleReads {
  get(name: string): Op<ScheduleRow | undefined>;
  /** Every schedule by name, without payloads. */
  all(): Op<ScheduleListRow[]>;
  count(): Op<number>;
  /** Running schedules whose next tick is due at `nowMs`, soonest first. */
  due(p: { nowMs: number; limit: number }): Op<ScheduleRow[]>;
  /** When the next running schedule is due, or null. */
  nextTickMs(): Op<number | null>;
  /** The schedule's latest runs, newest first (at most `limit`). */
  runs(p: { name: string; limit: number }): Op<ScheduleRunRow[]>;
}

/** What handling a schedule's due ticks changes. */
export interface ScheduleProgress {
  name: string;
  nextTickMs: number | null;
  lastTickMs: number;
  lastRunAtMs: number;
  lastOutcome: string;
  lastDetail: string | null;
  /** The job of the latest tick that enqueued one; null keeps the last. */
  lastJobId: string | null;
  /** Ticks enqueued and skipped, added to the totals. */
  enqueued: number;
  skipped: number;
}

export interface Schedules extends ScheduleReads {
  insert(row: ScheduleDefinitionRow & { nowMs: number }): Op<void>;
  /** Replaces the definition (and the cursor); keeps paused, the last outcome and the totals. */
  update(row: ScheduleDefinitionRow & { nowMs: number }): Op<void>;
  delete(name: string): Op<void>;
  setPaused(p: { name: string; paused: boolean; nowMs: number }): Op<void>;
  /** Records a handled tick: the cursor, the outcome and the totals. */
  recordProgress(p: ScheduleProgress): Op<void>;
  /** Records a manual trigger: the outcome and its job; the cursor and the totals stay. */
  recordTrigger(p: { name: string; nowMs: number; jobId: string; detail: string | null }): Op<void>;
  /** Adds a run to the schedule's history and forgets all but its latest `keep`. */
  recordRun(p: Omit<ScheduleRunRow, 'seq'> & { name: string; keep: number }): Op<void>;
}

// ---------------------------------------------------------------- audit log

export interface AuditReads {
  /** Entries before `beforeId`, newest first; a null filter matches anything. */
  page(p: {
    actor: string | null;
    action: string | null;
    target: string | null;
    beforeId: number;
    limit: number;
  }): Op<AuditRow[]>;
}

export interface Audit extends AuditReads {
  /** Appends an entry; returns its id. */
  insert(p: { atMs: number; actor: string; action: string; target: string; detailsJson: string }): Op<number>;
  updateDetails(p: { id: number; detailsJson: string }): Op<void>;
}

// ---------------------------------------------------------------- run-time queue settings

export interface SettingReads {
  /** Every override, by queue and key. */
  all(): Op<OverrideRow[]>;
  ofQueue(queue: string): Op<{ key: string; value_json: string }[]>;
}

export interface Settings extends SettingReads {
  put(p: { queue: string; key: string; valueJson: string; setAtMs: number; setBy: string }): Op<void>;
  delete(p: { queue: string; key: string }): Op<void>;
}

// ---------------------------------------------------------------- admin sessions

export interface SessionReads {
  /** Sessions still live at `nowMs`, oldest first. */
  live(nowMs: number): Op<SessionRow[]>;
}

export interface Sessions extends SessionReads {
  insert(row: SessionRow): Op<void>;
  delete(idSha256: string): Op<void>;
  /** Forgets sessions that ended by `nowMs`. */
  deleteExpired(nowMs: number): Op<void>;
}

// ---------------------------------------------------------------- job history

/** The job history (src/engine/history/): rows per bucket, written once a minute. */
export interface HistoryReads {
  /** Rows of `resolution` whose bucket starts in [`fromMs`, `toMs`): a primary-key range. */
  between(p: { resolution: 'm' | 'h'; fromMs: number; toMs: number }): Op<HistoryRow[]>;
}

export interface History extends HistoryReads {
  /** Writes `rows`, each replacing the row with its key. */
  put(rows: readonly HistoryRow[]): Op<void>;
  /** Forgets the rows of `resolution` whose bucket starts before `beforeMs`: a primary-key range. */
  forget(p: { resolution: 'm' | 'h'; beforeMs: number }): Op<void>;
}

// ---------------------------------------------------------------- units

/** What a read unit sees: every capability's reads, one consistent view. */
export interface StoreView {
  readonly queues: QueueReads;
  readonly counts: CountReads;
  readonly jobs: JobReads;
  readonly keys: KeyReads;
  readonly leases: LeaseReads;
  readonly flow: FlowReads;
  readonly control: ControlReads;
  readonly deadLetters: DeadLetterReads;
  readonly browse: Browse;
  readonly bulk: BulkReads;
  readonly schedules: ScheduleReads;
  readonly audit: AuditReads;
  readonly settings: SettingReads;
  readonly sessions: SessionReads;
  readonly history: HistoryReads;
  /** Job dependencies (dependencies.ts); undefined in a store without them. */
  readonly dependencies?: DependencyReads;
}

/** What a write unit works with: every capability, and the effects it registers with the store. */
export interface StoreTx extends StoreView {
  readonly queues: Queues;
  readonly counts: Counts;
  readonly jobs: Jobs;
  readonly keys: Keys;
  readonly leases: Leases;
  readonly flow: Flow;
  readonly control: Control;
  readonly bulk: Bulk;
  readonly deadLetters: DeadLetters;
  readonly schedules: Schedules;
  readonly audit: Audit;
  readonly settings: Settings;
  readonly sessions: Sessions;
  readonly history: History;
  readonly dependencies?: Dependencies;
  /** Runs `hook` once the commit that holds this unit is durable, before its caller is answered. */
  afterCommit(hook: () => void): void;
  /**
   * Runs `unit` after this one, only if this one succeeds, and commits it with
   * this one (SQLite: in the same batch, its own savepoint); resolves as write() does.
   */
  followUp<T>(unit: WriteUnit<T>): Promise<T>;
  /**
   * How durable this unit's commit must be before its caller is answered, for a
   * queue it wrote (its `durability` setting): `full` — on disk (fsync'd);
   * `relaxed` — may be answered first (survives a crash of the process, not a
   * power cut); `default` — as the store was opened (`server.durability`). A unit
   * that says nothing is `default`; of several calls the strictest wins, and a
   * commit is made durable when any unit in it needs that.
   */
  durability(mode: UnitDurability): void;
}

/** What a unit asks of its commit (StoreTx.durability). */
export type UnitDurability = 'default' | 'full' | 'relaxed';

/** A unit's ask after one more call: of two asks the stricter holds (full > default > relaxed). */
export function stricterDurability(asked: UnitDurability | undefined, mode: UnitDurability): UnitDurability {
  if (asked === 'full' || (asked === 'default' && mode === 'relaxed')) return asked;
  return mode;
}

/** Whether a unit that asked `asked` (undefined: nothing) needs its commit synced, on a store whose default is `defaultFull`. */
export function needsSync(asked: UnitDurability | undefined, defaultFull: boolean): boolean {
  return asked === 'full' || (asked !== 'relaxed' && defaultFull);
}

export type WriteUnit<T> = (tx: StoreTx) => Op<T>;
export type ReadUnit<T> = (view: StoreView) => Op<T>;

/**
 * The storage itself failed (an I/O error, a full disk, a lock held too long):
 * nothing the request asked for is to blame, and nothing of it was written.
 */
export class StorageFailure extends Error {
  override name = 'StorageFailure';
  /** The storage ran out of room (the engine frees its disk reserve and refuses enqueues). */
  readonly diskFull: boolean;

  constructor(message: string, options: { cause: unknown; diskFull: boolean }) {
    super(message, { cause: options.cause });
    this.diskFull = options.diskFull;
  }
}

/** What a write unit's caller is told when it goes wrong, and who watches the writes: the engine's part. */
export interface WriteHooks {
  /** The error every unit of a failed commit is rejected with. */
  commitFailed(failure: StorageFailure): Error;
  /** The error a unit that threw is rejected with (its own changes were rolled back). */
  unitFailed(error: unknown): Error;
  /** The error a write made after close() is rejected with. */
  closed(): Error;
  /** After each commit (SQLite: each batch), before its callers are answered. */
  afterCommit?(stats: CommitStats): void;
  /** An after-commit hook threw (a bug): the callers are answered anyway. */
  hookFailed?(error: unknown): void;
}

export interface CommitStats {
  /** Units in the commit. */
  operations: number;
  /** Wall time from the start of the transaction to the end of its commit. */
  durationMs: number;
  ok: boolean;
}

// ---------------------------------------------------------------- optional capabilities

/**
 * A copy of the live store to a file, while other work goes on (writes made meanwhile
 * are in it). A failure of the storage rejects with a StorageFailure; an error thrown
 * by `onProgress` stops the copy and rejects with that error.
 */
export interface OnlineBackup {
  copyTo(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void>;
}

/** Room kept on the data directory's file system for a full disk (src/engine/jobs/disk-full.ts uses it). */
export interface DiskReserve {
  /** The size of the reserve, in bytes (0: none is kept). */
  readonly bytes: number;
  /** Gives the reserve back to the file system; false when there was none. */
  release(): boolean;
  /** Free bytes on the data directory's file system. */
  freeBytes(): number;
  /** Bytes the store can fill again without growing its files (SQLite: the database's free pages). */
  reusableBytes(): number;
  /**
   * Gives back to the file system what the store holds but does not need, losing
   * nothing (SQLite: checkpoints the WAL and truncates it, unless checkpoints are
   * external); cheap to skip, not to call (a checkpoint).
   */
  reclaim(): void;
  /** Takes the reserve (again); false when there is no room for it. */
  take(): boolean;
}

/** The store's files on disk: their sizes now, for /metrics and the dashboard, and whether they are still its own. */
export interface StoreFiles {
  sizes(): { database: number; wal: number };
  /**
   * Checks now that the files the store writes are still the ones it opened;
   * null when they are, otherwise why writes are refused (readiness is false then).
   */
  problem(): string | null;
}

/**
 * What one server tells the others that share its store (several sepp servers on
 * one PostgreSQL database): sent after the commit it describes, at most once in
 * flight (what comes meanwhile goes in the next), and lost without harm — the
 * engine also polls the store (`pollIntervalMs`), so a signal is a shortcut, never
 * the only way news arrives. A store that no other server shares has none.
 */
export interface StoreSignals {
  /** How often the engine looks for what a lost signal would have told it (ready jobs, maintenance). */
  readonly pollIntervalMs: number;
  /** `jobs` jobs of `queue` became ready here (after the commit that made them so). */
  readyJobs(queue: string, jobs: number): void;
  /**
   * Cancels of leased jobs were committed here: the workers holding them may be
   * connected to another server. Without the signal they learn at their next
   * extend or settlement (refused with job_cancelled).
   */
  cancelRequested(notices: readonly CancelSignal[]): void;
  /**
   * Attempts ended by their hard timeout here (the expiry sweep of whichever server ran
   * it): the workers holding them may be connected to another server. Without the
   * signal they learn at their next extend (refused with job_timed_out).
   */
  attemptsTimedOut(notices: readonly TimeoutSignal[]): void;
  /** Calls `listener` for what another server said (one listener; a later call replaces it). */
  listen(listener: (signal: StoreSignal) => void): void;
}

/** A cancel of one lease, as the servers tell each other of it. */
export interface CancelSignal {
  jobId: string;
  queue: string;
  attempt: number;
  workerId: string | null;
  cancelledBy: string | null;
  cancelledAtMs: number;
}

/** An attempt ended by its hard timeout, as the servers tell each other of it. */
export interface TimeoutSignal {
  jobId: string;
  queue: string;
  attempt: number;
  workerId: string | null;
  timeoutAtMs: number;
}

/** A signal from another server. */
export type StoreSignal =
  | { kind: 'ready'; queue: string; jobs: number }
  | { kind: 'cancel'; notices: readonly CancelSignal[] }
  | { kind: 'timeout'; notices: readonly TimeoutSignal[] };

/**
 * Which store a server runs on and where its data is, for GetServerInfo and the
 * dashboard: never a password (a PostgreSQL URL holds none).
 */
export interface StoreDescription {
  kind: string;
  /** PostgreSQL: the database server, `host:port`; null for SQLite. */
  host: string | null;
  /** PostgreSQL: the database and the schema of sepp's tables; null for SQLite. */
  database: string | null;
  schema: string | null;
  /** PostgreSQL: whether this server hears the other servers' signals now (else it polls); null for SQLite. */
  signalsConnected: boolean | null;
  /**
   * PostgreSQL: the primary's replication when the server last connected to it
   * (docs/replication.md): whether a commit waits for a standby; null for SQLite.
   */
  replication: ReplicationMode | null;
  /** PostgreSQL: the standbys streaming from the primary then; null for SQLite. */
  standbys: number | null;
}

/** `synchronous`: commits wait for a standby; `asynchronous`: standbys, commits do not wait; `none`: no standby. */
export type ReplicationMode = 'synchronous' | 'asynchronous' | 'none';

/**
 * A store. `write` and `read` are the whole contract of the engine's work;
 * the optional capabilities are what some backends have (the SQLite store:
 * online backup, a disk reserve, its files); the engine answers
 * FAILED_PRECONDITION naming `kind` when asked for one a store lacks.
 */
export interface Store {
  /** What backend this is, for messages: `sqlite`. */
  readonly kind: string;
  /** The engine's part in every write; set once, before the first write. */
  attach(hooks: WriteHooks): void;
  /** Runs `unit` in a transaction; resolves with its result after the commit that holds it is durable. */
  write<T>(unit: WriteUnit<T>): Promise<T>;
  /** Runs `unit` against one consistent view of what is committed. */
  read<T>(unit: ReadUnit<T>): Promise<T>;
  /** Writes what is queued, refuses writes from now on, and releases the storage. */
  close(): Promise<void>;
  readonly backup?: OnlineBackup;
  readonly diskReserve?: DiskReserve;
  readonly files?: StoreFiles;
  /** Word between the servers sharing this store; absent when it is this server's alone. */
  readonly signals?: StoreSignals;
  /** What it is and where its data is; absent: only `kind` is known. */
  describe?(): StoreDescription;
}
