/**
 * The engine's vocabulary for schedules: periodic jobs the server enqueues
 * itself. Times are ms since the Unix epoch (`Ms` suffix), durations ms.
 *
 * A schedule ticks on a cron expression (5 fields, or 6 with seconds first,
 * read in an IANA timezone) or every fixed interval. Each tick enqueues one
 * job from the schedule's template, exactly once: the job's insert and the
 * advance of the schedule's cursor commit together, and the job carries the
 * idempotency key `schedule:NAME:TICK` (TICK in ISO 8601, UTC).
 */

/** What happens to ticks that were due while the server was down or the schedule paused. */
export type MisfirePolicy =
  /** Run the latest missed tick once; skip the older ones (the default). */
  | 'run_latest'
  /** Run none of them: wait for the next tick. */
  | 'skip'
  /** Run the most recent `catchUpMax` of them, one job each, oldest first; skip older ones. */
  | 'catch_up';
export const misfirePolicies: readonly MisfirePolicy[] = ['run_latest', 'skip', 'catch_up'];

/** What happens to a tick while the schedule's previous job has not finished. */
export type OverlapPolicy =
  /** Enqueue it anyway (the default). */
  | 'allow'
  /** Skip it while the schedule's last job is scheduled, ready or leased. */
  | 'skip';
export const overlapPolicies: readonly OverlapPolicy[] = ['allow', 'skip'];

/** Where a schedule was defined: `config` ones change only in sepp.toml. */
export type ScheduleSource = 'config' | 'api';

/** The job each tick enqueues. */
export interface ScheduleTemplate {
  queue: string;
  type: string;
  payload: Uint8Array;
  /** Default `application/octet-stream`. */
  contentType?: string;
  /** 0–9; default 0. */
  priority?: number;
  metadata?: Readonly<Record<string, string>>;
  /** Default: the queue's max_attempts. */
  maxAttempts?: number;
  /** The job's own lease length (see EnqueueRequest.leaseMs); default none. */
  leaseMs?: number;
  /** The jobs' hard execution timeout per attempt (see EnqueueRequest.timeoutMs); default the queue's. */
  timeoutMs?: number;
}

/** A schedule as it is created or updated. */
export interface ScheduleSpec {
  /** Unique; letters, digits and . _ : - (like a queue name). */
  name: string;
  /** A cron expression: exactly one of `cron` and `intervalMs`. */
  cron?: string;
  /** A fixed interval, at least 1 s. */
  intervalMs?: number;
  /** IANA timezone the cron expression is read in; default `UTC`. */
  timezone?: string;
  template: ScheduleTemplate;
  /** Default `run_latest`. */
  misfire?: MisfirePolicy;
  /** With `misfire: 'catch_up'`: at most this many missed ticks run (1–1000, default 10). */
  catchUpMax?: number;
  /** Default `allow`. */
  overlap?: OverlapPolicy;
  /** Each tick's job runs a random 0–jitterMs later than the tick (at most a day); default 0. */
  jitterMs?: number;
  /** No tick before this time. An interval schedule with a start ticks on start + k × interval. */
  startAtMs?: number;
  /** No tick at or after this time. */
  endAtMs?: number;
}

/** How the last tick (or manual trigger) went. */
export type ScheduleOutcome =
  | 'enqueued'
  /** The tick's job was already there (its idempotency key was seen): nothing new was stored. */
  | 'deduplicated'
  /** Enqueued by TriggerSchedule, outside the schedule's ticks. */
  | 'triggered'
  | 'skipped_overlap'
  | 'skipped_misfire'
  /** Enqueue refused the tick's job (a full queue, say); the message says why. */
  | 'rejected';

/** One run of a schedule: a pass that handled its due tick(s), or a manual trigger. */
export interface ScheduleRun {
  /** When it ran. */
  runAtMs: number;
  /** The tick it handled (the latest, when it caught up several); null for a trigger. */
  tickMs: number | null;
  outcome: ScheduleOutcome;
  detail: string | null;
  /** The job it made (or found, deduplicated); null when it made none. */
  jobId: string | null;
}

/** A schedule as the engine reports it. */
export interface ScheduleInfo {
  name: string;
  source: ScheduleSource;
  cron: string | null;
  intervalMs: number | null;
  timezone: string;
  template: {
    queue: string;
    type: string;
    /** Absent in listings (see payloadBytes). */
    payload: Uint8Array | null;
    payloadBytes: number;
    contentType: string;
    priority: number;
    metadata: Record<string, string>;
    maxAttempts: number | null;
    leaseMs: number | null;
    timeoutMs: number | null;
  };
  misfire: MisfirePolicy;
  catchUpMax: number;
  overlap: OverlapPolicy;
  jitterMs: number;
  startAtMs: number | null;
  endAtMs: number | null;
  paused: boolean;
  /** The next tick not yet handled; null when no tick will come again (past endAtMs). */
  nextTickMs: number | null;
  /** The next run times from now (as many as asked for), earliest first. */
  nextRunsMs: number[];
  lastTickMs: number | null;
  lastRunAtMs: number | null;
  lastOutcome: ScheduleOutcome | null;
  lastDetail: string | null;
  lastJobId: string | null;
  ticksEnqueued: number;
  ticksSkipped: number;
  createdAtMs: number;
  updatedAtMs: number;
}

/** Why a tick enqueued nothing. */
export type TickSkipReason = 'overlap' | 'misfire' | 'rejected';

/** What happened to ticks, after the commit that did it (metrics, logs). */
export type ScheduleEvent =
  | { kind: 'tick_enqueued'; schedule: string; queue: string; count: number }
  | { kind: 'tick_skipped'; schedule: string; reason: TickSkipReason; count: number; detail: string };

/** What reconciling the config's schedules did, by name. */
export interface ReconcileReport {
  added: string[];
  updated: string[];
  removed: string[];
  /** Schedules created over the API that the config now declares (it takes them over). */
  adopted: string[];
}
