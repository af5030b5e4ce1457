/**
 * The engine's public vocabulary: what callers send in and get back. Times are
 * milliseconds since the Unix epoch (`_Ms` suffix), durations are milliseconds.
 */
import type { DependencyPolicy } from '../store/dependencies.ts';
import type { JobRejection, RejectionReason } from './errors.ts';
import type { QueueSettingKey, QueueSettings, QueueSettingsFlat, SettingSource } from './settings.ts';

export type { DependencyPolicy };

/**
 * Job states. A job moves:
 *   scheduled → ready        when its run-at comes (promotion)
 *   ready     → leased       on reserve (attempt + 1)
 *   leased    → (deleted)    on ack, or → completed when the queue keeps completed jobs
 *   leased    → ready/scheduled  on nack or lease expiry with attempts left
 *   leased    → dead         on nack/expiry with no attempts left, or explicit dead-letter
 *   dead      → ready        on requeue (fresh attempt budget)
 *   scheduled/ready → cancelled  on cancel
 *   leased    → cancelled    on cancel: the request is recorded (`cancelledAtMs`) and the
 *                            worker told; the job moves when the worker settles it or the
 *                            lease ends, never back to ready
 *   scheduled/ready → dead (reason expired) or (deleted)  when its expiry passes unstarted
 *   cancelled → (deleted)    after the queue's cancelled_retention_ms
 *   (new)     → waiting      on enqueue with dependencies not all completed (depends_on)
 *   waiting   → ready/scheduled  when its last dependency resolves, in that job's transaction
 *   waiting   → cancelled    on cancel, or when a dependency fails under the `cancel` policy
 */
export type JobState = 'scheduled' | 'ready' | 'leased' | 'completed' | 'dead' | 'cancelled' | 'waiting';
export const jobStates: readonly JobState[] = [
  'scheduled',
  'ready',
  'leased',
  'completed',
  'dead',
  'cancelled',
  'waiting',
];

/** Why a job is dead. */
export type DeadReason = 'attempts_exhausted' | 'lease_expired' | 'dead_lettered' | 'expired' | 'timeout';
export const deadReasons: readonly DeadReason[] = [
  'attempts_exhausted',
  'lease_expired',
  'dead_lettered',
  'expired',
  'timeout',
];

export interface EnqueueRequest {
  queue: string;
  type: string;
  payload: Uint8Array;
  /** MIME type of the payload; default `application/octet-stream`. */
  contentType?: string;
  /** 0–9, 9 is served first; default 0. */
  priority?: number;
  /** Absolute time to run at (past = now). Exclusive with `delayMs`. */
  runAtMs?: number;
  /** Delay from now. Exclusive with `runAtMs`. */
  delayMs?: number;
  /** Overrides the queue's max attempts. */
  maxAttempts?: number;
  /**
   * The API key's name that enqueues (the gRPC and HTTP handlers set it; absent: no key, as on a
   * server without keys or for the server's own jobs). Stored with the job: keys other than it
   * make at most half of the job's dependents (engine/dependencies/edges.ts, othersShare).
   */
  createdBy?: string;
  /**
   * Set with `createdBy` when that key has the admin role (a trusted operator): the edges it
   * makes count as the creator's of each job they name, not against othersShare.
   */
  createdByAdmin?: boolean;
  /**
   * The job's own lease length: a reserve that asks for a shorter lease (or
   * none) gives this job `leaseMs` instead, up to the queue's max_lease_ms.
   * For long jobs run by workers that do not extend their leases.
   */
  leaseMs?: number;
  /**
   * Hard execution timeout of each attempt, in ms from its lease (server clock): the
   * attempt then ends failed with reason `timeout` (no extend keeps it), and the queue's
   * retry policy decides what follows. 0 or absent: the queue's default_timeout_ms.
   */
  timeoutMs?: number;
  idempotencyKey?: string;
  /**
   * The key is a duplicate only while a job with it is scheduled, ready or
   * leased (whatever the dedup window), and free again once that job finished.
   */
  uniqueWhileActive?: boolean;
  /** Not handed out at or after this time (ms since the epoch). Exclusive with `ttlMs`. */
  expiresAtMs?: number;
  /** Not handed out once this long has passed since the enqueue. Exclusive with `expiresAtMs`. */
  ttlMs?: number;
  metadata?: Readonly<Record<string, string>>;
  /** W3C trace context of the producer. */
  traceparent?: string;
  tracestate?: string;
  /**
   * The job's group (a tenant, a customer): leases take turns across the groups of
   * a queue, and the queue's group limits apply per group. Same rules as a queue
   * name. Absent: no group, and the job is leased as if groups did not exist.
   */
  group?: string;
  /**
   * Ids of jobs this job waits for: it is stored `waiting` and released in the
   * transaction that completes the last of them (limits.max_dependencies_per_job).
   */
  dependsOn?: readonly string[];
  /** What a failed dependency does to this job; default `cancel`. */
  onDependencyFailure?: DependencyPolicy;
  /**
   * Debounce (docs/protocol.md, "Debounce"): a job of the queue with this key that is still
   * waiting and was never leased absorbs this enqueue — it takes its payload, content type,
   * metadata and trace context, and its run time moves to now + `debounceMs`, never past its
   * first enqueue + `debounceMaxMs`. Without such a job, a new one is stored, due in `debounceMs`.
   */
  debounceKey?: string;
  /** The quiet period: the job runs this long after the last enqueue with its key; 0 or absent: at once. */
  debounceMs?: number;
  /** The longest a job may be pushed back from its first enqueue; 0 or absent: no cap. */
  debounceMaxMs?: number;
}

/** A job of a flow (EnqueueFlow): a job, its name in the request, and the jobs of the request it runs after. */
export interface FlowJob extends EnqueueRequest {
  /** Unique in the request; the answer maps it to the job's id. Same rules as a queue name. */
  name: string;
  /** Names of jobs of the same request this job waits for (with `dependsOn`, ids of stored jobs). */
  after?: readonly string[];
}

/** A flow: every job stored (or deduplicated), or none with the refused ones by index. */
export type FlowResult =
  | { committed: true; jobs: { name: string; jobId: string; deduplicated: boolean }[] }
  | { committed: false; rejections: (JobRejection & { index: number })[] };

export interface EnqueueAccepted {
  ok: true;
  jobId: string;
  /** True when the idempotency key was seen before: `jobId` is the original job. */
  deduplicated: boolean;
  /** True when a waiting job with the same debounce key absorbed the enqueue: `jobId` is that job. */
  debounced?: boolean;
}
export interface EnqueueRejected extends JobRejection {
  ok: false;
}
export type EnqueueResult = EnqueueAccepted | EnqueueRejected;

/** An all-or-nothing batch: either every job's result, or the failing indexes. */
export type AtomicEnqueueResult =
  | { committed: true; results: EnqueueAccepted[] }
  | { committed: false; rejections: (JobRejection & { index: number })[] };

export interface ReserveRequest {
  /** Queues in order of preference. */
  queues: readonly string[];
  /** Up to this many jobs; default 1. */
  maxJobs?: number;
  /** Lease length; default the queue's, clamped to the queue's max. */
  leaseMs?: number;
  /** Long-poll: wait up to this long for a job; 0 = return at once. */
  waitMs?: number;
  workerId?: string;
  /**
   * The largest answer the caller can take, in bytes (estimated as answer-size.ts does):
   * the reserve leases no more jobs than fit. Unset: no bound (the Work stream splits
   * its messages instead).
   */
  answerBytesMax?: number;
  /** How many bytes a job takes in the caller's answer; default answer-size.ts's estimate (protobuf). */
  answerBytesOf?: (job: LeasedJob) => number;
  /** The API key's name that reserves (absent without keys): the last quarter of limits.max_waiters is kept from a key holding a quarter. */
  owner?: string;
  /**
   * The queues the caller may see (an API key scoped to queues; absent, all): a dependency of
   * another queue is passed on as a swept one, without its state or result (dependencies/results.ts).
   */
  queueAllowed?: (queue: string) => boolean;
}

/** A leased job as a worker receives it. */
export interface LeasedJob {
  id: string;
  queue: string;
  type: string;
  payload: Uint8Array;
  contentType: string;
  priority: number;
  /** Fencing value: pass it back on ack, nack and extend. 1 on first delivery. */
  attempt: number;
  maxAttempts: number;
  leaseDeadlineMs: number;
  enqueuedAtMs: number;
  runAtMs: number;
  metadata: Record<string, string>;
  traceparent: string | null;
  tracestate: string | null;
  idempotencyKey: string | null;
  /** The previous attempt's error, if any. */
  lastError: string | null;
  /** The job's group; null when it has none. */
  group: string | null;
  /** When this attempt must end (hard timeout, server clock); null: no timeout. */
  timeoutAtMs: number | null;
  /**
   * Its queue had a flow limit when it was leased (flow-control's `hasFlowLimit`): workers
   * that lease ahead by default stop doing so.
   */
  flowLimited: boolean;
  /** The batch it is a member of (it may add to it: `fromMember`); null outside batches. */
  batchId: string | null;
  /**
   * Only for a batch member: this lease's secret token, which proves the member when it adds
   * to its batch (`fromMember` with `memberToken`, batches/lease-tokens.ts). Only its worker gets it.
   */
  leaseToken?: string;
  /** What the jobs it depended on ended with; absent for a job without dependencies. */
  dependencyResults?: DependencyResult[];
}

/** One dependency of a leased job, as its worker gets it (limits.max_dependency_results_bytes). */
export interface DependencyResult {
  jobId: string;
  /** Its name in the flow that made the dependency; null when named by id. */
  name: string | null;
  /** Its state now; null once it was swept. */
  state: JobState | null;
  /** Its result; null without one, or when left out (`resultOmitted`). */
  result: Uint8Array | null;
  resultContentType: string | null;
  /** True when the results together were above the limit: fetch them with GetJob. */
  resultOmitted: boolean;
}

export interface Settle {
  jobId: string;
  attempt: number;
}

/** An ack, optionally with the job's result. */
export interface Ack extends Settle {
  /**
   * What the job produced, at most limits.maxResultBytes. Kept with the job
   * while its queue retains completed jobs, and sent in the `completed` event.
   */
  result?: Uint8Array;
  /** MIME type of the result; default `application/octet-stream`. Ignored without a result. */
  resultContentType?: string;
}

/** How far along a job is, as its worker last reported. */
export interface JobProgress {
  /** 0 to 100; null when the worker never reported a percentage. */
  percent: number | null;
  /** A JSON document (text); null when the worker never reported one. */
  json: string | null;
  atMs: number;
}

/** A progress report of the lease `attempt`: a percentage, a JSON document, or both. */
export interface ProgressReport extends Settle {
  /** 0 to 100. */
  percent?: number;
  /** A JSON document, at most limits.maxProgressBytes. */
  json?: string;
}

export type NackDirective =
  /** The queue's exponential backoff. */
  | { kind: 'backoff' }
  /** Retry after exactly this delay (0 = at once). */
  | { kind: 'delay'; delayMs: number }
  /** Dead-letter now, whatever attempts are left. */
  | { kind: 'dead_letter' }
  /**
   * The job never started: its lease is undone (leases/undone-lease.ts) — ready again at its
   * old place, no attempt counted (the attempt kept, the budget one larger). The error is
   * ignored.
   */
  | { kind: 'give_back' };

export interface NackRequest extends Settle {
  error: string;
  /** The error's class or name (`TypeError`), as the worker's code threw it; absent: none given. */
  errorClass?: string;
  /** Its stack trace as the worker's language prints it; absent: none given. */
  stack?: string;
  directive?: NackDirective;
}

/** What a worker said of a failed attempt besides its message (both bounded and checked by the engine). */
export interface ErrorDetail {
  errorClass: string | null;
  stack: string | null;
}

export interface NackResult {
  /** `cancelled` when a cancel had been asked for: the attempt ends the job. */
  state: 'ready' | 'scheduled' | 'dead' | 'cancelled';
  /** When the job runs again (absent when dead). */
  runAtMs: number | null;
}

export interface ExtendRequest extends Settle {
  /** New lease length from now, clamped to the queue's max; 0 means the queue's default lease. */
  leaseMs: number;
}

/** Outcome of one settlement in a batch. */
export type SettleOutcome =
  | { ok: true }
  | { ok: false; code: 'not_found' | 'lease_lost' | 'job_cancelled'; message: string };

export interface AttemptError {
  attempt: number;
  atMs: number;
  error: string;
  /** The class the worker named (NackRequest.errorClass); null: none given. */
  errorClass: string | null;
  /** The stack the worker sent; null: none given. */
  stack: string | null;
}

export interface JobInfo {
  id: string;
  seq: number;
  queue: string;
  type: string;
  state: JobState;
  priority: number;
  payload: Uint8Array;
  contentType: string;
  attempt: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  metadata: Record<string, string>;
  traceparent: string | null;
  tracestate: string | null;
  enqueuedAtMs: number;
  runAtMs: number;
  leasedAtMs: number | null;
  leaseDeadlineMs: number | null;
  workerId: string | null;
  lastError: string | null;
  errors: AttemptError[];
  deadReason: DeadReason | null;
  failedAtMs: number | null;
  completedAtMs: number | null;
  /** When the job stops being handed out (TTL); null: never. */
  expiresAtMs: number | null;
  /** The job's own hard timeout per attempt; null: its queue's default_timeout_ms. */
  timeoutMs: number | null;
  /** When the current attempt must end; null unless leased with a timeout. */
  timeoutAtMs: number | null;
  /** Its debounce key (later enqueues with it replace its content while it waits); null: none. */
  debounceKey: string | null;
  /** The latest run time a debounced enqueue may push it to; null: no cap (or not debounced). */
  debounceUntilMs: number | null;
  /** When a cancel was asked for (the job may still be leased until its worker stops). */
  cancelledAtMs: number | null;
  /** Who asked for the cancel. */
  cancelledBy: string | null;
  /** What the ack carried; null when it carried none (or the job is not completed). */
  result: Uint8Array | null;
  resultContentType: string | null;
  /** The latest progress report of the current (or last) attempt; null when none. */
  progress: JobProgress | null;
  /** The job's group; null when it has none. */
  group: string | null;
  /**
   * True when the job's row is gone (deleted as it finished) and this is only
   * its outcome, kept for limits.finishedOutcomeMs: id, queue, type, state,
   * attempt, when it ended, the result or the last error and dead reason, who
   * cancelled it. The payload (empty), metadata (none) and the rest are not kept.
   */
  outcomeOnly: boolean;
  /** The jobs it depends on, in enqueue order (only for a job that named depends_on). */
  dependencies?: JobLink[];
  /** Up to 100 jobs that depend on it, oldest first (only for a job others depend on). */
  dependents?: JobLink[];
  /** The batch it is a member of (only for a member). */
  batchId?: string;
}

export type StateCounts = Record<JobState, number>;

export interface QueueInfo {
  name: string;
  paused: boolean;
  counts: StateCounts;
  /** How long the oldest ready job has been due; null when none is ready. */
  oldestReadyAgeMs: number | null;
  /** Long-polls waiting on this queue now. */
  waitingWorkers: number;
  /** Of those, the ones a limit holds back from the queue's ready jobs (max_leased, a rate limit, group limits). */
  throttledWorkers: number;
  /** Groups with ready jobs, counted up to 1,000 (see `readyGroupsCapped`). */
  readyGroups: number;
  /** True when there are more groups with ready jobs than `readyGroups` says (counting stopped). */
  readyGroupsCapped: boolean;
  settings: QueueSettings;
  /** Where each setting comes from, by flat key (`backoffBaseMs`). */
  settingSources: Readonly<Record<QueueSettingKey, SettingSource>>;
  /** The settings without run-time overrides (flat): what resetting an override gives back. */
  fileSettings: QueueSettingsFlat;
}

export interface DeadLetterQuery {
  queue: string;
  reason?: DeadReason;
  /** From a previous page's `nextCursor`. */
  cursor?: string;
  /** Default 100, capped at limits.maxPageSize. */
  pageSize?: number;
}

export interface Page<T> {
  items: T[];
  /** Pass back to get the next page; null on the last page. */
  nextCursor: string | null;
}

/** Which dead letters a requeue or delete applies to. */
export type DeadLetterSelection =
  | { queue: string; jobIds: readonly string[] }
  /** Every dead letter of the queue, or only those of one reason, whose last error contains some text, enqueued before a time. */
  | { queue: string; all: true; reason?: DeadReason; errorText?: string; enqueuedBeforeMs?: number };

/** What one group commit did: for telemetry. */
export interface CommitStats {
  operations: number;
  durationMs: number;
  ok: boolean;
}

/**
 * What happened to jobs, reported after the commit that did it, aggregated
 * per operation (`count` jobs at once). Metrics and the admin rate charts
 * are built from these.
 */
export type JobEvent =
  | { kind: 'enqueued'; queue: string; count: number }
  | { kind: 'deduplicated'; queue: string; count: number }
  /** Enqueues absorbed by a waiting job with the same debounce key. */
  | { kind: 'debounced'; queue: string; count: number }
  | { kind: 'rejected'; queue: string; reason: RejectionReason; count: number }
  /** `totalWaitMs`/`maxWaitMs`: how long the leased jobs had been due (enqueue or run-at to lease), summed and longest. */
  | { kind: 'reserved'; queue: string; count: number; totalWaitMs?: number; maxWaitMs?: number }
  | { kind: 'acked'; queue: string; count: number }
  | { kind: 'nacked'; queue: string; count: number }
  /** Leases undone: their answer never reached a worker (leases/undone-lease.ts); each counted in `reserved` too. */
  | { kind: 'lease_undone'; queue: string; count: number }
  /** Leases given back unstarted by their worker (a nack's `give_back`); each counted in `reserved` too. */
  | { kind: 'lease_given_back'; queue: string; count: number }
  | { kind: 'dead_lettered'; queue: string; reason: DeadReason; count: number }
  | { kind: 'expired'; queue: string; count: number }
  /** Attempts ended by their hard timeout (reason `timeout`), retried or dead per the queue's policy. */
  | { kind: 'timed_out'; queue: string; count: number }
  /** Jobs whose expiry (TTL) passed before they started: dead-lettered or deleted per `expiredAction`. */
  | { kind: 'ttl_expired'; queue: string; count: number }
  | { kind: 'requeued'; queue: string; count: number }
  /** Jobs that became `cancelled`. */
  | { kind: 'cancelled'; queue: string; count: number }
  /** Waiting jobs deleted by a purge. */
  | { kind: 'purged'; queue: string; count: number };

/** A job it depends on, or one that depends on it, as GetJob shows it. */
export interface JobLink {
  id: string;
  /** null once the job was swept (an edge outlives the job it names). */
  queue: string | null;
  type: string | null;
  state: JobState | null;
  /** The edge: pending, completed or failed. */
  edge: 'pending' | 'completed' | 'failed';
  /** The dependency's name in its flow (dependencies only); null when named by id. */
  name: string | null;
}
