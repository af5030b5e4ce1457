/**
 * Per-queue settings and server-wide limits, with their defaults. Every limit
 * has a name, a unit and a default here; GetServerInfo reports them all.
 */
import type { ScheduleSpec } from './schedules/types.ts';

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

export interface BackoffSettings {
  /** Delay before the second attempt. */
  baseMs: number;
  /** Each further attempt waits `factor` times longer. */
  factor: number;
  /** No retry waits longer than this. */
  capMs: number;
  /** Random spread, as a fraction of the delay (0.2 = ±20 %). */
  jitter: number;
}

/**
 * A token bucket: `leases` leases may start per `periodMs`, tokens accruing
 * evenly over the period; after a quiet spell up to `burst` may start at once.
 */
export interface RateLimitSettings {
  /** Leases per period; 0 = no rate limit. */
  leases: number;
  /** The period the `leases` are counted over. */
  periodMs: number;
  /** Most tokens the bucket holds (leases that may start back to back); 0 = `leases`. */
  burst: number;
}

export interface QueueSettings {
  /** Deliveries before a job is dead-lettered (reason `attempts_exhausted`). */
  maxAttempts: number;
  backoff: BackoffSettings;
  /** Lease length when a reserve does not ask for one. */
  defaultLeaseMs: number;
  /** Requested leases are clamped to this. */
  maxLeaseMs: number;
  /**
   * Hard execution timeout of an attempt of a job that gives none (`timeout_ms`), counted
   * from the lease by the server's clock: the attempt then ends failed (reason `timeout`),
   * whatever its extends; 0 = none.
   */
  defaultTimeoutMs: number;
  /**
   * Priority aging: a ready job without a group counts one priority level higher for every
   * this many ms it has been due, so a steady flow of high-priority jobs cannot starve low
   * ones (flow-control/ungrouped-lease.ts); 0 = off, strict priority.
   */
  priorityAgingMs: number;
  /** Largest payload accepted, in bytes. */
  maxPayloadBytes: number;
  /** Jobs not yet finished (scheduled + ready + leased) above which enqueue is refused; 0 = no limit. */
  maxDepth: number;
  /** How long an idempotency key is remembered. */
  dedupWindowMs: number;
  /** How long dead letters are kept before they are deleted. */
  deadRetentionMs: number;
  /** How long acked jobs are kept in state `completed`; 0 deletes them on ack. */
  completedRetentionMs: number;
  /** How long cancelled jobs are kept (with who cancelled them and when) before they are deleted. */
  cancelledRetentionMs: number;
  /** What happens to a job whose expiry passes before it started: dead-lettered (reason `expired`) or deleted. */
  expiredAction: ExpiredAction;
  /** Job types accepted on this queue; empty = any type. */
  allowedTypes: readonly string[];
  /** Jobs of the queue leased at once, across every worker and transport; 0 = no limit (docs/flow-control.md). */
  maxLeased: number;
  /** How fast leases of the queue may start. */
  rateLimit: RateLimitSettings;
  /** Jobs of one group leased at once; 0 = no limit. */
  groupMaxLeased: number;
  /** How fast leases of one group may start (a bucket per group). */
  groupRateLimit: RateLimitSettings;
  /**
   * Whether the queue's enqueues, leases and settlements are fsync'd before they
   * are answered (`full`), or may be answered first (`relaxed`: they survive a crash
   * of the process, not a power cut); `server`: as `server.durability` says.
   */
  durability: QueueDurability;
}

export const queueDurabilities = ['server', 'full', 'relaxed'] as const;
export type QueueDurability = (typeof queueDurabilities)[number];

export const expiredActions = ['dead_letter', 'delete'] as const;
export type ExpiredAction = (typeof expiredActions)[number];

/** No rate limit. */
export const noRateLimit: Readonly<RateLimitSettings> = Object.freeze({
  leases: 0,
  periodMs: 1000,
  burst: 0,
});

export const defaultQueueSettings: Readonly<QueueSettings> = Object.freeze({
  maxAttempts: 5,
  backoff: Object.freeze({ baseMs: 1 * SECOND_MS, factor: 2, capMs: 1 * HOUR_MS, jitter: 0.2 }),
  defaultLeaseMs: 30 * SECOND_MS,
  maxLeaseMs: 12 * HOUR_MS,
  defaultTimeoutMs: 0,
  priorityAgingMs: 0,
  maxPayloadBytes: 1024 * 1024,
  maxDepth: 0,
  dedupWindowMs: 1 * DAY_MS,
  deadRetentionMs: 14 * DAY_MS,
  completedRetentionMs: 0,
  cancelledRetentionMs: 14 * DAY_MS,
  expiredAction: 'dead_letter',
  allowedTypes: Object.freeze([]) as readonly string[],
  maxLeased: 0,
  rateLimit: noRateLimit,
  groupMaxLeased: 0,
  groupRateLimit: noRateLimit,
  durability: 'server',
});

/** Ranges that configured queue settings must fall in (config validation uses them). */
export const queueSettingRanges = {
  maxAttempts: { min: 1, max: 1000 },
  defaultLeaseMs: { min: 1 * SECOND_MS, max: 7 * DAY_MS },
  maxLeaseMs: { min: 1 * SECOND_MS, max: 7 * DAY_MS },
  defaultTimeoutMs: { min: 0, max: 30 * DAY_MS },
  priorityAgingMs: { min: 0, max: 30 * DAY_MS },
  maxPayloadBytes: { min: 1, max: 64 * 1024 * 1024 },
  maxDepth: { min: 0, max: Number.MAX_SAFE_INTEGER },
  dedupWindowMs: { min: 0, max: 30 * DAY_MS },
  deadRetentionMs: { min: 0, max: 3650 * DAY_MS },
  completedRetentionMs: { min: 0, max: 3650 * DAY_MS },
  cancelledRetentionMs: { min: 0, max: 3650 * DAY_MS },
  backoffBaseMs: { min: 0, max: 7 * DAY_MS },
  backoffFactor: { min: 1, max: 100 },
  backoffCapMs: { min: 0, max: 30 * DAY_MS },
  backoffJitter: { min: 0, max: 1 },
  maxLeased: { min: 0, max: 1_000_000 },
  groupMaxLeased: { min: 0, max: 1_000_000 },
  rateLimitLeases: { min: 0, max: 1_000_000 },
  rateLimitPeriodMs: { min: 1, max: 1 * DAY_MS },
  rateLimitBurst: { min: 0, max: 1_000_000 },
} as const;

/**
 * Queue settings as the config file and the run-time overrides name them:
 * flat, with the backoff fields prefixed (`backoffBaseMs`), so every setting is
 * one key (`backoff_base_ms` in TOML). Derived from QueueSettings, so a setting
 * added there is a key here too.
 */
export type QueueSettingsFlat = Readonly<
  Omit<QueueSettings, 'backoff' | 'rateLimit' | 'groupRateLimit'> & {
    backoffBaseMs: number;
    backoffFactor: number;
    backoffCapMs: number;
    backoffJitter: number;
    rateLimitLeases: number;
    rateLimitPeriodMs: number;
    rateLimitBurst: number;
    groupRateLimitLeases: number;
    groupRateLimitPeriodMs: number;
    groupRateLimitBurst: number;
  }
>;

/** One queue setting, as its camelCase key (`maxAttempts`); its TOML name is the snake_case form. */
export type QueueSettingKey = keyof QueueSettingsFlat;

export function flattenQueueSettings(settings: QueueSettings): QueueSettingsFlat {
  const { backoff, maxAttempts, rateLimit, groupRateLimit, maxLeased, groupMaxLeased, ...rest } = settings;
  // Keys in the order the config file lists them: max_attempts, the backoff,
  // the rest, then flow control (queue limits, then group limits).
  return {
    maxAttempts,
    backoffBaseMs: backoff.baseMs,
    backoffFactor: backoff.factor,
    backoffCapMs: backoff.capMs,
    backoffJitter: backoff.jitter,
    ...rest,
    maxLeased,
    rateLimitLeases: rateLimit.leases,
    rateLimitPeriodMs: rateLimit.periodMs,
    rateLimitBurst: rateLimit.burst,
    groupMaxLeased,
    groupRateLimitLeases: groupRateLimit.leases,
    groupRateLimitPeriodMs: groupRateLimit.periodMs,
    groupRateLimitBurst: groupRateLimit.burst,
  };
}

export function nestQueueSettings(flat: QueueSettingsFlat): QueueSettings {
  const {
    backoffBaseMs,
    backoffFactor,
    backoffCapMs,
    backoffJitter,
    rateLimitLeases,
    rateLimitPeriodMs,
    rateLimitBurst,
    groupRateLimitLeases,
    groupRateLimitPeriodMs,
    groupRateLimitBurst,
    ...rest
  } = flat;
  return {
    ...rest,
    backoff: { baseMs: backoffBaseMs, factor: backoffFactor, capMs: backoffCapMs, jitter: backoffJitter },
    // A burst of 0 means "one period's worth": the effective settings say how many.
    rateLimit: {
      leases: rateLimitLeases,
      periodMs: rateLimitPeriodMs,
      burst: rateLimitBurst === 0 ? rateLimitLeases : rateLimitBurst,
    },
    groupRateLimit: {
      leases: groupRateLimitLeases,
      periodMs: groupRateLimitPeriodMs,
      burst: groupRateLimitBurst === 0 ? groupRateLimitLeases : groupRateLimitBurst,
    },
  };
}

/** The keys a partial (nested) QueueSettings sets, flat: `{ backoff: { baseMs } }` sets `backoffBaseMs`. */
export function flattenPartialQueueSettings(partial: Partial<QueueSettings>): Partial<QueueSettingsFlat> {
  const { backoff, rateLimit, groupRateLimit, ...rest } = partial;
  const flat: Record<string, unknown> = { ...rest };
  const nested: [object | undefined, Record<string, string>][] = [
    [
      backoff,
      { baseMs: 'backoffBaseMs', factor: 'backoffFactor', capMs: 'backoffCapMs', jitter: 'backoffJitter' },
    ],
    [rateLimit, { leases: 'rateLimitLeases', periodMs: 'rateLimitPeriodMs', burst: 'rateLimitBurst' }],
    [
      groupRateLimit,
      { leases: 'groupRateLimitLeases', periodMs: 'groupRateLimitPeriodMs', burst: 'groupRateLimitBurst' },
    ],
  ];
  for (const [group, names] of nested) {
    if (group === undefined) continue;
    for (const [key, name] of Object.entries(names)) {
      const value = (group as Record<string, unknown>)[key];
      if (value !== undefined) flat[name] = value;
    }
  }
  return flat as Partial<QueueSettingsFlat>;
}

/** Every queue setting key, in the order the docs and the UI list them. */
export const queueSettingKeys: readonly QueueSettingKey[] = Object.freeze(
  Object.keys(flattenQueueSettings(defaultQueueSettings)) as QueueSettingKey[],
);

/** `backoffBaseMs` → `backoff_base_ms`: how the config file, the CLI and the audit log name a setting. */
export function queueSettingName(key: QueueSettingKey): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * Where a queue's effective setting comes from, lowest precedence first: the
 * built-in default, the config file's [queue_defaults], its [queues.NAME], or a
 * run-time override (SetQueueSettings, `sepp queue set`, the admin UI).
 */
export type SettingSource = 'default' | 'queue_defaults' | 'queue' | 'override';
export const settingSources: readonly SettingSource[] = ['default', 'queue_defaults', 'queue', 'override'];

export interface EngineLimits {
  /** Longest queue name and job type, in characters ([A-Za-z0-9._:-] only). */
  maxNameLength: number;
  /** Largest metadata map: total bytes of keys and values, and number of entries. */
  maxMetadataBytes: number;
  maxMetadataEntries: number;
  /** Longest idempotency key, in bytes. */
  maxIdempotencyKeyBytes: number;
  /** Longest worker id, in bytes. */
  maxWorkerIdBytes: number;
  /** Error messages longer than this are truncated, in bytes. */
  maxErrorBytes: number;
  /** Errors kept per job (the oldest are dropped). */
  maxErrorHistory: number;
  /** Jobs in one enqueue batch. */
  maxBatchJobs: number;
  /** Jobs in one reserve, and acks in one batch. */
  maxReserveJobs: number;
  /** Queues one reserve may name. */
  maxReserveQueues: number;
  /** How far ahead a job may be scheduled. */
  maxScheduleAheadMs: number;
  /** Longest long-poll; longer waits are clamped. */
  maxWaitMs: number;
  /** Long-polls waiting at once, across all callers. */
  maxWaiters: number;
  /** Page size cap for listing calls. */
  maxPageSize: number;
  /** Schedules the server keeps (from the config and the API together). */
  maxSchedules: number;
  /** Queues that may exist at once (declared ones included); a job for a new queue beyond it is refused. */
  maxQueues: number;
  /** Largest job result an ack may carry, in bytes. */
  maxResultBytes: number;
  /** Largest progress document (JSON) a worker may report, in bytes. */
  maxProgressBytes: number;
  /** Event subscriptions (Events streams) open at once, across all callers. */
  maxEventSubscribers: number;
  /** Events kept for subscribers to catch up or resume from: at most this many… */
  eventBacklogEvents: number;
  /** …and at most this many bytes (estimated: results, errors and progress documents included). */
  eventBacklogBytes: number;
  /** How long the backlog keeps recording after the last subscriber left, so it can resume. */
  eventResumeWindowMs: number;
  /**
   * How long the outcome of a job deleted as it finished (a queue's retention for
   * that state is 0) is kept in memory for GetJob and waits; 0 keeps none.
   */
  finishedOutcomeMs: number;
  /** Jobs one job may name in depends_on (docs/decisions/0101-workflows-design.md). */
  maxDependenciesPerJob: number;
  /**
   * Jobs that may depend on one job (name it in depends_on, or run after it in a flow): its end
   * releases or cancels them all in one transaction (SECURITY.md, "Workflows under attack").
   */
  maxDependentsPerJob: number;
  /** Jobs in one flow (EnqueueFlow). */
  maxFlowJobs: number;
  /** The longest chain of jobs in one flow, counted in jobs. */
  maxFlowDepth: number;
  /** Results of its dependencies handed to a leased job, in bytes together; above it, ids only. */
  maxDependencyResultsBytes: number;
  /** Batches not ended (open or sealed) one API key may hold (callers without a key count as one). */
  maxOpenBatchesPerKey: number;
  /** How long an ended batch and its member rows are kept before the maintenance sweep deletes them. */
  batchRetentionMs: number;
}

export const defaultEngineLimits: Readonly<EngineLimits> = Object.freeze({
  maxNameLength: 128,
  maxMetadataBytes: 16 * 1024,
  maxMetadataEntries: 64,
  maxIdempotencyKeyBytes: 256,
  maxWorkerIdBytes: 256,
  maxErrorBytes: 8 * 1024,
  maxErrorHistory: 20,
  maxBatchJobs: 1000,
  maxDependenciesPerJob: 100,
  maxDependentsPerJob: 10_000,
  maxFlowJobs: 1000,
  maxFlowDepth: 100,
  maxDependencyResultsBytes: 256 * 1024,
  maxOpenBatchesPerKey: 1000,
  batchRetentionMs: 7 * DAY_MS,
  maxReserveJobs: 1000,
  maxReserveQueues: 64,
  maxScheduleAheadMs: 365 * DAY_MS,
  maxWaitMs: 60 * SECOND_MS,
  maxWaiters: 10_000,
  maxPageSize: 1000,
  maxSchedules: 1000,
  maxQueues: 1000,
  maxResultBytes: 64 * 1024,
  maxProgressBytes: 4 * 1024,
  maxEventSubscribers: 1000,
  eventBacklogEvents: 50_000,
  eventBacklogBytes: 32 * 1024 * 1024,
  eventResumeWindowMs: 5 * MINUTE_MS,
  finishedOutcomeMs: 5 * MINUTE_MS,
});

/** The shape names must have: queue names and job types. */
export const namePattern = /^[A-Za-z0-9._:-]+$/;

/** What the config file says about queues; a reload replaces it as a whole. */
export interface QueueFileSettings {
  /** Settings every queue starts from (the built-in defaults with [queue_defaults] applied). */
  queueDefaults: QueueSettings;
  /** Per-queue settings, by queue name (declared queues). */
  queues: Readonly<Record<string, Partial<QueueSettings>>>;
  /** Only declared queues accept jobs. */
  strictQueues: boolean;
  /**
   * Which settings the file wrote: in [queue_defaults], and in each [queues.NAME].
   * Without it, a declared queue's source is `queue` for every key its entry in
   * `queues` sets, and [queue_defaults] for every default that differs from the
   * built-in one.
   */
  fileKeys?: {
    readonly queueDefaults: readonly QueueSettingKey[];
    readonly queues: Readonly<Record<string, readonly QueueSettingKey[]>>;
  };
}

export interface EngineOptions extends QueueFileSettings {
  limits: EngineLimits;
  /**
   * The schedules the config declares: reconciled when the engine opens (added,
   * updated, and config-declared ones no longer listed removed). Absent: none.
   */
  schedules?: readonly ScheduleSpec[];
}

export function defaultEngineOptions(): EngineOptions {
  return {
    queueDefaults: defaultQueueSettings,
    queues: {},
    strictQueues: false,
    limits: defaultEngineLimits,
  };
}
