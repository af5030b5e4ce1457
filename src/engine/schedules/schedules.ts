/**
 * Schedules: periodic jobs kept by the server (see types.ts). Definitions come
 * from the config (reconciled when the engine opens and on a config reload) or the API; the
 * maintenance loop produces the ticks (ticks.ts). Every change is one write
 * operation with its audit entry in the same transaction.
 *
 * The one thing kept in memory is when the next running schedule is due, so
 * a maintenance pass with no schedule due asks the database nothing, and the
 * maintenance timer wakes for the next tick instead of polling. It changes
 * only after the commit that changed the schedules.
 */

import type { Op } from '../../store/op.ts';
import type { ScheduleDefinitionRow, ScheduleRow } from '../../store/rows.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { type NamePageQuery, pickKeyedPage } from '../name-pages.ts';
import { QueueRegistry } from '../queue-registry.ts';
import type { EnqueueAccepted, EnqueueRequest, EnqueueResult, Page } from '../types.ts';
import { auditDetails, definitionParams, sameDefinition, sameTiming, scheduleInfoFromRow } from './rows.ts';
import { runDueTicks, scheduleRunsKept, type TickDeps, tickRequest } from './ticks.ts';
import { ScheduleTiming } from './timing.ts';
import type { ReconcileReport, ScheduleEvent, ScheduleInfo, ScheduleRun, ScheduleSpec } from './types.ts';
import { checkSchedule, type ValidSchedule } from './validate.ts';

/** Most next run times one schedule reports; a listing of all of them reports at most `listNextRunsMax`. */
export const nextRunsMax = 100;
export const listNextRunsMax = 10;

/** How a put treats an existing schedule of that name. */
export type PutMode = 'create' | 'update' | 'upsert';

export class Schedules {
  private readonly timings = new Map<string, { key: string; timing: ScheduleTiming }>();
  private nextDueMs = Number.POSITIVE_INFINITY;
  private readonly ticks: TickDeps;

  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
    enqueueWithin: (tx: StoreTx, requests: readonly EnqueueRequest[]) => Op<EnqueueResult[]>,
    onEvent: ((event: ScheduleEvent) => void) | undefined,
  ) {
    this.ticks = { ctx, timingOf: (row) => this.timingOf(row), enqueueWithin, onEvent };
  }

  /** When the next running schedule is due (+Infinity: none): memory, no query. */
  dueMs(): number {
    return this.nextDueMs;
  }

  /** Handles the due ticks inside a maintenance pass; returns whether more are due at once, and when the next is. */
  *runDue(tx: StoreTx, nowMs: number): Op<{ more: boolean; nextDueMs: number }> {
    const more = yield* runDueTicks(this.ticks, tx, nowMs);
    return { more, nextDueMs: yield* this.refreshDue(tx) };
  }

  /**
   * Reconciles the config's schedules when the engine opens: adds new ones,
   * updates changed ones (a changed timing restarts the cursor from now),
   * takes over API schedules the config now names, and removes config
   * schedules no longer listed. Schedules created over the API that the
   * config does not name are left alone. Each change is audited (actor `config`).
   */
  reconcile(specs: readonly ScheduleSpec[]): Promise<ReconcileReport> {
    // As the engine opens, no run-time override is loaded yet: the queues are the file's.
    return this.ctx.write((tx) => this.reconcileAndRefresh(tx, specs, this.ctx.queues));
  }

  /**
   * The same while the engine runs (a config reload): one write, durable when
   * it resolves. The schedules are checked against the file's queue settings,
   * as at open, so a run-time override refuses a tick's job instead of the reload.
   */
  reconcileNow(specs: readonly ScheduleSpec[]): Promise<ReconcileReport> {
    const fileQueues = new QueueRegistry({ ...this.ctx.queues.fileSettings, limits: this.ctx.limits });
    return this.ctx.write((tx) => this.reconcileAndRefresh(tx, specs, fileQueues));
  }

  private *reconcileAndRefresh(
    tx: StoreTx,
    specs: readonly ScheduleSpec[],
    queues: QueueRegistry,
  ): Op<ReconcileReport> {
    const report = yield* this.reconcileIn(tx, specs, queues);
    yield* this.refreshDue(tx);
    return report;
  }

  private *reconcileIn(
    tx: StoreTx,
    specs: readonly ScheduleSpec[],
    queues: QueueRegistry,
  ): Op<ReconcileReport> {
    const report: ReconcileReport = { added: [], updated: [], removed: [], adopted: [] };
    const nowMs = this.ctx.clock.nowMs();
    const named = new Set<string>();
    for (const spec of specs) {
      named.add(spec.name);
      const existing = yield* tx.schedules.get(spec.name);
      // An end that has passed is accepted here: the schedule's time is over, the server still starts.
      const valid = this.check(spec, existing, nowMs, `schedule ${spec.name}: `, 'accept', queues);
      const params = definitionParams(valid, 'config', null);
      const actor = { actor: 'config', target: `schedule:${spec.name}` };
      if (existing === undefined) {
        // The config's schedules are stored whatever the limit (the config check holds them
        // to it); schedules made over the API then find no room until some are gone.
        yield* this.store(tx, undefined, params, nowMs, false);
        yield* this.audit.write(tx, { ...actor, action: 'schedule.create', details: auditDetails(params) });
        report.added.push(spec.name);
      } else if (!sameDefinition(existing, params)) {
        yield* this.store(tx, existing, params, nowMs);
        yield* this.audit.write(tx, { ...actor, action: 'schedule.update', details: auditDetails(params) });
        (existing.source === 'api' ? report.adopted : report.updated).push(spec.name);
      }
    }
    for (const row of yield* tx.schedules.all()) {
      if (row.source !== 'config' || named.has(row.name)) continue;
      yield* tx.schedules.delete(row.name);
      // A cache of compiled timings: dropping an entry early (before a commit that may fail) is harmless.
      this.timings.delete(row.name);
      yield* this.audit.write(tx, {
        actor: 'config',
        action: 'schedule.delete',
        target: `schedule:${row.name}`,
      });
      report.removed.push(row.name);
    }
    return report;
  }

  *list(view: StoreView, nextRuns = 1): Op<ScheduleInfo[]> {
    const count = checkNextRuns(nextRuns, listNextRunsMax);
    const nowMs = this.ctx.clock.nowMs();
    return (yield* view.schedules.all()).map((row) =>
      scheduleInfoFromRow(row, this.timingOf(row), nowMs, count),
    );
  }

  /** One page of schedules in name order (name-pages.ts); run times are worked out for that page only. */
  *page(view: StoreView, query: NamePageQuery, nextRuns = 1): Op<Page<ScheduleInfo>> {
    const count = checkNextRuns(nextRuns, listNextRunsMax);
    const nowMs = this.ctx.clock.nowMs();
    const page = pickKeyedPage(
      'schedules',
      yield* view.schedules.all(),
      (row) => row.name,
      query,
      this.ctx.limits,
    );
    return {
      items: page.items.map((row) => scheduleInfoFromRow(row, this.timingOf(row), nowMs, count)),
      nextCursor: page.nextCursor,
    };
  }

  *get(view: StoreView, name: string, nextRuns = 10): Op<ScheduleInfo> {
    const count = checkNextRuns(nextRuns, nextRunsMax);
    const row = yield* this.find(view, name);
    return scheduleInfoFromRow(row, this.timingOf(row), this.ctx.clock.nowMs(), count);
  }

  /** The schedule's latest runs (at most 20 are kept), newest first. */
  *runs(view: StoreView, name: string): Op<ScheduleRun[]> {
    yield* this.find(view, name);
    const rows = yield* view.schedules.runs({ name, limit: scheduleRunsKept });
    return rows.map((r) => ({
      runAtMs: r.run_at_ms,
      tickMs: r.tick_ms,
      outcome: r.outcome as ScheduleRun['outcome'],
      detail: r.detail,
      jobId: r.job_id,
    }));
  }

  /**
   * Creates or changes an API schedule. A changed timing restarts its cursor
   * from now; an unchanged one keeps it (and so its next tick). Paused stays as it was.
   */
  put(
    spec: ScheduleSpec,
    mode: PutMode,
    audit?: AuditInput,
  ): Promise<{ schedule: ScheduleInfo; created: boolean }> {
    return this.ctx.write((tx) => this.putIn(tx, spec, mode, audit));
  }

  private *putIn(
    tx: StoreTx,
    spec: ScheduleSpec,
    mode: PutMode,
    audit: AuditInput | undefined,
  ): Op<{ schedule: ScheduleInfo; created: boolean }> {
    const nowMs = this.ctx.clock.nowMs();
    const existing = yield* tx.schedules.get(spec.name);
    if (existing !== undefined) this.checkChangeable(existing, 'change');
    if (existing !== undefined && mode === 'create') {
      throw new SeppError(
        'already_exists',
        `schedule ${spec.name} already exists; update it (UpdateSchedule) or delete it first`,
      );
    }
    if (existing === undefined && mode === 'update') {
      throw new SeppError('not_found', `schedule ${spec.name} does not exist; create it (CreateSchedule)`);
    }
    const params = definitionParams(this.check(spec, existing, nowMs), 'api', null);
    yield* this.store(tx, existing, params, nowMs);
    if (audit !== undefined)
      yield* this.audit.write(tx, audit, { created: existing === undefined, ...auditDetails(params) });
    yield* this.refreshDue(tx);
    const row = yield* this.find(tx, spec.name);
    return {
      schedule: scheduleInfoFromRow(row, this.timingOf(row), nowMs, 1),
      created: existing === undefined,
    };
  }

  /**
   * Pauses or resumes a schedule (config ones too: it is operating, not
   * defining). Ticks missed while paused follow the misfire policy on resume.
   */
  setPaused(name: string, paused: boolean, audit?: AuditInput): Promise<ScheduleInfo> {
    return this.ctx.write((tx) => this.setPausedIn(tx, name, paused, audit));
  }

  private *setPausedIn(
    tx: StoreTx,
    name: string,
    paused: boolean,
    audit: AuditInput | undefined,
  ): Op<ScheduleInfo> {
    const row = yield* this.find(tx, name);
    const nowMs = this.ctx.clock.nowMs();
    yield* tx.schedules.setPaused({ name, paused, nowMs });
    if (audit !== undefined) yield* this.audit.write(tx, audit, { wasPaused: row.paused === 1 });
    yield* this.refreshDue(tx);
    const changed = yield* this.find(tx, name);
    return scheduleInfoFromRow(changed, this.timingOf(changed), nowMs, 1);
  }

  /** Deletes an API schedule; jobs it already enqueued stay. */
  delete(name: string, audit?: AuditInput): Promise<void> {
    return this.ctx.write((tx) => this.deleteIn(tx, name, audit));
  }

  private *deleteIn(tx: StoreTx, name: string, audit: AuditInput | undefined): Op<void> {
    const row = yield* this.find(tx, name);
    this.checkChangeable(row, 'delete');
    yield* tx.schedules.delete(name);
    if (audit !== undefined) yield* this.audit.write(tx, audit, { ticksEnqueued: row.ticks_enqueued });
    tx.afterCommit(() => this.timings.delete(name));
    yield* this.refreshDue(tx);
  }

  /**
   * Enqueues the schedule's job now, outside its ticks (paused or not, and
   * whatever the overlap policy): idempotency key `schedule:NAME:manual:NOW`.
   * The cursor does not move. A refused job fails the call with its rejection.
   */
  trigger(name: string, audit?: AuditInput): Promise<EnqueueAccepted> {
    return this.ctx.write((tx) => this.triggerIn(tx, name, audit));
  }

  private *triggerIn(tx: StoreTx, name: string, audit: AuditInput | undefined): Op<EnqueueAccepted> {
    const row = yield* this.find(tx, name);
    const nowMs = this.ctx.clock.nowMs();
    const [result] = yield* this.ticks.enqueueWithin(tx, [tickRequest(row, nowMs, nowMs, true)]);
    if (result === undefined) throw new SeppError('internal', 'enqueue returned no result');
    if (!result.ok) throw SeppError.rejected(result);
    const detail = audit === undefined ? null : `by ${audit.actor}`;
    yield* tx.schedules.recordTrigger({ name, nowMs, jobId: result.jobId, detail });
    yield* tx.schedules.recordRun({
      name,
      run_at_ms: nowMs,
      tick_ms: null,
      outcome: 'triggered',
      detail,
      job_id: result.jobId,
      keep: scheduleRunsKept,
    });
    if (audit !== undefined)
      yield* this.audit.write(tx, audit, { jobId: result.jobId, deduplicated: result.deduplicated });
    return result;
  }

  /**
   * Inserts a new schedule, its cursor at its first tick after now, or
   * replaces an existing one's definition: an unchanged timing keeps the
   * cursor (so its next tick), a changed one starts again from now.
   */
  private *store(
    tx: StoreTx,
    existing: ScheduleRow | undefined,
    params: ScheduleDefinitionRow,
    nowMs: number,
    limited = true,
  ): Op<void> {
    if (existing === undefined) {
      if (limited) yield* this.checkRoom(tx);
      params.next_tick_ms = this.timingOf(params).nextAfter(nowMs);
      yield* tx.schedules.insert({ ...params, nowMs });
      return;
    }
    params.next_tick_ms = sameTiming(existing, params)
      ? existing.next_tick_ms
      : this.timingOf(params).nextAfter(nowMs);
    yield* tx.schedules.update({ ...params, nowMs });
  }

  /** The checked definition, or INVALID_ARGUMENT naming the field; an interval keeps counting from its anchor. */
  private check(
    spec: ScheduleSpec,
    existing: ScheduleRow | undefined,
    nowMs: number,
    prefix = '',
    ended: 'refuse' | 'accept' = 'refuse',
    queues: QueueRegistry = this.ctx.queues,
  ): ValidSchedule {
    const anchorMs = existing?.anchor_ms ?? nowMs;
    const check = checkSchedule(spec, queues, this.ctx.limits, nowMs, anchorMs, ended);
    if (!check.ok) throw new SeppError('invalid_argument', `${prefix}${check.field}: ${check.message}`);
    return check.value;
  }

  private *find(view: StoreView, name: string): Op<ScheduleRow> {
    const row = typeof name === 'string' && name !== '' ? yield* view.schedules.get(name) : undefined;
    if (row === undefined) {
      throw new SeppError(
        name === '' ? 'invalid_argument' : 'not_found',
        name === '' ? 'name: required' : `schedule ${name} does not exist`,
      );
    }
    return row;
  }

  private checkChangeable(row: ScheduleRow, what: 'change' | 'delete'): void {
    if (row.source !== 'config') return;
    throw new SeppError(
      'failed_precondition',
      `schedule ${row.name} is declared in the config file ([[schedules]] in sepp.toml), so it cannot be ${what === 'change' ? 'changed' : 'deleted'} over the API; ${what} it there and reload the config (sepp config reload or SIGHUP; pause, resume and trigger work on it)`,
    );
  }

  private *checkRoom(view: StoreView): Op<void> {
    const max = this.ctx.limits.maxSchedules;
    if ((yield* view.schedules.count()) >= max) {
      throw new SeppError(
        'resource_exhausted',
        `the server keeps ${max} schedules, its limit (limits.max_schedules); delete one or raise the limit`,
      );
    }
  }

  /** Reads when the next running schedule is due; memory and the maintenance timer follow after the commit. */
  private *refreshDue(tx: StoreTx): Op<number> {
    const nextMs = (yield* tx.schedules.nextTickMs()) ?? Number.POSITIVE_INFINITY;
    tx.afterCommit(() => {
      this.nextDueMs = nextMs;
    });
    if (Number.isFinite(nextMs)) this.ctx.wakeAt(tx, nextMs);
    return nextMs;
  }

  /** The compiled timing of a schedule, cached until its definition changes. */
  private timingOf(
    row: Pick<
      ScheduleRow,
      'name' | 'cron' | 'interval_ms' | 'timezone' | 'anchor_ms' | 'start_at_ms' | 'end_at_ms'
    >,
  ): ScheduleTiming {
    const key = `${row.cron}\0${row.interval_ms}\0${row.timezone}\0${row.anchor_ms}\0${row.start_at_ms}\0${row.end_at_ms}`;
    const cached = this.timings.get(row.name);
    if (cached !== undefined && cached.key === key) return cached.timing;
    const timing = new ScheduleTiming({
      cron: row.cron,
      intervalMs: row.interval_ms,
      timezone: row.timezone,
      anchorMs: row.anchor_ms,
      startAtMs: row.start_at_ms,
      endAtMs: row.end_at_ms,
    });
    // Bounded: one entry per schedule (limits.max_schedules), dropped on delete.
    this.timings.set(row.name, { key, timing });
    return timing;
  }
}

function checkNextRuns(nextRuns: number, max: number): number {
  if (!Number.isInteger(nextRuns) || nextRuns < 0 || nextRuns > max) {
    throw new SeppError(
      'invalid_argument',
      `next_runs is ${nextRuns}; it must be an integer from 0 to ${max}`,
    );
  }
  return nextRuns;
}
