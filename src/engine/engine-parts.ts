/**
 * Builds the engine's capability modules over one context and wires them to
 * each other, then opens them; engine.ts is the facade that delegates to them.
 * Opening order, each through the one write path: the queues, the config's
 * schedules, the run-time overrides, then maintenance.
 */
import type { Store } from '../store/store.ts';
import { AuditLog } from './audit/audit-log.ts';
import type { Clock } from './clock.ts';
import { createEngineContext, type EngineContext } from './context.ts';
import { Canceller } from './control/cancel.ts';
import { DeadLetters } from './control/dead-letters.ts';
import { JobUpdater } from './control/job-update.ts';
import { OperatorActions } from './control/operator-actions.ts';
import { SeppError, toSeppError } from './errors.ts';
import { EventLog } from './events/event-log.ts';
import { FlowControl } from './flow-control/flow-control.ts';
import { DiskFull } from './jobs/disk-full.ts';
import { Enqueuer } from './jobs/enqueue.ts';
import { JobIdGenerator, type RandomBytes, systemRandomBytes } from './jobs/job-id.ts';
import { JobQueries } from './jobs/job-queries.ts';
import { AckBatches } from './leases/ack-batch.ts';
import { Expiry } from './leases/expiry.ts';
import { ProgressReports } from './leases/progress.ts';
import { Reserver } from './leases/reserve.ts';
import { Settler } from './leases/settle.ts';
import { WaiterRegistry } from './leases/waiters.ts';
import { Leases } from './leases.ts';
import { EngineLifecycle, shuttingDown } from './lifecycle.ts';
import { Maintenance } from './maintenance.ts';
import { JobBrowser } from './operators/job-browse.ts';
import { JobSearch } from './operators/job-search.ts';
import { OnlineBackup } from './operators/online-backup.ts';
import { WorkerControl } from './operators/worker-control.ts';
import { QueueRegistry } from './queue-registry.ts';
import { QueueAdmin } from './queues/queue-admin.ts';
import { type QueueSettingsCheck, RuntimeSettings } from './queues/runtime-settings.ts';
import { Schedules } from './schedules/schedules.ts';
import type { ReconcileReport, ScheduleEvent } from './schedules/types.ts';
import type { EngineOptions } from './settings.ts';
import type { CommitStats, JobEvent } from './types.ts';

export interface EngineDeps {
  clock: Clock;
  /** Uniform random numbers in [0, 1), for backoff jitter. */
  random?: () => number;
  randomBytes?: RandomBytes;
  /** Called after every commit (the SQLite store: every batch), for telemetry. */
  onBatch?: (stats: CommitStats) => void;
  /** Called when time-driven maintenance fails (it is retried). */
  onMaintenanceError?: (error: SeppError) => void;
  /** Called when an after-commit observer throws (a bug); the operation's caller is answered anyway. */
  onHookError?: (error: SeppError) => void;
  /** Called with what happened to jobs, after each commit. */
  onEvent?: (event: JobEvent) => void;
  /** Called with what happened to schedules' ticks, after each commit. */
  onScheduleEvent?: (event: ScheduleEvent) => void;
  /** Called once the config's schedules are reconciled, as the engine opens. */
  onSchedulesReconciled?: (report: ReconcileReport) => void;
  /** Told when the disk fills up (enqueues refused, the store's reserve freed) and when there is room again. */
  onDiskFull?: (full: boolean, detail: string) => void;
  /**
   * Checks across a queue's settings when an operator changes them at run time
   * (app.ts passes the config file's checks); without it only each value's own
   * validity, which the caller checked, holds.
   */
  checkQueueSettings?: QueueSettingsCheck;
}

/** The engine's capability modules, each over the same context. */
export interface EngineParts {
  readonly ctx: EngineContext;
  readonly lifecycle: EngineLifecycle;
  readonly diskFull: DiskFull;
  readonly enqueuer: Enqueuer;
  readonly leases: Leases;
  readonly maintenance: Maintenance;
  readonly queries: JobQueries;
  readonly browser: JobBrowser;
  readonly finder: JobSearch;
  readonly workerControl: WorkerControl;
  readonly audit: AuditLog;
  readonly actions: OperatorActions;
  readonly queueAdmin: QueueAdmin;
  readonly deadLetters: DeadLetters;
  readonly onlineBackup: OnlineBackup;
  readonly schedules: Schedules;
  readonly canceller: Canceller;
  readonly updater: JobUpdater;
  readonly runtimeSettings: RuntimeSettings;
}

/**
 * Builds every part over `store`, then opens them through the write path: loads
 * the queues, reconciles the config's schedules, reads the run-time overrides and
 * starts maintenance. If opening fails the store is closed and the error thrown.
 */
export async function openEngineParts(
  store: Store,
  options: EngineOptions,
  deps: EngineDeps,
): Promise<EngineParts> {
  const parts = buildParts(store, options, deps);
  try {
    const { ctx } = parts;
    await ctx.read((view) => ctx.flow.load(view));
    await ctx.write((tx) => parts.queueAdmin.load(tx));
    // The config's schedules are checked against the config's queue settings, as `sepp config
    // check` checks them, so a run-time override cannot keep the server from starting (it refuses
    // the schedule's jobs instead, which the schedule's outcome shows): reconcile, then the overrides.
    const reconciled = await parts.schedules.reconcile(options.schedules ?? []);
    deps.onSchedulesReconciled?.(reconciled);
    await ctx.read((view) => parts.runtimeSettings.load(view));
  } catch (error) {
    await parts.lifecycle.close();
    throw error;
  }
  parts.maintenance.start();
  return parts;
}

function buildParts(store: Store, options: EngineOptions, deps: EngineDeps): EngineParts {
  const { clock } = deps;
  let maintenance: Maintenance | undefined;
  const queues = new QueueRegistry(options);
  const waiters = new WaiterRegistry();
  const flow = new FlowControl(store, clock, waiters, (queue) => queues.settingsFor(queue));
  const events = new EventLog(options.limits, clock, randomHex(deps.randomBytes ?? systemRandomBytes, 8));
  const diskFull = new DiskFull(store.diskReserve, clock, (full, detail) => deps.onDiskFull?.(full, detail));
  const lifecycle = new EngineLifecycle(
    store,
    () => {
      maintenance?.stop();
      flow.stop();
      waiters.settleAll('closed');
      events.endAll(shuttingDown());
    },
    () => waiters.settleAll('closed'),
  );
  const { onBatch, onHookError } = deps;
  store.attach({
    commitFailed: (failure) => {
      diskFull.commitFailed(failure);
      return new SeppError('unavailable', `storage unavailable, nothing was written: ${failure.message}`, {
        cause: failure,
      });
    },
    unitFailed: toSeppError,
    closed: shuttingDown,
    // Reserves held back by a limit are woken by the leases this commit ended.
    afterCommit:
      onBatch === undefined
        ? () => flow.flushLeaseEnds()
        : (stats) => {
            flow.flushLeaseEnds();
            onBatch(stats);
          },
    ...(onHookError === undefined ? {} : { hookFailed: (error: unknown) => onHookError(toSeppError(error)) }),
  });
  const ctx = createEngineContext({
    store,
    write: (unit) => lifecycle.write(unit),
    read: (unit) => lifecycle.read(unit),
    clock,
    limits: options.limits,
    queues,
    waiters,
    flow,
    events,
    ...(deps.random === undefined ? {} : { random: deps.random }),
    ...(deps.onEvent === undefined ? {} : { onEvent: deps.onEvent }),
    wakeAt: (atMs) => maintenance?.wakeAt(atMs),
  });
  const expiry = new Expiry(ctx);
  const reserver = new Reserver(ctx, expiry);
  const settler = new Settler(ctx);
  const acks = new AckBatches(ctx, settler);
  const progress = new ProgressReports(ctx);
  const queries = new JobQueries(ctx);
  const browser = new JobBrowser(ctx);
  const finder = new JobSearch(ctx, browser, queries);
  const audit = new AuditLog(clock, options.limits.maxPageSize);
  const workerControl = new WorkerControl(ctx, settler, audit);
  const actions = new OperatorActions(ctx, audit);
  const ids = new JobIdGenerator(deps.randomBytes ?? systemRandomBytes);
  const enqueuer = new Enqueuer(ctx, ids, audit, diskFull);
  const schedules = new Schedules(
    ctx,
    audit,
    (tx, requests) => enqueuer.enqueueWithin(tx, requests),
    deps.onScheduleEvent,
  );
  maintenance = new Maintenance(ctx, settler, expiry, deps.onMaintenanceError, schedules);
  const queueAdmin = new QueueAdmin(ctx, audit);
  const deadLetters = new DeadLetters(ctx, actions, audit);
  const canceller = new Canceller(ctx, actions, audit);
  const updater = new JobUpdater(ctx, actions, audit);
  const onlineBackup = new OnlineBackup(store);
  const runtimeSettings = new RuntimeSettings(ctx, audit, deps.checkQueueSettings);
  const leases = new Leases(ctx, lifecycle, reserver, settler, acks, progress);
  return {
    ctx,
    lifecycle,
    diskFull,
    enqueuer,
    leases,
    maintenance,
    queries,
    browser,
    finder,
    workerControl,
    audit,
    actions,
    queueAdmin,
    deadLetters,
    onlineBackup,
    schedules,
    canceller,
    updater,
    runtimeSettings,
  };
}

function randomHex(randomBytes: RandomBytes, bytes: number): string {
  const buffer = new Uint8Array(bytes);
  randomBytes(buffer);
  return Buffer.from(buffer).toString('hex');
}
