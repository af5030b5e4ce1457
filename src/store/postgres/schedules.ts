/**
 * Schedules: their definitions, the cursor the maintenance pass advances, and
 * the last outcome. `due` locks the schedules it hands out (SKIP LOCKED), so two
 * servers' passes never handle the same schedule at once; the tick's job and the
 * cursor commit together.
 */
import type { ScheduleDefinitionRow, ScheduleListRow, ScheduleRow, ScheduleRunRow } from '../rows.ts';
import type { Schedules } from '../schedules.ts';
import { type Connection, changes, firstRow, rows, statement, value, writing } from './sql.ts';

const definitionColumns = [
  'source',
  'cron',
  'interval_ms',
  'timezone',
  'anchor_ms',
  'start_at_ms',
  'end_at_ms',
  'misfire',
  'catch_up_max',
  'overlap',
  'jitter_ms',
  'queue',
  'type',
  'payload',
  'content_type',
  'priority',
  'metadata_json',
  'max_attempts',
  'lease_ms',
  'timeout_ms',
  'next_tick_ms',
] as const satisfies readonly Exclude<keyof ScheduleDefinitionRow, 'name'>[];

const listColumns = `name, source, cron, interval_ms, timezone, anchor_ms, start_at_ms, end_at_ms, misfire, catch_up_max,
  overlap, jitter_ms, queue, type, content_type, priority, metadata_json, max_attempts, lease_ms, timeout_ms, paused,
  next_tick_ms,
  last_tick_ms, last_run_at_ms, last_outcome, last_detail, last_job_id, ticks_enqueued, ticks_skipped, created_at_ms,
  updated_at_ms`;
const allColumns = listColumns.replace('content_type,', 'payload, content_type,');

/** $1 the name, $2 … the definition's columns in `definitionColumns` order, then now. */
const nowParam = `$${definitionColumns.length + 2}`;
const insert = statement(
  `INSERT INTO schedules (name, ${definitionColumns.join(', ')}, created_at_ms, updated_at_ms)
   VALUES ($1, ${definitionColumns.map((_, i) => `$${i + 2}`).join(', ')}, ${nowParam}, ${nowParam})`,
);
const update = statement(
  `UPDATE schedules SET ${definitionColumns.map((column, i) => `${column} = $${i + 2}`).join(', ')},
          updated_at_ms = ${nowParam}
    WHERE name = $1`,
);
const definitionValues = (row: ScheduleDefinitionRow & { nowMs: number }) => [
  row.name,
  ...definitionColumns.map((column) => row[column]),
  row.nowMs,
];
const remove = statement('DELETE FROM schedules WHERE name = $1');
const removeRuns = statement('DELETE FROM schedule_runs WHERE name = $1');
const insertRun = statement(
  `INSERT INTO schedule_runs (name, seq, run_at_ms, tick_ms, outcome, detail, job_id)
   VALUES ($1, coalesce((SELECT max(seq) FROM schedule_runs WHERE name = $1), 0) + 1, $2, $3, $4, $5, $6)
   RETURNING seq`,
);
const forgetRuns = statement('DELETE FROM schedule_runs WHERE name = $1 AND seq < $2');
const runs = statement(
  `SELECT seq, run_at_ms, tick_ms, outcome, detail, job_id FROM schedule_runs
    WHERE name = $1 ORDER BY seq DESC LIMIT $2`,
);
const setPaused = statement('UPDATE schedules SET paused = $2, updated_at_ms = $3 WHERE name = $1');
const byName = statement(`SELECT ${allColumns} FROM schedules WHERE name = $1`);
const all = statement(
  `SELECT ${listColumns}, octet_length(payload) AS payload_bytes FROM schedules ORDER BY name`,
);
const count = statement('SELECT count(*) AS v FROM schedules');
const due = statement(
  `SELECT ${allColumns} FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL AND next_tick_ms <= $1
    ORDER BY next_tick_ms LIMIT $2 FOR UPDATE SKIP LOCKED`,
);
/** The same, for a read: a read-only view takes no row locks. */
const dueSeen = statement(
  `SELECT ${allColumns} FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL AND next_tick_ms <= $1
    ORDER BY next_tick_ms LIMIT $2`,
);
const nextTick = statement(
  'SELECT min(next_tick_ms) AS v FROM schedules WHERE paused = 0 AND next_tick_ms IS NOT NULL',
);
const recordProgress = statement(
  `UPDATE schedules SET next_tick_ms = $2, last_tick_ms = $3, last_run_at_ms = $4, last_outcome = $5,
          last_detail = $6, last_job_id = coalesce($7, last_job_id),
          ticks_enqueued = ticks_enqueued + $8, ticks_skipped = ticks_skipped + $9
    WHERE name = $1`,
);
const recordTrigger = statement(
  `UPDATE schedules SET last_run_at_ms = $2, last_outcome = 'triggered', last_detail = $4, last_job_id = $3
    WHERE name = $1`,
);

export function scheduleOps(c: Connection): Schedules {
  return {
    *get(name) {
      return yield* firstRow<ScheduleRow>(c, byName, [name]);
    },
    *all() {
      return yield* rows<ScheduleListRow>(c, all, []);
    },
    *count() {
      return (yield* value<number>(c, count, [])) ?? 0;
    },
    *due(p) {
      // Inside a write the rows are locked for the tick: another server's pass skips them.
      return yield* rows<ScheduleRow>(c, writing(c) ? due : dueSeen, [p.nowMs, p.limit]);
    },
    *nextTickMs() {
      return (yield* value<number | null>(c, nextTick, [])) ?? null;
    },
    *insert(row) {
      yield* changes(c, insert, definitionValues(row));
    },
    *update(row) {
      yield* changes(c, update, definitionValues(row));
    },
    *delete(name) {
      yield* changes(c, remove, [name]);
      yield* changes(c, removeRuns, [name]);
    },
    *runs(p) {
      return yield* rows<ScheduleRunRow>(c, runs, [p.name, p.limit]);
    },
    *recordRun({ keep, ...run }) {
      const inserted = yield* firstRow<{ seq: number }>(c, insertRun, [
        run.name,
        run.run_at_ms,
        run.tick_ms,
        run.outcome,
        run.detail,
        run.job_id,
      ]);
      yield* changes(c, forgetRuns, [run.name, (inserted?.seq ?? 0) - keep + 1]);
    },
    *setPaused(p) {
      yield* changes(c, setPaused, [p.name, p.paused ? 1 : 0, p.nowMs]);
    },
    *recordProgress(p) {
      yield* changes(c, recordProgress, [
        p.name,
        p.nextTickMs,
        p.lastTickMs,
        p.lastRunAtMs,
        p.lastOutcome,
        p.lastDetail,
        p.lastJobId,
        p.enqueued,
        p.skipped,
      ]);
    },
    *recordTrigger(p) {
      yield* changes(c, recordTrigger, [p.name, p.nowMs, p.jobId, p.detail]);
    },
  };
}
