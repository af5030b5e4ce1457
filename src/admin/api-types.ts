/**
 * The admin API's JSON shapes in one place: the routes answer with these, the
 * OpenAPI document describes them (schemas.ts), and the UI imports them
 * (ui/src/types.ts) instead of keeping copies. Types only, built from the
 * engine's own types, and only from modules the browser's type check can
 * read (no Node.js APIs): keep it that way, `npm run typecheck` checks the UI
 * against this file.
 */

import type { ConfigEntry } from '../config/config-entry.ts';
import type {
  AuditEntry,
  BrowseState,
  JobBrowsePage,
  JobSearchResult,
  JobSummary,
  TopErrors,
  WorkerInfo,
} from '../engine/admin-types.ts';
import type { HistoryAnswer, HistoryWindow } from '../engine/history/types.ts';
import type { ScheduleInfo, ScheduleRun } from '../engine/schedules/types.ts';
import type { SettingSource } from '../engine/settings.ts';
import type { DeadReason, JobInfo, JobLink, JobState, QueueInfo, StateCounts } from '../engine/types.ts';
import type { BatchInfo, BatchMember, FlowGraph, WorkflowCancelResult } from '../engine/workflow-types.ts';

export type {
  AuditEntry,
  BatchInfo,
  BrowseState,
  ConfigEntry,
  DeadReason,
  FlowGraph,
  JobBrowsePage,
  JobLink,
  JobSearchResult,
  JobState,
  JobSummary,
  QueueInfo,
  SettingSource,
  StateCounts,
  TopErrors,
  WorkerInfo,
  WorkflowCancelResult,
};

/** A page of batches, newest first (GET /api/v1/batches). */
export interface BatchList {
  batches: BatchInfo[];
  /** The cursor of the next page; null at the end. */
  nextCursor: string | null;
}

/** A batch as GET /api/v1/batches/{id} answers: its counts and a page of its members. */
export interface BatchPage {
  batch: BatchInfo;
  members: (BatchMember & { position: number })[];
  /** The cursor of the next page of members; null at the end. */
  nextCursor: string | null;
}

/** One setting of a queue, by its config-file name (`max_attempts`); queue-view.ts builds it. */
export interface SettingValueView {
  key: string;
  value: unknown;
  /** As one would type it (`30s`, `1MiB`, `["send"]`): what the edit form starts from. */
  text: string;
  source: SettingSource;
  /** The config file's value, which a reset gives back. */
  fileValue: unknown;
  fileText: string;
  /** What the value does where the number alone does not say it (`no limit`, `not kept: deleted on ack`); else null. */
  meaning: string | null;
  /** The setting this one takes its value from because it is not set itself (`rate_limit_leases`); else null. */
  derivedFrom: string | null;
}

/** A queue as the admin API shows it (GET /api/v1/queues, the overview): with every setting's value and source. */
export type QueueView = QueueInfo & { settingValues: SettingValueView[] };

/** viewer < operator < admin: each role can do everything the one before it can. */
export type AdminRole = 'viewer' | 'operator' | 'admin';

/** GET /api/v1/session (and the login's answer). */
export interface SessionInfo {
  authenticated: boolean;
  /** Login is off (loopback only): everyone is `anonymous` with the admin role. */
  open: boolean;
  user: string | null;
  role: AdminRole | null;
  /** Send it back as X-CSRF-Token on every change. */
  csrfToken: string | null;
  expiresAtMs: number | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  /** Jobs in the list, when the counters know it. */
  total?: number | null;
}

/** A job's payload shown to a person: JSON pretty-printed, text, or a hex dump (the first 64 KiB). */
export interface PayloadView {
  /** How `text` shows the payload. */
  view: 'json' | 'text' | 'hex';
  text: string;
  /** The payload's full size. */
  bytes: number;
  /** True when only the first 64 KiB are shown. */
  truncated: boolean;
}

export interface TimelineEvent {
  atMs: number;
  event:
    | 'enqueued'
    | 'due'
    | 'attempt_failed'
    /** The attempt a cancel ended (the worker stopped, or its lease ran out): not a failure. */
    | 'attempt_stopped'
    | 'leased'
    | 'progress'
    | 'lease_deadline'
    /** When the running attempt must end (its hard timeout, timeout_ms). */
    | 'timeout'
    | 'dead'
    | 'completed'
    | 'expires'
    | 'cancel_requested'
    | 'cancelled';
  detail: string;
}

/** GET /api/v1/schedules (payload null) and /api/v1/schedules/{name}: the job's payload as a view. */
export interface ScheduleView extends Omit<ScheduleInfo, 'template'> {
  template: Omit<ScheduleInfo['template'], 'payload'> & { payload: PayloadView | null };
}

/** GET /api/v1/jobs/{id}. */
export interface JobDetail extends Omit<JobInfo, 'payload' | 'result' | 'resultContentType' | 'errors'> {
  /** Each attempt's error; `stoppedByCancel`: the error is how a cancel ended the attempt, not a failure. */
  errors: (JobInfo['errors'][number] & { stoppedByCancel: boolean })[];
  payload: PayloadView;
  /** The completed job's result, shown as the payload is (with its content type); null without one. */
  result: (PayloadView & { contentType: string }) | null;
  timeline: TimelineEvent[];
}

export const rateKinds = ['enqueued', 'reserved', 'acked', 'nacked', 'dead', 'expired'] as const;
export type RateKind = (typeof rateKinds)[number];

export const rateWindows = { '5m': 5 * 60_000, '1h': 60 * 60_000, '24h': 24 * 60 * 60_000 } as const;
export type RateWindow = keyof typeof rateWindows;

export interface QueueRates {
  /** Jobs per second over the window, per kind. */
  perSecond: Record<RateKind, number>;
  /** From due to leased, over the jobs leased in the window: mean and longest, ms; null when none was leased. */
  avgWaitMs: number | null;
  maxWaitMs: number | null;
}

export interface RateSnapshot {
  window: RateWindow;
  windowMs: number;
  bucketMs: number;
  /** Start of the first bucket of `series`, ms since epoch. */
  startMs: number;
  /**
   * Jobs per finished bucket, oldest first, one array per kind (the bucket in progress is
   * left out); null for a bucket that ended before the server started: no data, not zero.
   */
  series: Record<RateKind, (number | null)[]>;
  /** Jobs since the server started, per kind. */
  totals: Record<RateKind, number>;
  /** How much of the window the rates cover (less than the window while the server is younger). */
  coveredMs: number;
  /** The rates cover [coveredFromMs, now): the window's start, or the server's start when later. */
  coveredFromMs: number;
  /** The whole server's rates over the window. */
  current: QueueRates;
  /** Each queue's rates over the window (queues with no event in the last day are absent). */
  queues: Record<string, QueueRates>;
}

/** The server facts the dashboard shows. */
export interface ServerFacts {
  version: string;
  commit: string | null;
  startedAtMs: number;
  uptimeMs: number;
  serverTimeMs: number;
  durability: 'full' | 'relaxed';
  dbBytes: number;
  walBytes: number;
  /**
   * The store the jobs are kept in (for PostgreSQL: where; never a password). For a viewer its
   * kind alone, the rest null: where it is, its replication and bounds are for the operator role up.
   */
  store: StoreFacts;
  /**
   * Which server process answered: servers sharing one PostgreSQL are told apart by it. Null for
   * a viewer: the machine's name, pid and addresses are shown from the operator role up.
   */
  identity: ServerIdentityFacts | null;
  /** The protocol features this server has that older ones lack (GetServerInfo's `features`). */
  features: string[];
}

/** The server process: its machine, a random id made at its start, the addresses it bound; no secret. */
export interface ServerIdentityFacts {
  hostName: string;
  instanceId: string;
  pid: number;
  /** host:port as bound; http null when the HTTP API is off. */
  grpcAddress: string;
  adminAddress: string;
  httpAddress: string | null;
}

/** Which store the server runs on; host, database and schema are null for SQLite. */
export interface StoreFacts {
  kind: string;
  host: string | null;
  database: string | null;
  schema: string | null;
  /** PostgreSQL: whether this server hears the other servers' signals now (else it polls). */
  signalsConnected: boolean | null;
  /** PostgreSQL: the primary's replication (synchronous, asynchronous, none) when last connected. */
  replication: 'synchronous' | 'asynchronous' | 'none' | null;
  /** PostgreSQL: the standbys streaming from the primary then. */
  standbys: number | null;
  /** PostgreSQL: store.pool_size, store.max_waiting_reads, store.max_waiting_reads_per_key, store.statement_timeout_ms. */
  poolSize: number | null;
  maxWaitingReads: number | null;
  maxWaitingReadsPerKey: number | null;
  statementTimeoutMs: number | null;
}

/**
 * The store's health as this server sees it (its maintenance passes, retried each second
 * while they fail, and the overview's own reads): available, or unavailable since the first
 * failure of this outage. Unavailable, it is why the overview's totals, queueCount and
 * queues are null when they are.
 */
export interface StoreHealth {
  available: boolean;
  /**
   * When the outage began (its first failed maintenance pass), ms since the epoch; null while
   * available, and while only the overview's own read has failed (no pass has yet).
   */
  unavailableSinceMs: number | null;
  /** The latest failure's message (a pass's, or the overview's read's); null while available. */
  lastError: string | null;
  /** Failed maintenance passes in this outage; 0 while available. */
  failures: number;
}

/**
 * GET /api/v1/overview: the dashboard. It answers while the store is unavailable: what the
 * server knows without it (its facts, the store's health, waiting workers, rates), and the
 * parts read from the store null, with `storeHealth` unavailable saying why.
 */
export interface Overview {
  server: ServerFacts;
  /** Unavailable when the store did not answer this request's read, or maintenance's passes. */
  storeHealth: StoreHealth;
  totals: StateCounts | null;
  waitingWorkers: number;
  /** Queues there are in all. */
  queueCount: number | null;
  /** One page of them, in name order (`page_size`, default limits.max_page_size). */
  queues: QueueView[] | null;
  /** page_token of the next page of queues; null on the last (and while the store is unavailable). */
  nextPageToken: string | null;
  rates: RateSnapshot;
}

/** GET /api/v1/workers. */
export interface WorkersAnswer {
  workers: WorkerInfo[];
  waitingReserves: number;
}

/**
 * A push queue's delivery status (docs/http.md#push-delivery), on its queue
 * page: the target, open deliveries, counts, the latest failures and the
 * delivery latency. `GET /api/v1/queues/{queue}/push`; null when the queue
 * does not push. src/push makes it (app.ts hands it over).
 */
export interface PushStatusView {
  /** The target URL without credentials or query. */
  url: string;
  running: boolean;
  inFlight: number;
  maxInFlight: number;
  delivered: number;
  failed: number;
  resultsDropped: number;
  lastSuccessAtMs: number | null;
  lastErrors: { atMs: number; jobId: string; attempt: number; error: string }[];
  latency: { samples: number; p50Ms: number; p95Ms: number; maxMs: number } | null;
}

/** GET /api/v1/history: the job history that survives a restart (src/engine/history/). */
/** GET /api/v1/schedules/{name}/runs: a schedule's latest runs. */
export type { HistoryAnswer, HistoryWindow, ScheduleRun };
