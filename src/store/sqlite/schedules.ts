/**
 * Schedules (schema/0004_schedules.sql): their definitions, the cursor the
 * maintenance loop advances, and the last outcome. None is on the producers'
 * and workers' hot path. Prepared once; each lists its parameters; time is
 * always a parameter.
 */
import type { ScheduleDefinitionRow, ScheduleListRow, ScheduleRow, ScheduleRunRow } from '../rows.ts';
import type { ScheduleProgress, Schedules } from '../schedules.ts';
import type { Preparer } from './prepare-on-use.ts';

const listColumns = `name, source, cron, interval_ms, timezone, anchor_ms, start_at_ms, end_at_ms, misfire, catch_up_max,
  overlap, jitter_ms, queue, type, content_type, priority, metadata_json, max_attempts, lease_ms, timeout_ms, paused,
  next_tick_ms,
  last_tick_ms, last_run_at_ms, last_outcome, last_detail, last_job_id, ticks_enqueued, ticks_skipped, created_at_ms,
  updated_at_ms`;

const definitionColumns = `source, cron, interval_ms, timezone, anchor_ms, start_at_ms, end_at_ms, misfire, catch_up_max,
  overlap, jitter_ms, queue, type, payload, content_type, priority, metadata_json, max_attempts, lease_ms, timeout_ms,
  next_tick_ms`;

type Definition = ScheduleDefinitionRow & { nowMs: number };

export function prepareScheduleStatements(db: Preparer) {
  return {
    insertSchedule: db.prepare<[Definition]>(
      `INSERT INTO schedules (name, ${definitionColumns}, created_at_ms, updated_at_ms)
       VALUES (@name, @source, @cron, @interval_ms, @timezone, @anchor_ms, @start_at_ms, @end_at_ms, @misfire,
               @catch_up_max, @overlap, @jitter_ms, @queue, @type, @payload, @content_type, @priority,
               @metadata_json, @max_attempts, @lease_ms, @timeout_ms, @next_tick_ms, @nowMs, @nowMs)`,
    ),
    /** Replaces the definition (and the cursor the caller computed); keeps paused, the last outcome and totals. */
    updateSchedule: db.prepare<[Definition]>(
      `UPDATE schedules SET source = @source, cron = @cron, interval_ms = @interval_ms, timezone = @timezone,
              anchor_ms = @anchor_ms, start_at_ms = @start_at_ms, end_at_ms = @end_at_ms, misfire = @misfire,
              catch_up_max = @catch_up_max, overlap = @overlap, jitter_ms = @jitter_ms, queue = @queue,
              type = @type, payload = @payload, content_type = @content_type, priority = @priority,
              metadata_json = @metadata_json, max_attempts = @max_attempts, lease_ms = @lease_ms,
              timeout_ms = @timeout_ms,
              next_tick_ms = @next_tick_ms, updated_at_ms = @nowMs
        WHERE name = @name`,
    ),
    deleteSchedule: db.prepare<[string]>('DELETE FROM schedules WHERE name = ?'),
    deleteRuns: db.prepare<[string]>('DELETE FROM schedule_runs WHERE name = ?'),
    /** The run's number: one after the schedule's latest (a seek on the primary key). */
    insertRun: db.prepare<[Omit<ScheduleRunRow, 'seq'> & { name: string }], { seq: number }>(
      `INSERT INTO schedule_runs (name, seq, run_at_ms, tick_ms, outcome, detail, job_id)
       VALUES (@name, coalesce((SELECT max(seq) FROM schedule_runs WHERE name = @name), 0) + 1,
               @run_at_ms, @tick_ms, @outcome, @detail, @job_id)
       RETURNING seq`,
    ),
    forgetRuns: db.prepare<[{ name: string; beforeSeq: number }]>(
      'DELETE FROM schedule_runs WHERE name = @name AND seq < @beforeSeq',
    ),
    runs: db.prepare<[{ name: string; limit: number }], ScheduleRunRow>(
      `SELECT seq, run_at_ms, tick_ms, outcome, detail, job_id FROM schedule_runs
        WHERE name = @name ORDER BY seq DESC LIMIT @limit`,
    ),
    setSchedulePaused: db.prepare<[{ name: string; paused: 0 | 1; nowMs: number }]>(
      'UPDATE schedules SET paused = @paused, updated_at_ms = @nowMs WHERE name = @name',
    ),
    scheduleByName: db.prepare<[string], ScheduleRow>('SELECT * FROM schedules WHERE name = ?'),
    /** Every schedule by name, with the payload's size instead of the payload (listing). */
    allSchedules: db.prepare<[], ScheduleListRow>(
      `SELECT ${listColumns}, length(payload) AS payload_bytes FROM schedules ORDER BY name`,
    ),
    scheduleCount: db.prepare<[], number>('SELECT count(*) FROM schedules').pluck(),
    /** Running schedules whose next tick has come, soonest first (index schedules_due). */
    dueSchedules: db.prepare<[{ nowMs: number; limit: number }], ScheduleRow>(
      `SELECT * FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL AND next_tick_ms <= @nowMs
        ORDER BY next_tick_ms LIMIT @limit`,
    ),
    /** When the next running schedule is due (index schedules_due); null when none is. */
    nextScheduleTick: db
      .prepare<[], number | null>(
        'SELECT min(next_tick_ms) FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL',
      )
      .pluck(),
    /** Records a handled tick or trigger: the cursor, the outcome and the totals. */
    recordScheduleProgress: db.prepare<[ScheduleProgress]>(
      `UPDATE schedules SET next_tick_ms = @nextTickMs, last_tick_ms = @lastTickMs,
              last_run_at_ms = @lastRunAtMs, last_outcome = @lastOutcome, last_detail = @lastDetail,
              last_job_id = coalesce(@lastJobId, last_job_id),
              ticks_enqueued = ticks_enqueued + @enqueued, ticks_skipped = ticks_skipped + @skipped
        WHERE name = @name`,
    ),
    /** Records a manual trigger: the outcome and its job; the cursor and the tick totals stay. */
    recordScheduleTrigger: db.prepare<
      [{ name: string; nowMs: number; jobId: string; detail: string | null }]
    >(
      `UPDATE schedules SET last_run_at_ms = @nowMs, last_outcome = 'triggered', last_detail = @detail,
              last_job_id = @jobId
        WHERE name = @name`,
    ),
  };
}

type ScheduleStatements = ReturnType<typeof prepareScheduleStatements>;

export function scheduleOps(sql: ScheduleStatements): Schedules {
  return {
    *get(name) {
      return sql.scheduleByName.get(name);
    },
    *all() {
      return sql.allSchedules.all();
    },
    *count() {
      return sql.scheduleCount.get() ?? 0;
    },
    *due(p) {
      return sql.dueSchedules.all(p);
    },
    *nextTickMs() {
      return sql.nextScheduleTick.get() ?? null;
    },
    *insert(row) {
      sql.insertSchedule.run(row);
    },
    *update(row) {
      sql.updateSchedule.run(row);
    },
    *delete(name) {
      sql.deleteSchedule.run(name);
      sql.deleteRuns.run(name);
    },
    *runs(p) {
      return sql.runs.all(p);
    },
    *recordRun({ keep, ...run }) {
      const { seq } = sql.insertRun.get(run)!;
      sql.forgetRuns.run({ name: run.name, beforeSeq: seq - keep + 1 });
    },
    *setPaused({ name, paused, nowMs }) {
      sql.setSchedulePaused.run({ name, paused: paused ? 1 : 0, nowMs });
    },
    *recordProgress(p) {
      sql.recordScheduleProgress.run(p);
    },
    *recordTrigger(p) {
      sql.recordScheduleTrigger.run(p);
    },
  };
}
