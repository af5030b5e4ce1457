/**
 * Checks a schedule's definition when it is created or updated — never at
 * tick time: the name, the cron expression (croner parses it) or interval,
 * the timezone, the policies, and the job template, which must pass the same
 * checks an enqueue makes (so a tick's job is refused only for what changes
 * at run time, such as a full queue). A problem names its field.
 */
import type { KeyShape, KeyShapes } from '../../store/browse.ts';
import { checkName } from '../checks.ts';
import { SeppError } from '../errors.ts';
import { isRejection, validateJob } from '../jobs/index.ts';
import type { QueueRegistry } from '../queue-registry.ts';
import { type EngineLimits, namePattern, queueSettingRanges } from '../settings.ts';
import type { EnqueueRequest } from '../types.ts';
import { isKnownTimezone, ScheduleTiming, type TimingDefinition } from './timing.ts';
import { misfirePolicies, overlapPolicies, type ScheduleSpec } from './types.ts';

const DAY_MS = 86_400_000;
export const intervalRangeMs = { min: 1000, max: 366 * DAY_MS } as const;
export const jitterMaxMs = DAY_MS;
export const catchUpRange = { min: 1, max: 1000 } as const;
export const catchUpDefault = 10;
const cronMaxLength = 256;
/** 9999-12-31T23:59:59.999Z. */
const latestTimeMs = 253_402_300_799_999;
const timezoneMaxLength = 64;

/** A definition that passed every check, in the shape it is stored in. */
export interface ValidSchedule {
  name: string;
  timing: TimingDefinition;
  misfire: NonNullable<ScheduleSpec['misfire']>;
  catchUpMax: number;
  overlap: NonNullable<ScheduleSpec['overlap']>;
  jitterMs: number;
  template: {
    queue: string;
    type: string;
    payload: Uint8Array;
    contentType: string;
    priority: number;
    metadataJson: string | null;
    maxAttempts: number | null;
    leaseMs: number | null;
    timeoutMs: number | null;
  };
}

export type ScheduleCheck =
  | { ok: true; value: ValidSchedule }
  | { ok: false; field: string; message: string };

/** The idempotency key of a tick's job (and of a trigger's, with `manual`). */
export function tickKey(name: string, tickMs: number, manual = false): string {
  return `schedule:${name}:${manual ? 'manual:' : ''}${new Date(tickMs).toISOString()}`;
}

/**
 * The idempotency keys of a schedule's jobs, for the jobs list's `schedule` filter:
 * `schedule:NAME:` and `schedule:NAME:manual:`, each followed by a tick time of fixed
 * length. The length tells them from another schedule's whose name starts with
 * `NAME:` (its keys have more after the prefix). One clash is the keys' own:
 * schedule `NAME:manual`'s ticks have the keys of `NAME`'s manual runs.
 */
function scheduleKeyShapes(name: string): KeyShapes {
  const shape = (manual: boolean): KeyShape => {
    const key = tickKey(name, 0, manual);
    return { prefix: key.slice(0, key.length - new Date(0).toISOString().length), length: key.length };
  };
  return [shape(false), shape(true)];
}

/**
 * A job filter's `schedule` (absent or empty: any job) checked at the boundary, as its
 * key shapes. The schedule need not exist now: its jobs outlive it.
 */
export function scheduleFilter(name: string | undefined, limits: EngineLimits): KeyShapes | null {
  if (name === undefined || name === '') return null;
  const problem = checkName('schedule', name, limits);
  if (problem) throw new SeppError('invalid_argument', problem.message);
  return scheduleKeyShapes(name);
}

/**
 * Checks `spec`. `anchorMs` is where an interval schedule without a start
 * counts from (its creation time, kept across updates). `ended`: whether an
 * end already past is refused (a mistake in a call) or accepted (a config
 * schedule whose time is over: it stays, with no next tick, and the server
 * still starts).
 */
export function checkSchedule(
  spec: ScheduleSpec,
  queues: QueueRegistry,
  limits: EngineLimits,
  nowMs: number,
  anchorMs: number = nowMs,
  ended: 'refuse' | 'accept' = 'refuse',
): ScheduleCheck {
  const fail = (field: string, message: string): ScheduleCheck => ({ ok: false, field, message });
  const { name } = spec;
  if (typeof name !== 'string' || name.length === 0) return fail('name', 'required');
  if (name.length > limits.maxNameLength) {
    return fail(
      'name',
      `is ${name.length} characters long, the limit is ${limits.maxNameLength} (limits.max_name_length)`,
    );
  }
  if (!namePattern.test(name)) {
    return fail('name', `${JSON.stringify(name)} may use only letters, digits and . _ : -`);
  }

  const hasCron = spec.cron !== undefined && spec.cron !== '';
  const hasInterval = spec.intervalMs !== undefined && spec.intervalMs !== 0;
  if (hasCron === hasInterval) {
    return fail(
      'cron',
      hasCron
        ? 'give cron or interval_ms, not both'
        : 'give a cron expression (such as "0 3 * * *") or an interval_ms',
    );
  }
  const timezone = spec.timezone === undefined || spec.timezone === '' ? 'UTC' : spec.timezone;
  if (timezone.length > timezoneMaxLength || !isKnownTimezone(timezone)) {
    return fail(
      'timezone',
      `${JSON.stringify(timezone.slice(0, timezoneMaxLength))} is not an IANA timezone this server knows; use a name such as UTC, Europe/Berlin or America/New_York`,
    );
  }
  if (hasCron && (spec.cron as string).length > cronMaxLength) {
    return fail('cron', `is longer than ${cronMaxLength} characters`);
  }
  if (hasInterval) {
    const interval = spec.intervalMs as number;
    if (!Number.isSafeInteger(interval) || interval < intervalRangeMs.min || interval > intervalRangeMs.max) {
      return fail(
        'interval_ms',
        `is ${interval}; it must be an integer from ${intervalRangeMs.min} (1 s) to ${intervalRangeMs.max} (366 days)`,
      );
    }
  }
  for (const field of ['startAtMs', 'endAtMs'] as const) {
    const value = spec[field];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      return fail(
        field === 'startAtMs' ? 'start_at_ms' : 'end_at_ms',
        `is ${value}; give ms since the epoch`,
      );
    }
    // A date holds at most 8.64e15 ms, and ISO 8601 (tick keys, the UI, RFC 3339 in the config) four-digit years.
    if (value !== undefined && value > latestTimeMs) {
      return fail(
        field === 'startAtMs' ? 'start_at_ms' : 'end_at_ms',
        `is ${value}, after ${new Date(latestTimeMs).toISOString()}, the latest time a schedule may name`,
      );
    }
  }
  const startAtMs = spec.startAtMs ?? null;
  const endAtMs = spec.endAtMs ?? null;
  if (startAtMs !== null && endAtMs !== null && endAtMs <= startAtMs) {
    return fail('end_at_ms', 'must be after start_at_ms');
  }
  const timing: TimingDefinition = {
    cron: hasCron ? (spec.cron as string) : null,
    intervalMs: hasInterval ? (spec.intervalMs as number) : null,
    timezone,
    anchorMs: startAtMs ?? anchorMs,
    startAtMs,
    endAtMs,
  };
  let firstTickMs: number | null;
  try {
    firstTickMs = new ScheduleTiming(timing).nextAfter(nowMs);
  } catch (error) {
    const detail = (error instanceof Error ? error.message : String(error)).replace(/^CronPattern: /, '');
    return fail(
      'cron',
      `${JSON.stringify(timing.cron)} is not a cron expression sepp reads: ${detail}. Use 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first`,
    );
  }
  const isOver = endAtMs !== null && endAtMs <= nowMs;
  if (firstTickMs === null && !(isOver && ended === 'accept')) {
    return isOver
      ? fail('end_at_ms', 'is in the past: the schedule would never tick')
      : fail('cron', `${JSON.stringify(timing.cron)} never matches a date: the schedule would never tick`);
  }
  if (isOver && new ScheduleTiming({ ...timing, startAtMs: null, endAtMs: null }).nextAfter(nowMs) === null) {
    return fail('cron', `${JSON.stringify(timing.cron)} never matches a date: the schedule would never tick`);
  }

  const misfire = spec.misfire ?? 'run_latest';
  if (!misfirePolicies.includes(misfire)) {
    return fail('misfire', `is ${JSON.stringify(misfire)}; use one of ${misfirePolicies.join(', ')}`);
  }
  let catchUpMax = 0;
  if (misfire === 'catch_up') {
    catchUpMax = spec.catchUpMax === undefined || spec.catchUpMax === 0 ? catchUpDefault : spec.catchUpMax;
    if (!Number.isInteger(catchUpMax) || catchUpMax < catchUpRange.min || catchUpMax > catchUpRange.max) {
      return fail(
        'catch_up_max',
        `is ${catchUpMax}; it must be an integer from ${catchUpRange.min} to ${catchUpRange.max}`,
      );
    }
  } else if (spec.catchUpMax !== undefined && spec.catchUpMax !== 0) {
    return fail('catch_up_max', `applies only with misfire = catch_up (misfire is ${misfire})`);
  }
  const overlap = spec.overlap ?? 'allow';
  if (!overlapPolicies.includes(overlap)) {
    return fail('overlap', `is ${JSON.stringify(overlap)}; use one of ${overlapPolicies.join(', ')}`);
  }
  const jitterMs = spec.jitterMs ?? 0;
  if (!Number.isSafeInteger(jitterMs) || jitterMs < 0 || jitterMs > jitterMaxMs) {
    return fail('jitter_ms', `is ${jitterMs}; it must be an integer from 0 to ${jitterMaxMs} (a day)`);
  }

  const template = checkTemplate(spec, queues, limits, nowMs, jitterMs);
  if ('field' in template) return fail(template.field, template.message);
  return { ok: true, value: { name, timing, misfire, catchUpMax, overlap, jitterMs, template } };
}

function checkTemplate(
  spec: ScheduleSpec,
  queues: QueueRegistry,
  limits: EngineLimits,
  nowMs: number,
  jitterMs: number,
): ValidSchedule['template'] | { field: string; message: string } {
  const t = spec.template;
  if (t === undefined || t === null) return { field: 'template', message: 'required' };
  const leaseMs = t.leaseMs === undefined || t.leaseMs === 0 ? null : t.leaseMs;
  const leaseRange = queueSettingRanges.maxLeaseMs;
  if (
    leaseMs !== null &&
    (!Number.isSafeInteger(leaseMs) || leaseMs < leaseRange.min || leaseMs > leaseRange.max)
  ) {
    return {
      field: 'template.lease_ms',
      message: `is ${leaseMs}; it must be an integer from ${leaseRange.min} (1 s) to ${leaseRange.max} (7 days)`,
    };
  }
  // The job a tick would enqueue, with the longest key a tick can have and the most jitter.
  const request: EnqueueRequest = {
    queue: t.queue,
    type: t.type,
    payload: t.payload,
    idempotencyKey: tickKey(spec.name, Date.UTC(9999, 11, 31, 23, 59, 59), true),
    delayMs: jitterMs,
  };
  if (t.contentType !== undefined) request.contentType = t.contentType;
  if (t.priority !== undefined) request.priority = t.priority;
  if (t.metadata !== undefined) request.metadata = t.metadata;
  if (t.maxAttempts !== undefined && t.maxAttempts !== 0) request.maxAttempts = t.maxAttempts;
  if (t.timeoutMs !== undefined && t.timeoutMs !== 0) request.timeoutMs = t.timeoutMs;
  const job = validateJob(request, nowMs, queues, limits);
  if (isRejection(job)) {
    const field = /^(queue|type|payload|content_type|priority|max_attempts|metadata|timeout_ms)\b/.exec(
      job.message,
    )?.[1];
    const message = job.message.startsWith('idempotency_key')
      ? `the schedule's name makes its jobs' idempotency keys too long: ${job.message}`
      : job.message;
    return { field: `template${field === undefined ? '' : `.${field}`}`, message };
  }
  return {
    queue: job.queue,
    type: job.type,
    payload: job.payload,
    contentType: job.contentType,
    priority: job.priority,
    metadataJson: job.metadataJson,
    maxAttempts: request.maxAttempts ?? null,
    leaseMs,
    timeoutMs: job.timeoutMs,
  };
}
