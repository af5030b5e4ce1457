/** Between stored schedule rows and the engine's shapes: definitions to store, infos to report. */

import type { ScheduleDefinitionRow, ScheduleListRow, ScheduleRow } from '../../store/rows.ts';
import { parseMetadata } from '../jobs/index.ts';
import type { ScheduleTiming } from './timing.ts';
import type { ScheduleInfo, ScheduleOutcome, ScheduleSource } from './types.ts';
import type { ValidSchedule } from './validate.ts';

export function definitionParams(
  valid: ValidSchedule,
  source: ScheduleSource,
  nextTickMs: number | null,
): ScheduleDefinitionRow {
  const { timing, template } = valid;
  return {
    name: valid.name,
    source,
    cron: timing.cron,
    interval_ms: timing.intervalMs,
    timezone: timing.timezone,
    anchor_ms: timing.anchorMs,
    start_at_ms: timing.startAtMs,
    end_at_ms: timing.endAtMs,
    misfire: valid.misfire,
    catch_up_max: valid.catchUpMax,
    overlap: valid.overlap,
    jitter_ms: valid.jitterMs,
    queue: template.queue,
    type: template.type,
    payload: Buffer.from(template.payload),
    content_type: template.contentType,
    priority: template.priority,
    metadata_json: template.metadataJson,
    max_attempts: template.maxAttempts,
    lease_ms: template.leaseMs,
    timeout_ms: template.timeoutMs,
    next_tick_ms: nextTickMs,
  };
}

const timingColumns = ['cron', 'interval_ms', 'timezone', 'anchor_ms', 'start_at_ms', 'end_at_ms'] as const;
const otherColumns = [
  'source',
  'misfire',
  'catch_up_max',
  'overlap',
  'jitter_ms',
  'queue',
  'type',
  'content_type',
  'priority',
  'metadata_json',
  'max_attempts',
  'lease_ms',
  'timeout_ms',
] as const;

/** Whether the stored row ticks at the same times as `params` would. */
export function sameTiming(row: ScheduleRow, params: ScheduleDefinitionRow): boolean {
  return timingColumns.every((c) => row[c] === params[c]);
}

/** Whether the stored row is exactly this definition (the cursor aside). */
export function sameDefinition(row: ScheduleRow, params: ScheduleDefinitionRow): boolean {
  return (
    sameTiming(row, params) &&
    otherColumns.every((c) => row[c] === params[c]) &&
    Buffer.compare(row.payload, params.payload) === 0
  );
}

/** A schedule to report, with its next `nextRuns` run times from `nowMs`. */
export function scheduleInfoFromRow(
  row: ScheduleRow | ScheduleListRow,
  timing: ScheduleTiming,
  nowMs: number,
  nextRuns: number,
): ScheduleInfo {
  const payload = 'payload' in row ? row.payload : null;
  return {
    ...scheduleBase(row, payload),
    nextRunsMs: nextRunTimes(row.next_tick_ms, timing, nowMs, nextRuns),
  };
}

/**
 * The next `count` run times from now. A cursor still ahead is the first of
 * them, so a listing (one run each) asks croner nothing: the admin UI polls it.
 */
function nextRunTimes(
  nextTickMs: number | null,
  timing: ScheduleTiming,
  nowMs: number,
  count: number,
): number[] {
  if (nextTickMs === null || count === 0) return [];
  if (nextTickMs <= nowMs) return timing.nextRuns(nowMs, count);
  return [nextTickMs, ...timing.nextRuns(nextTickMs, count - 1)];
}

function scheduleBase(
  row: ScheduleRow | ScheduleListRow,
  payload: Uint8Array | null,
): Omit<ScheduleInfo, 'nextRunsMs'> {
  return {
    name: row.name,
    source: row.source,
    cron: row.cron,
    intervalMs: row.interval_ms,
    timezone: row.timezone,
    template: {
      queue: row.queue,
      type: row.type,
      payload,
      payloadBytes: payload === null ? (row as ScheduleListRow).payload_bytes : payload.byteLength,
      contentType: row.content_type,
      priority: row.priority,
      metadata: parseMetadata(row.metadata_json),
      maxAttempts: row.max_attempts,
      leaseMs: row.lease_ms,
      timeoutMs: row.timeout_ms ?? null,
    },
    misfire: row.misfire,
    catchUpMax: row.catch_up_max,
    overlap: row.overlap,
    jitterMs: row.jitter_ms,
    startAtMs: row.start_at_ms,
    endAtMs: row.end_at_ms,
    paused: row.paused === 1,
    nextTickMs: row.next_tick_ms,
    lastTickMs: row.last_tick_ms,
    lastRunAtMs: row.last_run_at_ms,
    lastOutcome: row.last_outcome as ScheduleOutcome | null,
    lastDetail: row.last_detail,
    lastJobId: row.last_job_id,
    ticksEnqueued: row.ticks_enqueued,
    ticksSkipped: row.ticks_skipped,
    createdAtMs: row.created_at_ms,
    updatedAtMs: row.updated_at_ms,
  };
}

/** What an audit entry records of a definition: everything but the payload's bytes. */
export function auditDetails(params: ScheduleDefinitionRow): Record<string, unknown> {
  return {
    source: params.source,
    cron: params.cron,
    intervalMs: params.interval_ms,
    timezone: params.timezone,
    queue: params.queue,
    type: params.type,
    payloadBytes: params.payload.byteLength,
    misfire: params.misfire,
    overlap: params.overlap,
    jitterMs: params.jitter_ms,
    startAtMs: params.start_at_ms,
    endAtMs: params.end_at_ms,
  };
}
