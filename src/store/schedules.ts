/**
 * Recurring schedules, their cursors and runs: a capability of the Store (store.ts).
 */
import type { Op } from './op.ts';
import type { ScheduleDefinitionRow, ScheduleListRow, ScheduleRow, ScheduleRunRow } from './rows.ts';

export interface ScheduleReads {
  get(name: string): Op<ScheduleRow | undefined>;
  /** Every schedule by name, without payloads. */
  all(): Op<ScheduleListRow[]>;
  count(): Op<number>;
  /** Running schedules whose next tick is due at `nowMs`, soonest first. */
  due(p: { nowMs: number; limit: number }): Op<ScheduleRow[]>;
  /** When the next running schedule is due, or null. */
  nextTickMs(): Op<number | null>;
  /** The schedule's latest runs, newest first (at most `limit`). */
  runs(p: { name: string; limit: number }): Op<ScheduleRunRow[]>;
}

/** What handling a schedule's due ticks changes. */
export interface ScheduleProgress {
  name: string;
  nextTickMs: number | null;
  lastTickMs: number;
  lastRunAtMs: number;
  lastOutcome: string;
  lastDetail: string | null;
  /** The job of the latest tick that enqueued one; null keeps the last. */
  lastJobId: string | null;
  /** Ticks enqueued and skipped, added to the totals. */
  enqueued: number;
  skipped: number;
}

export interface Schedules extends ScheduleReads {
  insert(row: ScheduleDefinitionRow & { nowMs: number }): Op<void>;
  /** Replaces the definition (and the cursor); keeps paused, the last outcome and the totals. */
  update(row: ScheduleDefinitionRow & { nowMs: number }): Op<void>;
  delete(name: string): Op<void>;
  setPaused(p: { name: string; paused: boolean; nowMs: number }): Op<void>;
  /** Records a handled tick: the cursor, the outcome and the totals. */
  recordProgress(p: ScheduleProgress): Op<void>;
  /** Records a manual trigger: the outcome and its job; the cursor and the totals stay. */
  recordTrigger(p: { name: string; nowMs: number; jobId: string; detail: string | null }): Op<void>;
  /** Adds a run to the schedule's history and forgets all but its latest `keep`. */
  recordRun(p: Omit<ScheduleRunRow, 'seq'> & { name: string; keep: number }): Op<void>;
}
