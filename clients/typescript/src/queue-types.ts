/**
 * What the SDK says about queues and the server: settings with their sources,
 * counts, connected workers, limits, dead-letter pages, reload reports.
 */
import type { CallOptions, DeadReason } from './job-types.ts';

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
  /** Hard execution timeout of an attempt of a job that gives none (`executionTimeoutMs`), in ms; 0 = none. */
  defaultTimeoutMs: number;
  /** Priority aging: a ready job counts one priority higher for every this many ms it has waited; 0 = off. */
  priorityAgingMs: number;
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
  /**
   * When the queue's enqueues, leases and settlements are answered: after an fsync
   * (`full`), before one (`relaxed`: they survive a crash of the server process, not a
   * power cut), or as the server's durability says (`server`).
   */
  durability: 'server' | 'full' | 'relaxed';
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
  /** Waiting for the jobs they depend on to end (workflows); 0 from a server older than this count. */
  waiting: number;
}

/** Which page of queues `client.queues.listPage` reads. */
export interface QueuePageOptions extends CallOptions {
  /** Queues per page; default 100, at most the server's `max_page_size`. */
  pageSize?: number;
  /** `nextPageToken` of the previous page; '' or unset for the first. */
  pageToken?: string;
}

/** One page of queues, in name order. */
export interface QueuePage {
  queues: QueueInfo[];
  /** Pass as `pageToken` for the next page; '' on the last page. */
  nextPageToken: string;
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
   * workers: an SDK Worker holds one Work stream per 1,000 slots, and a worker
   * waiting on several queues counts on each).
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
  /**
   * Every setting of `changed` and then of `restartRequired`, with its running and new value.
   * Empty from a server that predates it (then only the names above are known). For a refused
   * file that loads (`problems` set), what it would have changed, while the lists above stay empty.
   */
  changes: SettingChange[];
  /** Why the file was refused (then nothing changed). */
  problems: { key: string; message: string }[];
  /** The file the server read; null when it runs without one. */
  configFile: string | null;
  /**
   * What the file lowers security by, e.g. `grpc.tls`, `engine.strict_queues (from true to false)`,
   * `grpc.api_keys (deploy: its role goes from producer to admin)` (names and roles, never a
   * secret): on a reload applied (or dry run) with `allowSecurityDowngrade`, and on a refusal for
   * it. Empty otherwise, and from a server that predates it.
   */
  securityDowngrades: string[];
}

/**
 * One setting a config reload changes (or, as a dry run, would change). Either its two values
 * are given, or a `summary` instead: a secret's value is never sent.
 */
export interface SettingChange {
  /** The TOML key, e.g. `server.log_level`; a list (`grpc.api_keys`); a queue (`queues.emails`). */
  key: string;
  /** The running value as text in plain units (`30s`, `not set`); null when `summary` is given. */
  oldValue: string | null;
  /** The new value, the same way; null when `summary` is given. */
  newValue: string | null;
  /** `changed` for a secret, e.g. `added deploy; removed ci` for a list, `declared` for a queue; else null. */
  summary: string | null;
  /** True when the new value waits for a restart; false when it is in force now (or would be). */
  restartRequired: boolean;
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
  /**
   * Attempts of its worker id that completed and failed over the last `recentWindowMs`
   * (15 minutes), counted in memory since the server started.
   */
  completedRecent: number;
  failedRecent: number;
  recentWindowMs: number;
}

/** Which page of the connected workers to read (`listWorkersPage`). */
export interface WorkerPageOptions extends CallOptions {
  /** Workers per page; default 100, at most the server's `max_page_size`. */
  pageSize?: number;
  /** `nextPageToken` of the previous page; '' or unset for the first. */
  pageToken?: string;
}

/** One page of the connected workers, ordered by worker id, transport and address. */
export interface WorkerPage {
  workers: WorkerInfo[];
  /**
   * Reserve long-polls and Work streams waiting for jobs now, on every queue
   * (0 for a key held to some queues, which may not see the others').
   */
  waitingReserves: number;
  /** Pass as `pageToken` for the next page; '' on the last page. */
  nextPageToken: string;
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
  /** Queues that may exist at once; a job for a new queue beyond it is refused (unknown_queue). */
  maxQueues: number;
  /** Connections the server keeps open at once. */
  maxConnections: number;
  /** Calls open at once on one connection. */
  maxStreamsPerConnection: number;
  /** A new connection must open its first call within this, in ms. */
  handshakeTimeoutMs: number;
  /** A connection with no call open for this long is closed, in ms. */
  idleTimeoutMs: number;
  /**
   * The server pings every connection this long after its last ping was answered, in ms
   * (grpc.keepalive_ms; the value it started with: a reload does not change it). A client
   * may pick its own `keepaliveMs` from it. 0 from a server that predates the field (it does
   * not say): not a value to connect with (`keepaliveMs` is positive), keep your own then.
   */
  keepaliveMs: number;
  /**
   * A server ping unanswered this long closes the connection, in ms (grpc.keepalive_timeout_ms,
   * as it started); 0 from a server that predates the field.
   */
  keepaliveTimeoutMs: number;
  /** A call must send its first message within this, in ms (grpc.first_message_timeout_ms). */
  firstMessageTimeoutMs: number;
  /** Largest result an ack may carry, in bytes. */
  maxResultBytes: number;
  /** Largest progress document (JSON) a worker may report, in bytes. */
  maxProgressBytes: number;
  /** Events streams open at once (0: events are off). */
  maxEventSubscribers: number;
  /** Events streams one API key may hold at once (not applied without keys). */
  maxEventSubscribersPerKey: number;
  /** Request bytes one connection may have in flight; more waits until they fit. */
  maxBytesInFlightPerConnection: number;
  /** Request bytes all connections of one API key may have in flight. */
  maxBytesInFlightPerKey: number;
  /** Events the server keeps for subscribers to catch up or resume… */
  eventBacklogEvents: number;
  /** …and their bytes at most. */
  eventBacklogBytes: number;
  /** How long the backlog keeps recording after the last subscriber left, in ms. */
  eventResumeWindowMs: number;
  /** How long the outcome of a job deleted as it finished is kept for `getJob` and `waitFor` (`Job.outcomeOnly`), in ms; 0: none. */
  finishedOutcomeMs: number;
  /** Jobs one job may name in `dependsOn`. */
  maxDependenciesPerJob: number;
  /** Jobs in one flow (`enqueueFlow`). */
  maxFlowJobs: number;
  /** The longest chain of jobs in one flow. */
  maxFlowDepth: number;
  /** Results of its dependencies handed to a leased job, in bytes together; above it, ids only. */
  maxDependencyResultsBytes: number;
  /** Batches not ended one API key may hold; one more is refused (RESOURCE_EXHAUSTED). */
  maxOpenBatchesPerKey: number;
  /** How long an ended batch is kept before the server deletes it (limits.batch_retention_ms). */
  batchRetentionMs: number;
  /**
   * Jobs that may depend on one job (name it in `dependsOn` or run after it in a flow); an
   * enqueue that would give it more is refused (`invalid_job`). 0 from a server that predates it.
   */
  maxDependentsPerJob: number;
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
  /** The store the server keeps its jobs in, and (PostgreSQL) where; never a password. */
  store: StoreInfo;
  /**
   * Which server process answered: servers sharing one PostgreSQL behind a load balancer
   * are told apart by it (with `startedAt`). Empty strings and 0 from a server that predates it,
   * and for a key other than an admin key for every queue (docs/protocol.md).
   */
  identity: ServerIdentity;
  /**
   * Protocol features this server has that older ones lack (`nack_give_back`,
   * `work_stop_delivery`; docs/protocol.md, "Features"); empty from an older server.
   */
  features: string[];
}

/** The server process that answered; nothing in it is a secret. */
export interface ServerIdentity {
  /** The machine's host name. */
  hostName: string;
  /** Made at random when the process started: the same one means the same process. */
  instanceId: string;
  /** The process id on that machine. */
  pid: number;
  /** The addresses it listens on, as `host:port` with the ports it bound; `httpAddress` is empty when the HTTP API is off. */
  grpcAddress: string;
  adminAddress: string;
  httpAddress: string;
}

/**
 * Which store a server runs on. For a key other than an admin key for every queue, the `kind`
 * alone (the rest empty and 0, as for SQLite: docs/protocol.md).
 */
export interface StoreInfo {
  /** `sqlite` (embedded, the default) or `postgres`. */
  kind: string;
  /** PostgreSQL: `host:port` of the database server; empty for SQLite. */
  host: string;
  /** PostgreSQL: the database and the schema of sepp's tables; empty for SQLite. */
  database: string;
  schema: string;
  /** PostgreSQL: whether the server hears the other servers' signals now (else it polls once a second). */
  signalsConnected: boolean;
  /**
   * PostgreSQL: the primary's replication when the server last connected to it:
   * `synchronous` (a failover loses nothing acknowledged), `asynchronous` or `none`; empty for SQLite.
   */
  replication: string;
  /** PostgreSQL: the standbys streaming from the primary then. */
  standbys: number;
  /** PostgreSQL: this server's connections, one writer and the rest for reads (store.pool_size); 0 for SQLite. */
  poolSize: number;
  /** PostgreSQL: reads that may wait for a read connection at once (store.max_waiting_reads); 0 for SQLite. */
  maxWaitingReads: number;
  /** PostgreSQL: read calls one API key may have in flight while reads wait (store.max_waiting_reads_per_key); 0 for SQLite. */
  maxWaitingReadsPerKey: number;
  /** PostgreSQL: the longest a statement may run (store.statement_timeout_ms); 0 for SQLite. */
  statementTimeoutMs: number;
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
