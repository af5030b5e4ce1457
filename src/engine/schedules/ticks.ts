/**
 * Ticks: the maintenance loop asks for the schedules whose next tick has come
 * and handles each inside its write operation. For one schedule, the due
 * ticks are those from its cursor (`next_tick_ms`) up to now; the misfire
 * policy picks which of them run, the overlap policy may skip one, each
 * running tick enqueues its job (idempotency key `schedule:NAME:TICK`), and
 * the cursor moves past the latest due tick — all in the one transaction, so
 * after a crash either all of it happened or none, and the next pass does it.
 */
import type { Op } from '../../store/op.ts';
import type { ScheduleRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import type { EnqueueRequest, EnqueueResult } from '../types.ts';
import type { ScheduleTiming } from './timing.ts';
import type { ScheduleEvent, ScheduleOutcome } from './types.ts';
import { tickKey } from './validate.ts';

/** A tick handled this much after its time or later counts as missed (policy `skip` drops it). */
export const misfireGraceMs = 60_000;
/** Schedules one maintenance pass handles; more wait for the next pass, which comes at once. */
const schedulesPerPass = 100;

/** Jobs still to finish: a tick that finds the schedule's last job in one of these overlaps it. */
const unfinished: ReadonlySet<string> = new Set(['scheduled', 'ready', 'leased']);

export interface TickDeps {
  ctx: EngineContext;
  timingOf(
    row: Pick<
      ScheduleRow,
      'name' | 'cron' | 'interval_ms' | 'timezone' | 'anchor_ms' | 'start_at_ms' | 'end_at_ms'
    >,
  ): ScheduleTiming;
  /** Enqueues inside the running write operation (Enqueuer.enqueueWithin). */
  enqueueWithin(tx: StoreTx, requests: readonly EnqueueRequest[]): Op<EnqueueResult[]>;
  onEvent: ((event: ScheduleEvent) => void) | undefined;
}

/** The job a schedule's template makes for a tick (or, `manual`, for a trigger at `tickMs`). */
export function tickRequest(
  row: ScheduleRow,
  tickMs: number,
  runAtMs: number,
  manual = false,
): EnqueueRequest {
  const request: EnqueueRequest = {
    queue: row.queue,
    type: row.type,
    payload: row.payload,
    contentType: row.content_type,
    priority: row.priority,
    idempotencyKey: tickKey(row.name, tickMs, manual),
    runAtMs,
  };
  if (row.metadata_json !== null) request.metadata = JSON.parse(row.metadata_json) as Record<string, string>;
  if (row.max_attempts !== null) request.maxAttempts = row.max_attempts;
  if (row.lease_ms !== null) request.leaseMs = row.lease_ms;
  if (row.timeout_ms !== null) request.timeoutMs = row.timeout_ms;
  return request;
}

/**
 * Handles every due schedule (up to a pass's share). Returns whether more are
 * due than one pass handles.
 */
/** The runs a schedule keeps in its history (schedule_runs): the latest 20. */
export const scheduleRunsKept = 20;

export function* runDueTicks(deps: TickDeps, tx: StoreTx, nowMs: number): Op<boolean> {
  const rows = yield* tx.schedules.due({ nowMs, limit: schedulesPerPass });
  for (const row of rows) yield* tickSchedule(deps, tx, row, nowMs);
  return rows.length === schedulesPerPass;
}

function* tickSchedule(deps: TickDeps, tx: StoreTx, row: ScheduleRow, nowMs: number): Op<void> {
  const { ctx } = deps;
  const firstMs = row.next_tick_ms as number;
  const timing = deps.timingOf(row);
  const keep = row.misfire === 'catch_up' ? row.catch_up_max : 1;
  const due = timing.dueBetween(firstMs, nowMs, keep);
  const latestMs = due.latest.at(-1);
  if (latestMs === undefined) {
    // The cursor is past the end: nothing will tick again.
    yield* tx.schedules.recordProgress({
      name: row.name,
      nextTickMs: null,
      lastTickMs: row.last_tick_ms ?? firstMs,
      lastRunAtMs: row.last_run_at_ms ?? nowMs,
      lastOutcome: row.last_outcome ?? 'skipped_misfire',
      lastDetail: row.last_detail,
      lastJobId: null,
      enqueued: 0,
      skipped: 0,
    });
    return;
  }
  const running =
    row.misfire === 'catch_up'
      ? due.latest
      : row.misfire === 'run_latest' || nowMs - latestMs <= misfireGraceMs
        ? [latestMs]
        : [];
  const missed = due.count - running.length;

  let lastJobId = row.last_job_id;
  let outcome: ScheduleOutcome = 'skipped_misfire';
  let detail: string | null = null;
  let enqueued = 0;
  let skippedOverlap = 0;
  let rejected = 0;
  let rejection = '';
  for (const tickMs of running) {
    if (row.overlap === 'skip' && lastJobId !== null) {
      const state = yield* tx.jobs.stateOf(lastJobId);
      if (state !== undefined && unfinished.has(state)) {
        skippedOverlap++;
        outcome = 'skipped_overlap';
        detail = `job ${lastJobId} of an earlier tick is still ${state}`;
        continue;
      }
    }
    const jitterMs = row.jitter_ms > 0 ? Math.floor(ctx.random() * (row.jitter_ms + 1)) : 0;
    const [result] = yield* deps.enqueueWithin(tx, [tickRequest(row, tickMs, tickMs + jitterMs)]);
    if (result?.ok) {
      enqueued++;
      lastJobId = result.jobId;
      outcome = result.deduplicated ? 'deduplicated' : 'enqueued';
      detail = null;
    } else {
      rejected++;
      outcome = 'rejected';
      rejection = result === undefined ? 'no result' : `${result.reason}: ${result.message}`;
      detail = rejection;
    }
  }
  if (missed > 0) {
    const counted = `${due.exact ? '' : 'at least '}${missed} missed tick${missed === 1 ? '' : 's'}`;
    detail = `${detail === null ? '' : `${detail}; `}${counted} skipped (misfire ${row.misfire})`;
  }
  yield* tx.schedules.recordProgress({
    name: row.name,
    nextTickMs: timing.nextAfter(latestMs),
    lastTickMs: latestMs,
    lastRunAtMs: nowMs,
    lastOutcome: outcome,
    lastDetail: detail,
    lastJobId: lastJobId === row.last_job_id ? null : lastJobId,
    enqueued,
    skipped: missed + skippedOverlap + rejected,
  });
  // One run per pass (catch-up ticks handled together are one run, with the last tick's outcome).
  yield* tx.schedules.recordRun({
    name: row.name,
    run_at_ms: nowMs,
    tick_ms: latestMs,
    outcome,
    detail: enqueued > 1 ? `${enqueued} ticks enqueued${detail === null ? '' : `; ${detail}`}` : detail,
    job_id: enqueued > 0 ? lastJobId : null,
    keep: scheduleRunsKept,
  });

  const onEvent = deps.onEvent;
  if (onEvent === undefined) return;
  const events: ScheduleEvent[] = [];
  const schedule = row.name;
  if (enqueued > 0) events.push({ kind: 'tick_enqueued', schedule, queue: row.queue, count: enqueued });
  if (missed > 0) {
    events.push({ kind: 'tick_skipped', schedule, reason: 'misfire', count: missed, detail: detail ?? '' });
  }
  if (skippedOverlap > 0) {
    events.push({
      kind: 'tick_skipped',
      schedule,
      reason: 'overlap',
      count: skippedOverlap,
      detail: 'the last job has not finished',
    });
  }
  if (rejected > 0)
    events.push({ kind: 'tick_skipped', schedule, reason: 'rejected', count: rejected, detail: rejection });
  if (events.length > 0) tx.afterCommit(() => events.forEach(onEvent));
}
