/**
 * Builds the engine's capability modules over one context and wires them to
 * each other, then opens them; engine.ts is the facade that delegates to them.
 * Opening order, each through the one write path: the queues, the config's
 * schedules, the run-time overrides, then maintenance.
 */

import { dependedOn, inBatch } from '../store/dependencies.ts';
import type { Store } from '../store/store.ts';
import { AuditLog } from './audit/index.ts';
import { Batches, LeaseTokens } from './batches/index.ts';
import type { Clock } from './clock.ts';
import { createEngineContext, type EngineContext } from './context.ts';
import {
  type BetweenSlices,
  BulkOperations,
  Canceller,
  checkChanges,
  DeadLetters,
  JobUpdater,
  OperatorActions,
  SelectedJobs,
  WorkflowActs,
} from './control/index.ts';
import {
  DependencyFailures,
  DependencyQueues,
  forgetDeletedJob,
  passDeletionOn,
  passOnFailures,
  releaseDependents,
} from './dependencies/index.ts';
import { SeppError, toSeppError } from './errors.ts';
import { EventLog, RemoteEnds } from './events/index.ts';
import { FinishedOutcomes } from './finished-outcomes.ts';
import { FlowControl } from './flow-control/index.ts';
import { JobHistory } from './history/index.ts';
import {
  DiskFull,
  Enqueuer,
  EnqueueSteps,
  FlowEnqueuer,
  JobIdGenerator,
  JobQueries,
  type RandomBytes,
  systemRandomBytes,
} from './jobs/index.ts';
import {
  AckBatches,
  Expiry,
  ProgressReports,
  RemoteWakeups,
  Reserver,
  Settler,
  WaiterRegistry,
} from './leases/index.ts';
import { EngineLifecycle, shuttingDown } from './lifecycle.ts';
import { LiveLimits } from './live-limits.ts';
import { Maintenance, timedTogether } from './maintenance.ts';
import { JobBrowser, JobSearch, OnlineBackup, WorkerActivity, WorkerControl } from './operators/index.ts';
import { QueueRegistry } from './queue-registry.ts';
import {
  QueueAdmin,
  QueueLookup,
  QueueRefresh,
  type QueueSettingsCheck,
  RuntimeSettings,
  settingKeyOf,
} from './queues/index.ts';
import { ReadShares } from './read-shares.ts';
import { type ReconcileReport, type ScheduleEvent, Schedules } from './schedules/index.ts';
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
  /** Called after each maintenance pass that committed (the app logs the end of an outage). */
  onMaintenancePassed?: () => void;
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
  /** What a bulk operation awaits between two slices besides its turns of the event loop (see BetweenSlices). */
  betweenBulkSlices?: BetweenSlices;
}

/**
 * The engine's capability objects, each over the same context: what the facade
 * (engine.ts) holds and calls directly, one object per capability.
 */
export interface EngineParts {
  readonly ctx: EngineContext;
  /** The limits in force; `ctx.limits` is its view (a reload replaces them). */
  readonly limits: LiveLimits;
  /** The queues whose leases pass results of dependencies on. */
  readonly dependencyQueues: DependencyQueues;
  readonly lifecycle: EngineLifecycle;
  /** Each caller's share of the store's read queue (read-shares.ts). */
  readonly readShares: ReadShares;
  readonly events: EventLog;
  readonly queues: QueueRegistry;
  readonly waiters: WaiterRegistry;
  /** Wake-ups from the other servers sharing the store; undefined when it is this server's alone. */
  readonly remoteWakeups: RemoteWakeups | undefined;
  /** Ends other servers committed, for the waits here; undefined when the store is this server's alone. */
  readonly remoteEnds: RemoteEnds | undefined;
  readonly flow: FlowControl;
  readonly diskFull: DiskFull;
  readonly enqueuer: Enqueuer;
  readonly flowEnqueuer: FlowEnqueuer;
  readonly reserver: Reserver;
  readonly settler: Settler;
  readonly acks: AckBatches;
  readonly progress: ProgressReports;
  readonly maintenance: Maintenance;
  readonly queries: JobQueries;
  readonly browser: JobBrowser;
  readonly finder: JobSearch;
  readonly workerControl: WorkerControl;
  readonly audit: AuditLog;
  readonly actions: OperatorActions;
  readonly queueAdmin: QueueAdmin;
  readonly deadLetters: DeadLetters;
  /** Requeue, cancel or delete of jobs chosen by id, one write and one audit entry. */
  readonly selectedJobs: SelectedJobs;
  readonly onlineBackup: OnlineBackup;
  readonly schedules: Schedules;
  readonly canceller: Canceller;
  readonly updater: JobUpdater;
  readonly bulk: BulkOperations;
  readonly runtimeSettings: RuntimeSettings;
  readonly batches: Batches;
  /** The lease tokens of batch members: made by the reserve, checked by an add from a member. */
  readonly leaseTokens: LeaseTokens;
  readonly workflows: WorkflowActs;
  /** Throughput, failures and durations per queue and type, kept in the store (history/). */
  readonly history: JobHistory;
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
    await ctx.read((view) => parts.flow.load(view));
    await ctx.read((view) => parts.dependencyQueues.load(view));
    // The lease tokens' secret is read (or written, on a new store) in the same commit.
    await ctx.write(function* (tx) {
      yield* parts.queueAdmin.load(tx);
      yield* parts.leaseTokens.load(tx);
    });
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
  parts.remoteWakeups?.start();
  parts.history.start();
  return parts;
}

function buildParts(store: Store, options: EngineOptions, deps: EngineDeps): EngineParts {
  const { clock } = deps;
  let maintenance: Maintenance | undefined;
  let remoteWakeups: RemoteWakeups | undefined;
  let remoteEnds: RemoteEnds | undefined;
  // Built after the context, which calls them when a job in a workflow ends (jobEnded).
  let batches: Batches | undefined;
  let context: EngineContext | undefined;
  let history: JobHistory | undefined;
  // Every part reads the limits through this view, so a reload reaches them all (live-limits.ts).
  const limits = new LiveLimits(options.limits);
  const workerActivity = new WorkerActivity(clock);
  const queues = new QueueRegistry(options);
  const waiters = new WaiterRegistry();
  const flow = new FlowControl(store, clock, waiters, (queue) => queues.settingsFor(queue));
  const events = new EventLog(limits.view, clock, randomHex(deps.randomBytes ?? systemRandomBytes, 8));
  const outcomes = new FinishedOutcomes(() => limits.view.finishedOutcomeMs);
  const diskFull = new DiskFull(store.diskReserve, clock, (full, detail) => deps.onDiskFull?.(full, detail));
  const lifecycle = new EngineLifecycle(
    store,
    () => {
      maintenance?.stop();
      remoteWakeups?.stop();
      remoteEnds?.stop();
      // Its minute in progress is written before the store closes (the store writes what is queued).
      history?.stop(store);
      flow.stop();
      diskFull.stop();
      waiters.settleAll('closed');
      events.endAll(shuttingDown());
    },
    () => waiters.settleAll('closed'),
  );
  attachToStore(store, flow, queues, diskFull, deps);
  // The failures a unit leaves to pass on (dependencies/failures.ts): maintenance takes them on.
  const failures = new DependencyFailures(
    { clock, wakeAt: (tx, atMs) => tx.afterCommit(() => maintenance?.wakeAt(atMs)) },
    store.signals !== undefined,
  );
  const lookup = new QueueLookup(
    { queues, read: (unit) => lifecycle.read(unit), limits: limits.view },
    store.signals !== undefined,
    (queue) => flow.groupsFound(queue),
    settingKeyOf,
  );
  const ctx = createEngineContext({
    store,
    write: (unit) => lifecycle.write(unit),
    read: (unit) => lifecycle.read(unit),
    clock,
    limits: limits.view,
    queues,
    queueLookup: {
      queueExists: (view, queue) => lookup.exists(view, queue),
      queueExistsNow: (queue) => lookup.existsNow(queue),
    },
    events,
    outcomes,
    ...(deps.random === undefined ? {} : { random: deps.random }),
    ...(deps.onEvent === undefined ? {} : { onEvent: deps.onEvent }),
    history: (queue, type, outcome, waitMs, runMs, workerId) => {
      history?.record(queue, type, outcome, waitMs, runMs);
      if (workerId !== null && outcome !== 'dead') workerActivity.record(workerId, outcome);
    },
    wakeAt: (atMs) => maintenance?.wakeAt(atMs),
    jobsReady:
      store.signals === undefined
        ? (tx, queue, jobs) => waiters.handOff(tx, queue, jobs)
        : (tx, queue, jobs) => {
            waiters.handOff(tx, queue, jobs);
            // The other servers sharing the store wake their waiters too, once this is durable.
            const { signals } = store;
            if (jobs > 0) tx.afterCommit(() => signals?.readyJobs(queue, jobs, flow.hasGroups(queue)));
          },
    leaseEnded: (queue, jobs) => flow.leaseEnded(queue, jobs),
    jobsRemoved: () => diskFull.noteJobsRemoved(),
    *jobEnded(tx, job, end) {
      if (dependedOn(job.flags)) {
        const outcome = end === 'completed' ? 'completed' : 'failed';
        yield* releaseDependents(context!, tx, job.id, outcome, failures);
      }
      if (inBatch(job.flags)) yield* batches!.memberEnded(tx, job.id, end);
    },
    *jobDeleted(tx, job) {
      if (job.rowsForgotten !== true) yield* forgetDeletedJob(tx, job);
      if (dependedOn(job.flags)) yield* passDeletionOn(context!, tx, job, failures);
    },
  });
  context = ctx;
  history = new JobHistory({
    clock,
    write: ctx.write,
    read: ctx.read,
    writer: randomHex(deps.randomBytes ?? systemRandomBytes, 8),
    ...(deps.onMaintenanceError === undefined
      ? {}
      : { onError: (e: unknown) => deps.onMaintenanceError?.(toSeppError(e)) }),
  });
  const expiry = new Expiry(ctx);
  const settler = new Settler(ctx, flow);
  const audit = new AuditLog(clock, limits.view);
  const queries = new JobQueries(ctx);
  const browser = new JobBrowser(ctx);
  const actions = new OperatorActions(ctx, audit);
  // With signals the store is shared by other servers, which may add dependencies to any queue.
  const dependencyQueues = new DependencyQueues(store.signals !== undefined);
  const ids = new JobIdGenerator(deps.randomBytes ?? systemRandomBytes);
  const enqueueSteps = new EnqueueSteps(ctx, flow, ids, diskFull, dependencyQueues);
  const enqueuer = new Enqueuer(enqueueSteps, audit);
  const flowEnqueuer = new FlowEnqueuer(enqueueSteps);
  const leaseTokens = new LeaseTokens();
  batches = new Batches({
    ctx,
    ids,
    leaseTokens,
    enqueueWithin: (tx, requests, audit) => enqueuer.enqueueWithin(tx, requests, audit),
    checkRoom: () => enqueueSteps.checkRoom(),
  });
  const schedules = new Schedules(
    ctx,
    audit,
    (tx, requests) => enqueuer.enqueueWithin(tx, requests),
    deps.onScheduleEvent,
  );
  const maintenanceObserver = {
    ...(deps.onMaintenanceError === undefined ? {} : { failed: deps.onMaintenanceError }),
    ...(deps.onMaintenancePassed === undefined ? {} : { passed: deps.onMaintenancePassed }),
  };
  const timed = timedTogether(schedules, {
    dueMs: () => failures.dueMs(),
    runDue: (tx, nowMs) => failures.runDue(tx, nowMs, (t, ended) => passOnFailures(ctx, t, ended, failures)),
  });
  maintenance = new Maintenance(ctx, settler, expiry, flow, maintenanceObserver, timed, batches);
  const { signals } = store;
  const canceller = new Canceller(
    ctx,
    audit,
    signals === undefined ? undefined : (notices) => signals.cancelRequested(notices),
  );
  if (signals !== undefined) {
    const pass = maintenance;
    const refresh = new QueueRefresh(ctx, (view) => flow.load(view), settingKeyOf);
    remoteWakeups = new RemoteWakeups(
      signals,
      waiters,
      ctx,
      () => pass.wakeAt(clock.nowMs()),
      () => refresh.refresh(),
      (queue) => queues.exists(queue),
      (queue) => flow.groupsFound(queue),
      {
        cancelled: (notices) => canceller.deliver(notices),
        timedOut: (notices) => settler.timeouts.deliver(notices),
      },
    );
    settler.timeouts.relayTo((notices) => signals.attemptsTimedOut(notices));
    remoteEnds = new RemoteEnds(events, ctx);
  }
  const deadLetters = new DeadLetters(ctx, audit);
  const bulk = new BulkOperations(
    ctx,
    audit,
    (tx, notices) => canceller.notify(tx, notices),
    (changes) => checkChanges(changes, true, limits.view),
    deps.betweenBulkSlices,
  );
  return {
    remoteWakeups,
    remoteEnds,
    ctx,
    limits,
    lifecycle,
    readShares: new ReadShares(store.readQueue),
    events,
    queues,
    waiters,
    flow,
    diskFull,
    enqueuer,
    flowEnqueuer,
    reserver: new Reserver(ctx, lifecycle, flow, waiters, expiry, dependencyQueues, (jobId, attempt) =>
      leaseTokens.of(jobId, attempt),
    ),
    dependencyQueues,
    settler,
    acks: new AckBatches(ctx, settler, dependencyQueues),
    progress: new ProgressReports(ctx),
    maintenance,
    queries,
    browser,
    finder: new JobSearch(ctx, browser, queries),
    workerControl: new WorkerControl(ctx, settler, audit, workerActivity),
    audit,
    actions,
    queueAdmin: new QueueAdmin(ctx, flow, waiters, audit, (view) => lookup.findAll(view)),
    deadLetters,
    selectedJobs: new SelectedJobs(ctx, audit, actions, canceller, deadLetters),
    onlineBackup: new OnlineBackup(store),
    schedules,
    canceller,
    updater: new JobUpdater(ctx, flow, audit),
    bulk,
    runtimeSettings: new RuntimeSettings(ctx, flow, audit, deps.checkQueueSettings),
    batches,
    leaseTokens,
    workflows: new WorkflowActs(ctx, canceller, audit),
    history,
  };
}

/** The engine's part in every write of the store: its errors, the disk reserve, the batch observers. */
function attachToStore(
  store: Store,
  flow: FlowControl,
  queues: QueueRegistry,
  diskFull: DiskFull,
  deps: EngineDeps,
): void {
  const { onBatch, onHookError } = deps;
  store.attach({
    commitFailed: (failure) => {
      diskFull.commitFailed(failure);
      return new SeppError('unavailable', `storage unavailable, nothing was written: ${failure.message}`, {
        cause: failure,
        lasting: failure.lasting,
      });
    },
    unitFailed: toSeppError,
    closed: shuttingDown,
    // A read the store refused at once (every read connection busy, its queue full): the
    // caller is told to come back, as for any other limit reached (429 / RESOURCE_EXHAUSTED).
    readsRefused: (refusal) => new SeppError('resource_exhausted', refusal.message, { cause: refusal }),
    // Reserves held back by a limit are woken by the leases this commit ended; after a full
    // disk, the jobs it deleted may have made room; the queues the batch created are counted
    // as existing from here on (limits.max_queues).
    afterCommit:
      onBatch === undefined
        ? () => {
            flow.flushLeaseEnds();
            diskFull.afterCommit();
            queues.batchEnded();
          }
        : (stats) => {
            flow.flushLeaseEnds();
            diskFull.afterCommit();
            queues.batchEnded();
            onBatch(stats);
          },
    ...(onHookError === undefined ? {} : { hookFailed: (error: unknown) => onHookError(toSeppError(error)) }),
  });
}

function randomHex(randomBytes: RandomBytes, bytes: number): string {
  const buffer = new Uint8Array(bytes);
  randomBytes(buffer);
  return Buffer.from(buffer).toString('hex');
}
