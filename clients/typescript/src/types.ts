/**
 * The SDK's public request and result shapes. They mirror the protocol
 * (proto/sepp/v1) with friendlier types: times as `Date` (or epoch
 * milliseconds going in), names of states and reasons as strings, optional
 * fields instead of proto3 zero values.
 */
import type { RejectionReason } from './errors.ts';

/** A job's payload: bytes as they are, or a string sent as UTF-8. */
export type Payload = Uint8Array | string;

/** A point in time: a `Date`, or milliseconds since the Unix epoch. */
export type TimeInput = Date | number;

/** Options every call accepts. */
export interface CallOptions {
  /** Give up after this long, in ms (default: the client's `defaultDeadlineMs`). */
  deadlineMs?: number;
  /** Cancels the call (unary calls only; an enqueue on the stream cannot be taken back). */
  signal?: AbortSignal;
}

/** Options of pauseQueue and resumeQueue. */
export interface QueueActionOptions extends CallOptions {
  /** Create the queue when nobody has used it yet (else NOT_FOUND): to pause a queue before its first job. */
  allowMissing?: boolean;
}

/** How to enqueue a job; everything is optional. */
export interface EnqueueOptions {
  /**
   * MIME type of the payload. Defaults to `application/json` for
   * `enqueueJson`, `text/plain; charset=utf-8` for a string payload, and
   * none (the server says `application/octet-stream`) for bytes.
   */
  contentType?: string;
  /** 0 to 9; higher runs first. Default 0. */
  priority?: number;
  /** When the job may run (past times mean now). Give this or `delayMs`, not both. */
  runAt?: TimeInput;
  /** Run the job this many ms after the server accepts it. Give this or `runAt`, not both. */
  delayMs?: number;
  /** Deliveries before the job goes dead; default the queue's (5 unless configured). */
  maxAttempts?: number;
  /**
   * Deduplication key: a second job with the same key on the same queue is not
   * stored while the key is taken, and the first job's id comes back with
   * `deduplicated: true`. A key is taken for the queue's dedup window (also
   * after its job completed) and beyond it while the job is unfinished;
   * cancelling the job or deleting its dead letter frees it. Also what makes
   * an enqueue safe to retry.
   */
  idempotencyKey?: string;
  /**
   * With `idempotencyKey`: the key is a duplicate exactly while a job holding
   * it is scheduled, ready or leased (whatever the dedup window), and free
   * again once that job finished: at most one unfinished job per key.
   */
  uniqueWhileActive?: boolean;
  /**
   * Do not start the job after this long from the enqueue, in ms (a TTL). A
   * job not handed out in time goes to the dead letters with reason
   * `expired` (or is deleted, per the queue's `expiredAction`). Give this or
   * `expiresAt`, not both.
   */
  ttlMs?: number;
  /** Do not start the job at or after this time. Give this or `ttlMs`, not both. */
  expiresAt?: TimeInput;
  /** String pairs stored with the job and handed to the worker. */
  metadata?: Readonly<Record<string, string>>;
  /**
   * W3C trace context to store with the job. Default: the active
   * OpenTelemetry context's, when OpenTelemetry is set up.
   */
  traceparent?: string;
  /** W3C `tracestate` that goes with `traceparent`. */
  tracestate?: string;
  /**
   * The job's group: a tenant, a customer, an account. Leases take turns
   * across the groups of a queue, and the queue's group limits
   * (`group_max_leased`, a group rate limit) apply per group. Letters, digits
   * and `. _ : -`, at most 128 characters. Default: no group.
   */
  group?: string;
  /** Give up waiting for the answer after this long, in ms (the job may still be stored). */
  deadlineMs?: number;
}

/** One job of `enqueueBatch` or `enqueueAtomic`. */
export interface JobSpec extends Omit<EnqueueOptions, 'deadlineMs'> {
  /** Queue to put the job on. */
  queue: string;
  /** Job type: which handler runs it. */
  type: string;
  /** The job's input as bytes or text. Give this or `json`. */
  payload?: Payload;
  /** The job's input as a value to send as JSON (content type `application/json`). */
  json?: unknown;
}

/** An enqueued job. */
export interface Enqueued {
  /** The job's id (the original job's id when deduplicated). */
  id: string;
  /** True when the idempotency key was seen before and nothing new was stored. */
  deduplicated: boolean;
}

/** The outcome of one job of `enqueueBatch`: stored, or refused with a reason. */
export type EnqueueOutcome =
  | ({ ok: true } & Enqueued)
  | {
      ok: false;
      /** Why the job was refused. */
      reason: RejectionReason;
      /** A sentence for people. */
      message: string;
    };

/** Where a job is in its lifecycle. */
export type JobState = 'scheduled' | 'ready' | 'leased' | 'completed' | 'dead' | 'cancelled';

/** Why a job is dead. */
export type DeadReason = 'attempts_exhausted' | 'lease_expired' | 'dead_lettered' | 'expired';

/** How to ack with `SeppClient.ack`. */
export interface AckOptions extends CallOptions {
  /**
   * The job's result, encoded as a handler's return value is: a `JobResult`
   * as given, bytes as `application/octet-stream`, a string as text, anything
   * else as JSON; `undefined` means none. At most the server's
   * `max_result_bytes` (default 64 KiB).
   */
  result?: unknown;
}

/** What identifies a lease: the job and the attempt it was given (the fencing token). A LeasedJob is one. */
export interface LeaseRef {
  /** The job's id. */
  readonly id: string;
  /** The lease's attempt number. */
  readonly attempt: number;
}

/** One ack of `ackBatch`: a lease, optionally with its result (as `AckOptions.result`). */
export type AckSpec = LeaseRef & { readonly result?: unknown };

/** What to lease with `reserve`. */
export interface ReserveOptions extends CallOptions {
  /** Queues to take jobs from, in order of preference. */
  queues: readonly string[];
  /** Most jobs to lease (default 1). */
  maxJobs?: number;
  /** How long the leases last, in ms (default: each queue's default lease). */
  leaseMs?: number;
  /** How long to wait for a job when none is ready, in ms (a long poll; default 0). */
  waitMs?: number;
  /** Names this worker in GetJob and the admin UI. */
  workerId?: string;
}

/** How to fail an attempt with `nack`. */
export interface NackOptions extends CallOptions {
  /** What went wrong; kept in the job's error history. */
  error?: string | Error;
  /** Retry after exactly this many ms instead of the queue's backoff (0 = at once). */
  retryAfterMs?: number;
  /** Dead-letter the job now, whatever attempts it has left. */
  deadLetter?: boolean;
}

/** Where a nacked job went. */
export interface NackResult {
  /** `ready` (retry at once), `scheduled` (retry at `runAt`), `dead`, or `cancelled` (a cancel was asked for). */
  state: 'ready' | 'scheduled' | 'dead' | 'cancelled';
  /** When the job runs again; null when dead. */
  runAt: Date | null;
}

/** The outcome of one ack of `ackBatch`. */
export interface AckResult {
  /**
   * `ok`, or why the ack failed: the job is not leased (`not_found`), leased
   * again (`lease_lost`), or was cancelled while it ran (`cancelled`: it is
   * cancelled now, not completed).
   */
  outcome: 'ok' | 'not_found' | 'lease_lost' | 'cancelled';
  /** Why it failed, for people; empty when ok. */
  message: string;
}

/** The error of one failed attempt. */
export interface AttemptError {
  /** The attempt that failed (1 = first delivery). */
  attempt: number;
  /** When it failed. */
  at: Date;
  /** The worker's error message, or the server's note that the lease expired. */
  error: string;
}

/** Retry delays for nacks without their own delay: baseMs × factor^(attempt − 1), capped, ± jitter. */
export interface BackoffSettings {
  /** Delay before the second attempt, in ms. */
  baseMs: number;
  /** Each further attempt waits this many times longer. */
  factor: number;
  /** Longest retry delay, in ms. */
  capMs: number;
  /** Random spread as a fraction of the delay (0.2 = ± 20 %). */
  jitter: number;
}

/** A queue's effective settings. */
export interface QueueSettings {
  /** Deliveries before a job goes dead. */
  maxAttempts: number;
  /** Retry delays for nacks without their own delay. */
  backoff: BackoffSettings;
  /** Lease length when a reserve asks for none, in ms. */
  defaultLeaseMs: number;
  /** Longest lease, in ms. */
  maxLeaseMs: number;
  /** Largest payload accepted, in bytes. */
  maxPayloadBytes: number;
  /** Unfinished jobs above which enqueue is refused (`queue_full`); 0 = no limit. */
  maxDepth: number;
  /** How long an idempotency key is remembered, in ms. */
  dedupWindowMs: number;
  /** How long dead letters are kept, in ms. */
  deadRetentionMs: number;
  /** How long acked jobs are kept as `completed`, in ms; 0 deletes them on ack. */
  completedRetentionMs: number;
  /** How long cancelled jobs are kept, in ms. */
  cancelledRetentionMs: number;
  /** What happens to a job whose expiry passes before it started: dead-lettered (reason `expired`) or deleted. */
  expiredAction: 'dead_letter' | 'delete';
  /** Job types this queue accepts; empty means any. */
  allowedTypes: string[];
  /** Jobs of the queue leased at once, across every worker; 0 = no limit. */
  maxLeased: number;
  /** How fast leases of the queue may start; `leases` 0 = no rate limit. */
  rateLimit: RateLimit;
  /** Jobs of one group leased at once; 0 = no limit. */
  groupMaxLeased: number;
  /** How fast leases of one group may start. */
  groupRateLimit: RateLimit;
}

/** A rate limit: `leases` leases per `periodMs`, evenly spread, up to `burst` back to back. */
export interface RateLimit {
  /** Leases per period; 0 = no rate limit. */
  leases: number;
  /** The period, in ms. */
  periodMs: number;
  /** Most leases that may start back to back. */
  burst: number;
}

/** Jobs on a queue by state. */
export interface StateCounts {
  /** Waiting for their run-at time. */
  scheduled: number;
  /** Due and waiting for a worker. */
  ready: number;
  /** Held by workers. */
  leased: number;
  /** Acked and retained (only queues that retain completed jobs). */
  completed: number;
  /** Dead letters. */
  dead: number;
  /** Cancelled and kept for the queue's cancelled retention. */
  cancelled: number;
}

/** One queue as `listQueues` reports it. */
export interface QueueInfo {
  /** The queue's name. */
  name: string;
  /** True while paused: it hands out no jobs, enqueue still works. */
  paused: boolean;
  /** Jobs by state. */
  counts: StateCounts;
  /** How long the oldest ready job has been due, in ms; null when none is ready. */
  oldestReadyAgeMs: number | null;
  /**
   * Reserve calls and Work streams waiting on this queue right now (not
   * workers: an SDK Worker holds two Work streams, and a worker waiting on
   * several queues counts on each).
   */
  waitingWorkers: number;
  /** Of those, the ones a limit (max_leased, a rate limit, group limits) holds back from ready jobs. */
  throttledWorkers: number;
  /** Groups with ready jobs, counted up to 1,000 (`readyGroupsCapped`: there are more). */
  readyGroups: number;
  /** True when there are more groups with ready jobs than `readyGroups`. */
  readyGroupsCapped: boolean;
  /** The queue's effective settings. */
  settings: QueueSettings;
  /** Every setting by its config-file name, with its value and where the value comes from. */
  settingValues: QueueSettingValue[];
}

/**
 * Where a queue's setting comes from, lowest precedence first: sepp's built-in
 * default, the config file's [queue_defaults], its [queues.NAME], or a
 * run-time override (`setQueueSettings`).
 */
export type SettingSource = 'default' | 'queue_defaults' | 'queue' | 'override';

/** One setting of a queue. */
export interface QueueSettingValue {
  /** As in the config file: `max_attempts`, `backoff_base_ms`. */
  key: string;
  /** The effective value, in the unit the name says (ms, bytes). */
  value: unknown;
  source: SettingSource;
  /** The value without the run-time override: what `resetQueueSettings` gives back. */
  fileValue: unknown;
}

/** What a config reload did or, as a dry run, would do. */
export interface ReloadReport {
  /** True when the new settings are in force (never for a dry run or a refused file). */
  applied: boolean;
  /** Settings that change without a restart, e.g. `server.log_level`, `grpc.api_keys (added deploy)`. */
  changed: string[];
  /** Settings that differ in the file but keep their running values until a restart. */
  restartRequired: string[];
  /** Why the file was refused (then nothing changed). */
  problems: { key: string; message: string }[];
  /** The file the server read; null when it runs without one. */
  configFile: string | null;
}

/** One connected worker as `listWorkers` reports it. */
export interface WorkerInfo {
  /** The worker id it gave, or `(none)`. */
  workerId: string;
  /** Its address as the server sees it, e.g. `127.0.0.1:53122`. */
  address: string;
  /** Its streams (or Reserve callers) from that address with that worker id, listed as one: an SDK Worker opens two. */
  connections: number;
  /** `work_stream`: an open Work stream (the Worker); `reserve`: Reserve calls. */
  transport: 'work_stream' | 'reserve';
  /** The queues it takes jobs from. */
  queues: string[];
  /** When its stream began (Reserve callers: its first listed call), ms since the epoch. */
  connectedAtMs: number;
  /** Its last reserve, settlement or credit, ms since the epoch. */
  lastSeenAtMs: number;
  /** Jobs leased under its worker id now. */
  jobsHeld: number;
  /** When the oldest of those leases began, ms since the epoch; null when it holds none. */
  oldestLeaseAtMs: number | null;
}

/** Every server-wide limit in effect (see admin.proto for each one's meaning). */
export interface ServerLimits {
  /** Longest queue name and job type, in characters. */
  maxNameLength: number;
  /** Largest metadata map (keys and values), in bytes. */
  maxMetadataBytes: number;
  /** Most metadata entries per job. */
  maxMetadataEntries: number;
  /** Longest idempotency key, in bytes. */
  maxIdempotencyKeyBytes: number;
  /** Longest worker id, in bytes. */
  maxWorkerIdBytes: number;
  /** Error messages longer than this are truncated, in bytes. */
  maxErrorBytes: number;
  /** Errors kept per job. */
  maxErrorHistory: number;
  /** Jobs per enqueue batch or Produce message, and ids per dead-letter requeue or delete. */
  maxBatchJobs: number;
  /** Jobs per reserve, acks per AckBatch, unused credit per Work stream. */
  maxReserveJobs: number;
  /** How far ahead a job may be scheduled, in ms. */
  maxScheduleAheadMs: number;
  /** Longest reserve wait, in ms. */
  maxWaitMs: number;
  /** Long polls waiting at once. */
  maxWaiters: number;
  /** Largest page of a listing. */
  maxPageSize: number;
  /** Largest gRPC message, in bytes. */
  maxMessageBytes: number;
  /** Queues one reserve or Work subscription may name. */
  maxReserveQueues: number;
  /** Schedules the server keeps (config and API together). */
  maxSchedules: number;
  /** Connections the server keeps open at once. */
  maxConnections: number;
  /** Calls open at once on one connection. */
  maxStreamsPerConnection: number;
  /** A new connection must open its first call within this, in ms. */
  handshakeTimeoutMs: number;
  /** A connection with no call open for this long is closed, in ms. */
  idleTimeoutMs: number;
  /** Largest result an ack may carry, in bytes. */
  maxResultBytes: number;
  /** Largest progress document (JSON) a worker may report, in bytes. */
  maxProgressBytes: number;
  /** Events streams open at once (0: events are off). */
  maxEventSubscribers: number;
  /** Events the server keeps for subscribers to catch up or resume… */
  eventBacklogEvents: number;
  /** …and their bytes at most. */
  eventBacklogBytes: number;
  /** How long the backlog keeps recording after the last subscriber left, in ms. */
  eventResumeWindowMs: number;
}

/** The server's version, clock, durability and limits. */
export interface ServerInfo {
  /** sepp's version. */
  version: string;
  /** The git commit the server was built from; empty if unknown. */
  gitCommit: string;
  /** `full`: every commit fsync'd before any reply; `relaxed`: survives a process crash, not a power cut. */
  durability: 'full' | 'relaxed' | 'unknown';
  /** The server's clock when it answered. */
  serverTime: Date;
  /** When the server started. */
  startedAt: Date;
  /** Every server-wide limit. */
  limits: ServerLimits;
  /** The settings a queue gets unless configured otherwise. */
  queueDefaults: QueueSettings;
  /** True when only declared queues accept jobs. */
  strictQueues: boolean;
}

/** Which dead letters to list. */
export interface DeadLetterQuery extends CallOptions {
  /** Only dead letters with this reason. */
  reason?: DeadReason;
  /** Most jobs per page (default 100). */
  pageSize?: number;
  /** `nextPageToken` of the previous page. */
  pageToken?: string;
}

/** Which dead letters to requeue or delete: these ids, or every one of the queue. */
export type DeadLetterSelection = readonly string[] | 'all';

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
  /** With `dryRun`: the jobs a cancel would change now; 0 otherwise. */
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
