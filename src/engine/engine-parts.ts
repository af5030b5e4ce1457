/**
 * Builds the engine's capability modules over one context and wires them to
 * each other; engine.ts is the facade that delegates to them. Opening order:
 * queues, the config's schedules, run-time overrides, then maintenance.
 */
import type { BatchStats } from '../store/sqlite/group-commit.ts';
import type { Db } from '../store/sqlite/open.ts';
import { prepareRuntimeStatements } from '../store/sqlite/runtime-statements.ts';
import { AckBatches } from './ack-batch.ts';
import { AdminSessions } from './admin-sessions.ts';
import { AuditLog } from './audit.ts';
import { OnlineBackup } from './backup.ts';
import { Canceller } from './cancel.ts';
import type { Clock } from './clock.ts';
import { createEngineContext, type EngineContext, type Write } from './context.ts';
import { DeadLetters } from './dead-letters.ts';
import { DiskFull, type StorageSpace } from './disk-full.ts';
import { Enqueuer } from './enqueue.ts';
import { SeppError, toSeppError } from './errors.ts';
import { Expiry } from './expiry.ts';
import { JobBrowser } from './job-browse.ts';
import { JobIdGenerator, type RandomBytes, systemRandomBytes } from './job-id.ts';
import { JobQueries } from './job-queries.ts';
import { JobSearch } from './job-search.ts';
import { JobUpdater } from './job-update.ts';
import { Leases } from './leases.ts';
import { EngineLifecycle, shuttingDown } from './lifecycle.ts';
import { Maintenance } from './maintenance.ts';
import { OperatorActions } from './operator-actions.ts';
import { ProgressReports } from './progress.ts';
import { QueueAdmin } from './queue-admin.ts';
import { Reserver } from './reserve.ts';
import { type QueueSettingsCheck, RuntimeSettings } from './runtime-settings.ts';
import { Schedules } from './schedules/schedules.ts';
import type { ReconcileReport, ScheduleEvent } from './schedules/types.ts';
import type { EngineOptions } from './settings.ts';
import { Settler } from './settle.ts';
import type { JobEvent } from './types.ts';
import { WorkerControl } from './worker-control.ts';

export interface EngineDeps {
  clock: Clock;
  /** Uniform random numbers in [0, 1), for backoff jitter. */
  random?: () => number;
  randomBytes?: RandomBytes;
  /** Called after every group commit (telemetry). */
  onBatch?: (stats: BatchStats) => void;
  /** Called when time-driven maintenance fails (it is retried). */
  onMaintenanceError?: (error: SeppError) => void;
  /** Called when an after-commit observer throws (a bug); the operation's caller is answered anyway. */
  onHookError?: (error: SeppError) => void;
  /** Called with what happened to jobs, after each commit. */
  onEvent?: (event: JobEvent) => void;
  /** Most operations per group commit (default: the store's). 1 gives one transaction per operation, for benchmarks. */
  maxBatchOperations?: number;
  /** Called with what happened to schedules' ticks, after each commit. */
  onScheduleEvent?: (event: ScheduleEvent) => void;
  /** Called once the config's schedules are reconciled, as the engine opens. */
  onSchedulesReconciled?: (report: ReconcileReport) => void;
  /** Room the store keeps for a full disk (store/sqlite/disk-reserve.ts); without it, none is freed. */
  storageSpace?: StorageSpace;
  /** Told when the disk fills up (enqueues refused, the reserve freed) and when there is room again. */
  onDiskFull?: (full: boolean, detail: string) => void;
  /**
   * Checks across a queue's settings when an operator changes them at run time
   * (app.ts passes the config file's checks); without it only each value's own
   * validity, which the caller checked, holds.
   */
  checkQueueSettings?: QueueSettingsCheck;
}

/** The engine's capability modules, each over the same context and writer. */
export interface EngineParts {
  readonly ctx: EngineContext;
  readonly lifecycle: EngineLifecycle;
  readonly write: Write;
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
  readonly adminSessions: AdminSessions;
}

/** Builds every part, loads the queues, reconciles the config's schedules and starts maintenance. */
export function openEngineParts(db: Db, options: EngineOptions, deps: EngineDeps): EngineParts {
  let maintenance: Maintenance | undefined;
  const diskFull = new DiskFull(deps.storageSpace, deps.clock, (full, detail) =>
    deps.onDiskFull?.(full, detail),
  );
  const ctx = createEngineContext(db, options, {
    ...deps,
    commitFailed: (cause) => {
      diskFull.commitFailed(cause);
      return new SeppError('unavailable', `storage unavailable, nothing was written: ${describe(cause)}`, {
        cause,
      });
    },
    closed: shuttingDown,
    onHookError: (error) => deps.onHookError?.(toSeppError(error)),
    wakeAt: (atMs) => maintenance?.wakeAt(atMs),
    eventStreamId: randomHex(deps.randomBytes ?? systemRandomBytes, 8),
  });
  const lifecycle = new EngineLifecycle(ctx, () => maintenance?.stop());
  const write: Write = (op) => lifecycle.write(op);
  const expiry = new Expiry(ctx);
  const reserver = new Reserver(ctx, expiry);
  const settler = new Settler(ctx);
  const acks = new AckBatches(ctx, settler);
  const progress = new ProgressReports(ctx);
  const queries = new JobQueries(ctx);
  const browser = new JobBrowser(ctx, queries.sql);
  const finder = new JobSearch(ctx, browser, queries);
  const audit = new AuditLog(ctx, queries.sql);
  const workerControl = new WorkerControl(ctx, browser, settler, audit, write);
  const actions = new OperatorActions(ctx, queries.sql, audit, write);
  const ids = new JobIdGenerator(deps.randomBytes ?? systemRandomBytes);
  const enqueuer = new Enqueuer(ctx, ids, audit, write, diskFull);
  const schedules = new Schedules(
    ctx,
    audit,
    (tx, requests) => enqueuer.enqueueWithin(tx, requests),
    write,
    deps.onScheduleEvent,
  );
  maintenance = new Maintenance(ctx, settler, expiry, deps.onMaintenanceError, schedules);
  const queueAdmin = new QueueAdmin(ctx, queries.sql, audit, write);
  const deadLetters = new DeadLetters(ctx, queries.sql, actions, audit, write);
  const canceller = new Canceller(ctx, actions, audit, write);
  const updater = new JobUpdater(ctx, actions, audit, write);
  const onlineBackup = new OnlineBackup(db);
  const runtimeSql = prepareRuntimeStatements(db);
  const runtimeSettings = new RuntimeSettings(ctx, runtimeSql, audit, write, deps.checkQueueSettings);
  const adminSessions = new AdminSessions(ctx, runtimeSql, audit, write);
  queueAdmin.load();
  // The config's schedules are checked against the config's queue settings, as `sepp config
  // check` checks them, so a run-time override cannot keep the server from starting (it refuses
  // the schedule's jobs instead, which the schedule's outcome shows): reconcile, then the overrides.
  const reconciled = schedules.reconcile(options.schedules ?? []);
  deps.onSchedulesReconciled?.(reconciled);
  runtimeSettings.load();
  maintenance.start();
  const leases = new Leases(ctx, lifecycle, reserver, settler, acks, progress, write);
  return {
    ctx,
    lifecycle,
    write,
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
    adminSessions,
  };
}

function randomHex(randomBytes: RandomBytes, bytes: number): string {
  const buffer = new Uint8Array(bytes);
  randomBytes(buffer);
  return Buffer.from(buffer).toString('hex');
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
