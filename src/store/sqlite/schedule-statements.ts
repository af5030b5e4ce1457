/**
 * The statements behind schedules (schema/0004_schedules.sql): their
 * definitions, the cursor the maintenance loop advances, and the last outcome.
 * Kept apart from statements.ts because none of them is on the producers' and
 * workers' hot path. Prepared once; each lists its parameters; time is always
 * a parameter.
 */
import type { Db } from './open.ts';

/** A row of `schedules` as stored. */
export interface ScheduleRow {
  name: string;
  source: 'config' | 'api';
  cron: string | null;
  interval_ms: number | null;
  timezone: string;
  anchor_ms: number;
  start_at_ms: number | null;
  end_at_ms: number | null;
  misfire: 'run_latest' | 'skip' | 'catch_up';
  catch_up_max: number;
  overlap: 'allow' | 'skip';
  jitter_ms: number;
  queue: string;
  type: string;
  payload: Buffer;
  content_type: string;
  priority: number;
  metadata_json: string | null;
  max_attempts: number | null;
  lease_ms: number | null;
  paused: 0 | 1;
  next_tick_ms: number | null;
  last_tick_ms: number | null;
  last_run_at_ms: number | null;
  last_outcome: string | null;
  last_detail: string | null;
  last_job_id: string | null;
  ticks_enqueued: number;
  ticks_skipped: number;
  created_at_ms: number;
  updated_at_ms: number;
}

/** A schedule as a listing reads it: the payload's size instead of the payload. */
export type ScheduleListRow = Omit<ScheduleRow, 'payload'> & { payload_bytes: number };

const listColumns = `name, source, cron, interval_ms, timezone, anchor_ms, start_at_ms, end_at_ms, misfire, catch_up_max,
  overlap, jitter_ms, queue, type, content_type, priority, metadata_json, max_attempts, lease_ms, paused, next_tick_ms,
  last_tick_ms, last_run_at_ms, last_outcome, last_detail, last_job_id, ticks_enqueued, ticks_skipped, created_at_ms,
  updated_at_ms`;

/** The definition columns: what an insert or an update writes. */
export type ScheduleDefinitionParams = Pick<
  ScheduleRow,
  | 'name'
  | 'source'
  | 'cron'
  | 'interval_ms'
  | 'timezone'
  | 'anchor_ms'
  | 'start_at_ms'
  | 'end_at_ms'
  | 'misfire'
  | 'catch_up_max'
  | 'overlap'
  | 'jitter_ms'
  | 'queue'
  | 'type'
  | 'payload'
  | 'content_type'
  | 'priority'
  | 'metadata_json'
  | 'max_attempts'
  | 'lease_ms'
  | 'next_tick_ms'
>;

/** What handling a tick (or a trigger) changes. */
export interface ScheduleProgressParams {
  name: string;
  next_tick_ms: number | null;
  last_tick_ms: number;
  last_run_at_ms: number;
  last_outcome: string;
  last_detail: string | null;
  last_job_id: string | null;
  enqueued: number;
  skipped: number;
}

const definitionColumns = `source, cron, interval_ms, timezone, anchor_ms, start_at_ms, end_at_ms, misfire, catch_up_max,
  overlap, jitter_ms, queue, type, payload, content_type, priority, metadata_json, max_attempts, lease_ms, next_tick_ms`;

export function prepareScheduleStatements(db: Db) {
  return {
    /** @param every definition column, created_at_ms (= updated_at_ms) */
    insertSchedule: db.prepare<[ScheduleDefinitionParams & { now_ms: number }]>(
      `INSERT INTO schedules (name, ${definitionColumns}, created_at_ms, updated_at_ms)
       VALUES (@name, @source, @cron, @interval_ms, @timezone, @anchor_ms, @start_at_ms, @end_at_ms, @misfire,
               @catch_up_max, @overlap, @jitter_ms, @queue, @type, @payload, @content_type, @priority,
               @metadata_json, @max_attempts, @lease_ms, @next_tick_ms, @now_ms, @now_ms)`,
    ),
    /** Replaces the definition (and the cursor the caller computed); keeps paused, the last outcome and totals. */
    updateSchedule: db.prepare<[ScheduleDefinitionParams & { now_ms: number }]>(
      `UPDATE schedules SET source = @source, cron = @cron, interval_ms = @interval_ms, timezone = @timezone,
              anchor_ms = @anchor_ms, start_at_ms = @start_at_ms, end_at_ms = @end_at_ms, misfire = @misfire,
              catch_up_max = @catch_up_max, overlap = @overlap, jitter_ms = @jitter_ms, queue = @queue,
              type = @type, payload = @payload, content_type = @content_type, priority = @priority,
              metadata_json = @metadata_json, max_attempts = @max_attempts, lease_ms = @lease_ms,
              next_tick_ms = @next_tick_ms, updated_at_ms = @now_ms
        WHERE name = @name`,
    ),
    deleteSchedule: db.prepare<[string]>('DELETE FROM schedules WHERE name = ?'),
    setSchedulePaused: db.prepare<[{ name: string; paused: 0 | 1; now_ms: number }]>(
      'UPDATE schedules SET paused = @paused, updated_at_ms = @now_ms WHERE name = @name',
    ),
    scheduleByName: db.prepare<[string], ScheduleRow>('SELECT * FROM schedules WHERE name = ?'),
    /** Every schedule by name, with the payload's size instead of the payload (listing). */
    allSchedules: db.prepare<[], ScheduleListRow>(
      `SELECT ${listColumns}, length(payload) AS payload_bytes FROM schedules ORDER BY name`,
    ),
    scheduleCount: db.prepare<[], number>('SELECT count(*) FROM schedules').pluck(),
    /** Running schedules whose next tick has come, soonest first (index schedules_due). */
    dueSchedules: db.prepare<[{ now_ms: number; limit: number }], ScheduleRow>(
      `SELECT * FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL AND next_tick_ms <= @now_ms
        ORDER BY next_tick_ms LIMIT @limit`,
    ),
    /** When the next running schedule is due (index schedules_due); null when none is. */
    nextScheduleTick: db
      .prepare<[], number | null>(
        'SELECT min(next_tick_ms) FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL',
      )
      .pluck(),
    /** Records a handled tick or trigger: the cursor, the outcome and the totals. */
    recordScheduleProgress: db.prepare<[ScheduleProgressParams]>(
      `UPDATE schedules SET next_tick_ms = @next_tick_ms, last_tick_ms = @last_tick_ms,
              last_run_at_ms = @last_run_at_ms, last_outcome = @last_outcome, last_detail = @last_detail,
              last_job_id = coalesce(@last_job_id, last_job_id),
              ticks_enqueued = ticks_enqueued + @enqueued, ticks_skipped = ticks_skipped + @skipped
        WHERE name = @name`,
    ),
    /** Records a manual trigger: the outcome and its job; the cursor and the tick totals stay. */
    recordScheduleTrigger: db.prepare<
      [{ name: string; now_ms: number; job_id: string; detail: string | null }]
    >(
      `UPDATE schedules SET last_run_at_ms = @now_ms, last_outcome = 'triggered', last_detail = @detail,
              last_job_id = @job_id
        WHERE name = @name`,
    ),
    /** The state of a schedule's last job, for the overlap policy (null when it is gone). */
    jobStateById: db.prepare<[string], string>('SELECT state FROM jobs WHERE id = ?').pluck(),
  };
}

export type ScheduleStatements = ReturnType<typeof prepareScheduleStatements>;
