/**
 * Schedules: periodic jobs the server enqueues itself, on a cron expression or
 * a fixed interval, each tick exactly once (see docs/schedules.md). Reached as
 * `client.schedules`:
 *
 *   await client.schedules.upsert({
 *     name: 'nightly-report',
 *     cron: '30 2 * * *',
 *     timezone: 'Europe/Berlin',
 *     job: { queue: 'reports', type: 'nightly', json: { kind: 'daily' } },
 *   });
 */
import { status } from '@grpc/grpc-js';
import { type Connection, retrySafe } from './connection.ts';
import { timeMs } from './convert.ts';
import { SeppError } from './errors.ts';
import {
  MisfirePolicy as ProtoMisfire,
  ScheduleOutcome as ProtoOutcome,
  OverlapPolicy as ProtoOverlap,
  type Schedule as ProtoSchedule,
  ScheduleSource as ProtoSource,
  type ScheduleSpec as ProtoSpec,
} from './gen/sepp/v1/schedule.js';
import type { CallOptions, Enqueued, Payload, TimeInput } from './types.ts';

/** Ticks missed while the server was down or the schedule paused: run the latest once, none, or up to `catchUpMax`. */
export type MisfirePolicy = 'run_latest' | 'skip' | 'catch_up';
/** A tick while the last job is unfinished: enqueue anyway, or skip it. */
export type OverlapPolicy = 'allow' | 'skip';
/** How a schedule's last tick (or trigger) went. */
export type ScheduleOutcome =
  | 'enqueued'
  | 'deduplicated'
  | 'triggered'
  | 'skipped_overlap'
  | 'skipped_misfire'
  | 'rejected';

/** The job each tick enqueues. */
export interface ScheduleJob {
  queue: string;
  type: string;
  /** Bytes or text; or give `json`. */
  payload?: Payload;
  /** A value sent as JSON (content type `application/json`). */
  json?: unknown;
  /** Default `application/octet-stream` (`application/json` with `json`). */
  contentType?: string;
  /** 0–9, default 0. */
  priority?: number;
  metadata?: Record<string, string>;
  /** Default: the queue's. */
  maxAttempts?: number;
  /** The job's own lease: a reserve asking for less (or nothing) gets this long, up to the queue's max. */
  leaseMs?: number;
  /** Hard execution timeout of each attempt of its jobs, in ms (as `executionTimeoutMs`); default the queue's. */
  executionTimeoutMs?: number;
}

/** A schedule to create or update. Exactly one of `cron` and `intervalMs`. */
export interface ScheduleDefinition {
  /** Unique; letters, digits and . _ : - */
  name: string;
  /** 5 fields, or 6 with seconds first: `'30 2 * * *'`, `'*\/10 * * * * *'`. */
  cron?: string;
  /** A fixed interval, at least 1000 ms. */
  intervalMs?: number;
  /** IANA timezone the cron expression is read in; default `UTC`. */
  timezone?: string;
  job: ScheduleJob;
  /** Default `run_latest`. */
  misfire?: MisfirePolicy;
  /** With `misfire: 'catch_up'`: most missed ticks run (default 10). */
  catchUpMax?: number;
  /** Default `allow`. */
  overlap?: OverlapPolicy;
  /** Each job runs a random 0–jitterMs after its tick. */
  jitterMs?: number;
  /** No tick before this. */
  startAt?: TimeInput;
  /** No tick at or after this. */
  endAt?: TimeInput;
}

/** A schedule as the server reports it. */
export interface Schedule {
  name: string;
  /** `config`: declared in sepp.toml (change it there); `api`: made over the API. */
  source: 'config' | 'api';
  cron: string | null;
  intervalMs: number | null;
  timezone: string;
  job: {
    queue: string;
    type: string;
    /** Null in `list()` (see payloadBytes). */
    payload: Buffer | null;
    payloadBytes: number;
    contentType: string;
    priority: number;
    metadata: Record<string, string>;
    maxAttempts: number | null;
    leaseMs: number | null;
    /** The jobs' hard execution timeout per attempt, in ms; null: the queue's `defaultTimeoutMs`. */
    executionTimeoutMs: number | null;
  };
  misfire: MisfirePolicy;
  catchUpMax: number;
  overlap: OverlapPolicy;
  jitterMs: number;
  startAt: Date | null;
  endAt: Date | null;
  paused: boolean;
  /** The next tick not yet handled; null when none will come (past endAt). */
  nextTick: Date | null;
  /** The next run times from now, as many as asked for. */
  nextRuns: Date[];
  lastTick: Date | null;
  lastRunAt: Date | null;
  lastOutcome: ScheduleOutcome | null;
  /** Why a tick was skipped or rejected. */
  lastDetail: string | null;
  lastJobId: string | null;
  ticksEnqueued: number;
  ticksSkipped: number;
  createdAt: Date;
  updatedAt: Date;
}

/** One run of a schedule (`client.schedules.runs`): a handled tick or a trigger. */
export interface ScheduleRun {
  runAt: Date;
  /** The tick it handled (the latest, when it caught up several); null for a trigger. */
  tick: Date | null;
  outcome: ScheduleOutcome;
  /** Why it was skipped or refused; null otherwise. */
  detail: string | null;
  /** The job it made (or found, deduplicated); null when it made none. */
  jobId: string | null;
}

const misfires: Record<MisfirePolicy, ProtoMisfire> = {
  run_latest: ProtoMisfire.RUN_LATEST,
  skip: ProtoMisfire.SKIP,
  catch_up: ProtoMisfire.CATCH_UP,
};
const overlaps: Record<OverlapPolicy, ProtoOverlap> = { allow: ProtoOverlap.ALLOW, skip: ProtoOverlap.SKIP };
const outcomes: Record<ScheduleOutcome, ProtoOutcome> = {
  enqueued: ProtoOutcome.ENQUEUED,
  deduplicated: ProtoOutcome.DEDUPLICATED,
  triggered: ProtoOutcome.TRIGGERED,
  skipped_overlap: ProtoOutcome.SKIPPED_OVERLAP,
  skipped_misfire: ProtoOutcome.SKIPPED_MISFIRE,
  rejected: ProtoOutcome.REJECTED,
};

function nameOf<T extends string>(table: Record<T, number>, value: number): T | null {
  for (const [name, number] of Object.entries(table) as [T, number][]) if (number === value) return name;
  return null;
}

function choice<T extends string>(table: Record<T, number>, value: string, field: string): number {
  const number = (table as Record<string, number>)[value];
  if (number === undefined || !Object.hasOwn(table, value)) {
    throw invalid(`${field}: ${JSON.stringify(value)} is not one of ${Object.keys(table).join(', ')}`);
  }
  return number;
}

const optionalDate = (ms: number): Date | null => (ms === 0 ? null : new Date(ms));

function invalid(message: string): SeppError {
  return new SeppError(status.INVALID_ARGUMENT, message);
}

/** The protocol's spec from a definition; throws INVALID_ARGUMENT for what cannot be sent. */
export function specToProto(definition: ScheduleDefinition): ProtoSpec {
  const { job } = definition;
  if (job === undefined || job === null)
    throw invalid('job: required (the queue, type and payload of each tick)');
  if (job.payload !== undefined && job.json !== undefined)
    throw invalid('job: give payload or json, not both');
  const payload =
    job.json !== undefined
      ? Buffer.from(JSON.stringify(job.json), 'utf8')
      : typeof job.payload === 'string'
        ? Buffer.from(job.payload, 'utf8')
        : job.payload === undefined
          ? Buffer.alloc(0)
          : Buffer.from(job.payload);
  let timing: ProtoSpec['timing'];
  if (definition.cron !== undefined) timing = { $case: 'cron', value: definition.cron };
  if (definition.intervalMs !== undefined) {
    if (timing !== undefined) throw invalid('give cron or intervalMs, not both');
    timing = { $case: 'intervalMs', value: Math.round(definition.intervalMs) };
  }
  return {
    name: definition.name,
    timing,
    timezone: definition.timezone ?? '',
    template: {
      queue: job.queue,
      type: job.type,
      payload,
      contentType: job.contentType ?? (job.json !== undefined ? 'application/json' : ''),
      priority: job.priority ?? 0,
      metadata: job.metadata ?? {},
      maxAttempts: job.maxAttempts ?? 0,
      leaseMs: job.leaseMs ?? 0,
      timeoutMs: job.executionTimeoutMs ?? 0,
      payloadBytes: 0,
    },
    misfire:
      definition.misfire === undefined
        ? ProtoMisfire.UNSPECIFIED
        : choice(misfires, definition.misfire, 'misfire'),
    catchUpMax: definition.catchUpMax ?? 0,
    overlap:
      definition.overlap === undefined
        ? ProtoOverlap.UNSPECIFIED
        : choice(overlaps, definition.overlap, 'overlap'),
    jitterMs: definition.jitterMs ?? 0,
    startAtMs: definition.startAt === undefined ? 0 : timeMs(definition.startAt, 'startAt'),
    endAtMs: definition.endAt === undefined ? 0 : timeMs(definition.endAt, 'endAt'),
  };
}

export function scheduleFromProto(schedule: ProtoSchedule | undefined): Schedule {
  const spec = schedule?.spec;
  const template = spec?.template;
  if (schedule === undefined || spec === undefined || template === undefined) {
    throw new SeppError(status.INTERNAL, 'the server sent no schedule');
  }
  return {
    name: spec.name,
    source: schedule.source === ProtoSource.CONFIG ? 'config' : 'api',
    cron: spec.timing?.$case === 'cron' ? spec.timing.value : null,
    intervalMs: spec.timing?.$case === 'intervalMs' ? spec.timing.value : null,
    timezone: spec.timezone,
    job: {
      queue: template.queue,
      type: template.type,
      payload: template.payload.byteLength === 0 && template.payloadBytes > 0 ? null : template.payload,
      payloadBytes: template.payloadBytes,
      contentType: template.contentType,
      priority: template.priority,
      metadata: template.metadata,
      maxAttempts: template.maxAttempts === 0 ? null : template.maxAttempts,
      leaseMs: template.leaseMs === 0 ? null : template.leaseMs,
      executionTimeoutMs: template.timeoutMs === 0 ? null : template.timeoutMs,
    },
    misfire: nameOf(misfires, spec.misfire) ?? 'run_latest',
    catchUpMax: spec.catchUpMax,
    overlap: nameOf(overlaps, spec.overlap) ?? 'allow',
    jitterMs: spec.jitterMs,
    startAt: optionalDate(spec.startAtMs),
    endAt: optionalDate(spec.endAtMs),
    paused: schedule.paused,
    nextTick: optionalDate(schedule.nextTickMs),
    nextRuns: schedule.nextRunsMs.map((ms) => new Date(ms)),
    lastTick: optionalDate(schedule.lastTickMs),
    lastRunAt: optionalDate(schedule.lastRunAtMs),
    lastOutcome: nameOf(outcomes, schedule.lastOutcome),
    lastDetail: schedule.lastDetail === '' ? null : schedule.lastDetail,
    lastJobId: schedule.lastJobId === '' ? null : schedule.lastJobId,
    ticksEnqueued: schedule.ticksEnqueued,
    ticksSkipped: schedule.ticksSkipped,
    createdAt: new Date(schedule.createdAtMs),
    updatedAt: new Date(schedule.updatedAtMs),
  };
}

/** The schedule calls of a client (`client.schedules`). Changes need an admin key. */
export class Schedules {
  /** @internal */
  constructor(private readonly conn: Connection) {}

  /** Creates a schedule; ALREADY_EXISTS when the name is taken. */
  async create(definition: ScheduleDefinition, options: CallOptions = {}): Promise<Schedule> {
    const response = await this.conn.invoke(
      this.conn.rpc.createSchedule,
      { schedule: specToProto(definition) },
      // A repeat after UNAVAILABLE finds the schedule there (ALREADY_EXISTS) rather than making two.
      { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: false },
    );
    return scheduleFromProto(response.schedule);
  }

  /** Changes a schedule made over the API; NOT_FOUND when there is none. */
  async update(definition: ScheduleDefinition, options: CallOptions = {}): Promise<Schedule> {
    return (await this.put(definition, false, options)).schedule;
  }

  /** Creates or changes a schedule: what an application declaring its schedules at start calls. */
  upsert(
    definition: ScheduleDefinition,
    options: CallOptions = {},
  ): Promise<{ schedule: Schedule; created: boolean }> {
    return this.put(definition, true, options);
  }

  /** One schedule, with its payload and next `nextRuns` run times (1–100, default 10). */
  async get(name: string, options: CallOptions & { nextRuns?: number } = {}): Promise<Schedule> {
    const response = await this.conn.invoke(
      this.conn.rpc.getSchedule,
      { name, nextRuns: options.nextRuns ?? 0 },
      retrySafe(options),
    );
    return scheduleFromProto(response.schedule);
  }

  /** A schedule's latest runs, newest first (the server keeps the last 20), each with its job. */
  async runs(name: string, options: CallOptions = {}): Promise<ScheduleRun[]> {
    const response = await this.conn.invoke(
      this.conn.rpc.getSchedule,
      { name, nextRuns: 1 },
      retrySafe(options),
    );
    return response.runs.map((run) => ({
      runAt: new Date(run.runAtMs),
      tick: run.tickMs === 0 ? null : new Date(run.tickMs),
      outcome: nameOf(outcomes, run.outcome) ?? 'enqueued',
      detail: run.detail === '' ? null : run.detail,
      jobId: run.jobId === '' ? null : run.jobId,
    }));
  }

  /**
   * Every schedule by name, each with its next `nextRuns` run times (1–10, default 1); no
   * payloads. Follows the server's pages (at most `max_schedules` schedules in all).
   */
  async list(options: CallOptions & { nextRuns?: number } = {}): Promise<Schedule[]> {
    const schedules: Schedule[] = [];
    let pageToken = '';
    do {
      const response = await this.conn.invoke(
        this.conn.rpc.listSchedules,
        { nextRuns: options.nextRuns ?? 0, pageSize: 0, pageToken },
        retrySafe(options),
      );
      schedules.push(...response.schedules.map(scheduleFromProto));
      pageToken = response.nextPageToken;
    } while (pageToken !== '');
    return schedules;
  }

  /** Stops a schedule ticking (config schedules too). */
  async pause(name: string, options: CallOptions = {}): Promise<Schedule> {
    return scheduleFromProto(
      (await this.conn.invoke(this.conn.rpc.pauseSchedule, { name }, retrySafe(options))).schedule,
    );
  }

  /** Lets a paused schedule tick again; the ticks it missed follow its misfire policy. */
  async resume(name: string, options: CallOptions = {}): Promise<Schedule> {
    return scheduleFromProto(
      (await this.conn.invoke(this.conn.rpc.resumeSchedule, { name }, retrySafe(options))).schedule,
    );
  }

  /** Deletes a schedule made over the API; the jobs it enqueued stay. */
  async delete(name: string, options: CallOptions = {}): Promise<void> {
    await this.conn.invoke(this.conn.rpc.deleteSchedule, { name }, retrySafe(options));
  }

  /** Enqueues the schedule's job now, outside its ticks (paused or not). */
  async trigger(name: string, options: CallOptions = {}): Promise<Enqueued> {
    const response = await this.conn.invoke(
      this.conn.rpc.triggerSchedule,
      { name },
      // Each trigger enqueues a job: never repeated by the client.
      { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: false },
    );
    return { id: response.jobId, deduplicated: response.deduplicated, debounced: false };
  }

  private async put(
    definition: ScheduleDefinition,
    allowMissing: boolean,
    options: CallOptions,
  ): Promise<{ schedule: Schedule; created: boolean }> {
    const response = await this.conn.invoke(
      this.conn.rpc.updateSchedule,
      { schedule: specToProto(definition), allowMissing },
      // Setting a definition twice leaves the same definition.
      retrySafe(options),
    );
    return { schedule: scheduleFromProto(response.schedule), created: response.created };
  }
}
