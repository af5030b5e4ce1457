/**
 * Schedules between the protocol (schedule.proto) and the engine. Proto3
 * zero values mean "not set": the engine applies its defaults.
 */
import {
  MisfirePolicy,
  OverlapPolicy,
  type Schedule,
  ScheduleOutcome,
  type ScheduleRun as ScheduleRunProto,
  ScheduleSource,
  type ScheduleSpec,
} from '../../clients/typescript/src/gen/sepp/v1/schedule.js';
import { SeppError } from '../engine/errors.ts';
import type {
  MisfirePolicy as EngineMisfire,
  ScheduleOutcome as EngineOutcome,
  OverlapPolicy as EngineOverlap,
  ScheduleRun as EngineScheduleRun,
  ScheduleSpec as EngineScheduleSpec,
  ScheduleInfo,
} from '../engine/schedules/types.ts';
import { asBuffer } from './convert.ts';

const misfireToProto: Record<EngineMisfire, MisfirePolicy> = {
  run_latest: MisfirePolicy.RUN_LATEST,
  skip: MisfirePolicy.SKIP,
  catch_up: MisfirePolicy.CATCH_UP,
};
const overlapToProto: Record<EngineOverlap, OverlapPolicy> = {
  allow: OverlapPolicy.ALLOW,
  skip: OverlapPolicy.SKIP,
};
const outcomeToProto: Record<EngineOutcome, ScheduleOutcome> = {
  enqueued: ScheduleOutcome.ENQUEUED,
  deduplicated: ScheduleOutcome.DEDUPLICATED,
  triggered: ScheduleOutcome.TRIGGERED,
  skipped_overlap: ScheduleOutcome.SKIPPED_OVERLAP,
  skipped_misfire: ScheduleOutcome.SKIPPED_MISFIRE,
  rejected: ScheduleOutcome.REJECTED,
};

/** One run of a schedule (GetScheduleResponse.runs). */
export function scheduleRunToProto(run: EngineScheduleRun): ScheduleRunProto {
  return {
    runAtMs: run.runAtMs,
    tickMs: run.tickMs ?? 0,
    outcome: outcomeToProto[run.outcome],
    detail: run.detail ?? '',
    jobId: run.jobId ?? '',
  };
}

function fromProto<T extends string>(table: Record<T, number>, value: number, field: string): T | undefined {
  if (value === 0) return undefined;
  for (const [name, number] of Object.entries(table) as [T, number][]) if (number === value) return name;
  throw new SeppError('invalid_argument', `${field}: ${value} is not a known value`);
}

export function scheduleSpecFromProto(spec: ScheduleSpec | undefined): EngineScheduleSpec {
  if (spec === undefined) throw new SeppError('invalid_argument', 'schedule: required');
  const template = spec.template;
  if (template === undefined) throw new SeppError('invalid_argument', 'template: required');
  const result: EngineScheduleSpec = {
    name: spec.name,
    template: {
      queue: template.queue,
      type: template.type,
      payload: template.payload,
      priority: template.priority,
    },
  };
  if (spec.timing?.$case === 'cron') result.cron = spec.timing.value;
  else if (spec.timing?.$case === 'intervalMs') result.intervalMs = spec.timing.value;
  if (spec.timezone !== '') result.timezone = spec.timezone;
  if (template.contentType !== '') result.template.contentType = template.contentType;
  if (Object.keys(template.metadata).length > 0) result.template.metadata = template.metadata;
  if (template.maxAttempts !== 0) result.template.maxAttempts = template.maxAttempts;
  if (template.leaseMs !== 0) result.template.leaseMs = template.leaseMs;
  if (template.timeoutMs !== 0) result.template.timeoutMs = template.timeoutMs;
  const misfire = fromProto(misfireToProto, spec.misfire, 'misfire');
  if (misfire !== undefined) result.misfire = misfire;
  if (spec.catchUpMax !== 0) result.catchUpMax = spec.catchUpMax;
  const overlap = fromProto(overlapToProto, spec.overlap, 'overlap');
  if (overlap !== undefined) result.overlap = overlap;
  if (spec.jitterMs !== 0) result.jitterMs = spec.jitterMs;
  if (spec.startAtMs !== 0) result.startAtMs = spec.startAtMs;
  if (spec.endAtMs !== 0) result.endAtMs = spec.endAtMs;
  return result;
}

export function scheduleToProto(info: ScheduleInfo): Schedule {
  const { template } = info;
  return {
    spec: {
      name: info.name,
      timing:
        info.cron !== null
          ? { $case: 'cron', value: info.cron }
          : { $case: 'intervalMs', value: info.intervalMs ?? 0 },
      timezone: info.timezone,
      template: {
        queue: template.queue,
        type: template.type,
        payload: template.payload === null ? Buffer.alloc(0) : asBuffer(template.payload),
        contentType: template.contentType,
        priority: template.priority,
        metadata: template.metadata,
        maxAttempts: template.maxAttempts ?? 0,
        leaseMs: template.leaseMs ?? 0,
        timeoutMs: template.timeoutMs ?? 0,
        payloadBytes: template.payloadBytes,
      },
      misfire: misfireToProto[info.misfire],
      catchUpMax: info.catchUpMax,
      overlap: overlapToProto[info.overlap],
      jitterMs: info.jitterMs,
      startAtMs: info.startAtMs ?? 0,
      endAtMs: info.endAtMs ?? 0,
    },
    source: info.source === 'config' ? ScheduleSource.CONFIG : ScheduleSource.API,
    paused: info.paused,
    nextTickMs: info.nextTickMs ?? 0,
    nextRunsMs: info.nextRunsMs,
    lastTickMs: info.lastTickMs ?? 0,
    lastRunAtMs: info.lastRunAtMs ?? 0,
    lastOutcome: info.lastOutcome === null ? ScheduleOutcome.UNSPECIFIED : outcomeToProto[info.lastOutcome],
    lastDetail: info.lastDetail ?? '',
    lastJobId: info.lastJobId ?? '',
    ticksEnqueued: info.ticksEnqueued,
    ticksSkipped: info.ticksSkipped,
    createdAtMs: info.createdAtMs,
    updatedAtMs: info.updatedAtMs,
  };
}
