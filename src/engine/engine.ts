/**
 * The queue engine: the semantics of SPEC §4 over the store.
 *
 * Every write is an operation handed to the group committer; its caller gets
 * the result only after the batch's commit is durable. Reads go straight to
 * the connection: better-sqlite3 is synchronous, so a read never sees a
 * transaction half-way. In-memory state (queue registry, waiters, the
 * maintenance timer) changes only in after-commit hooks, so a failed commit
 * leaves memory and disk agreeing.
 */

import { closeDatabase } from '../store/close.ts';
import { counterMismatches } from '../store/counter-check.ts';
import type { BatchStats, Transaction } from '../store/group-commit.ts';
import type { Db } from '../store/open.ts';
import { prepareRuntimeStatements } from '../store/runtime-statements.ts';
import { AckBatches } from './ack-batch.ts';
import { AdminSessions } from './admin-sessions.ts';
import type {
  AuditEntry,
  AuditInput,
  AuditQuery,
  JobBrowsePage,
  JobBrowseQuery,
  JobListQuery,
  JobSearchResult,
  JobSummary,
  WorkerInfo,
} from './admin-types.ts';
import { AuditLog } from './audit.ts';
import { OnlineBackup } from './backup.ts';
import { type CancelListener, Canceller } from './cancel.ts';
import type { Clock } from './clock.ts';
import { createEngineContext, type EngineContext, type Write } from './context.ts';
import type { BulkCancelResult, CancelResult, JobChanges, JobFilter } from './control-types.ts';
import { DeadLetters } from './dead-letters.ts';
import { DiskFull, type StorageSpace } from './disk-full.ts';
import { Enqueuer } from './enqueue.ts';
import { SeppError, toSeppError } from './errors.ts';
import type { EventSubscription } from './events/event-log.ts';
import type { EventFilter, EventStart } from './events/lifecycle-event.ts';
import type { EventSink } from './events/subscription.ts';
import { Expiry } from './expiry.ts';
import { JobBrowser } from './job-browse.ts';
import { JobIdGenerator, type RandomBytes, systemRandomBytes } from './job-id.ts';
import { type DeadLetterSummaryQuery, JobQueries } from './job-queries.ts';
import { jobInfoFromRow } from './job-rows.ts';
import { JobSearch } from './job-search.ts';
import { JobUpdater } from './job-update.ts';
import { Maintenance, type MaintenanceReport } from './maintenance.ts';
import { OperatorActions } from './operator-actions.ts';
import { checkProgressReport, ProgressReports } from './progress.ts';
import { checkQueueExists, checkQueueName, QueueAdmin } from './queue-admin.ts';
import { Reserver } from './reserve.ts';
import { checkAckResult } from './results.ts';
import { type QueueSettingsChange, type QueueSettingsCheck, RuntimeSettings } from './runtime-settings.ts';
import { type PutMode, Schedules } from './schedules/schedules.ts';
import type { ReconcileReport, ScheduleEvent, ScheduleInfo, ScheduleSpec } from './schedules/types.ts';
import type { EngineLimits, EngineOptions, QueueFileSettings, QueueSettingsFlat } from './settings.ts';
import { Settler } from './settle.ts';
import type {
  Ack,
  AtomicEnqueueResult,
  DeadLetterQuery,
  DeadLetterSelection,
  EnqueueAccepted,
  EnqueueRequest,
  EnqueueResult,
  ExtendRequest,
  JobEvent,
  JobInfo,
  JobProgress,
  JobState,
  LeasedJob,
  NackRequest,
  NackResult,
  Page,
  ProgressReport,
  QueueInfo,
  ReserveRequest,
  SettleOutcome,
} from './types.ts';
import { WorkerControl } from './worker-control.ts';
import type { WorkerRegistry } from './worker-registry.ts';

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
  /** Room the store keeps for a full disk (store/disk-reserve.ts); without it, none is freed. */
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

export class Engine {
  private readonly ctx: EngineContext;
  private readonly reserver: Reserver;
  private readonly settler: Settler;
  private readonly acks: AckBatches;
  private readonly progress: ProgressReports;
  private readonly maintenance: Maintenance;
  private readonly queries: JobQueries;
  private readonly browser: JobBrowser;
  private readonly finder: JobSearch;
  private readonly workerControl: WorkerControl;
  private readonly audit: AuditLog;
  private readonly actions: OperatorActions;
  private readonly enqueuer: Enqueuer;
  private readonly queueAdmin: QueueAdmin;
  private readonly deadLetters: DeadLetters;
  private readonly onlineBackup: OnlineBackup;
  private readonly schedules: Schedules;
  private readonly canceller: Canceller;
  private readonly updater: JobUpdater;
  private readonly diskFull: DiskFull;
  private readonly runtimeSettings: RuntimeSettings;
  /** The admin UI's sessions on disk (src/admin/sessions.ts decides what they are). */
  readonly adminSessions: AdminSessions;
  private closing = false;
  /** Set by drainWaiters(): reserves stop waiting, writes still work. */
  private draining = false;

  constructor(db: Db, options: EngineOptions, deps: EngineDeps) {
    let maintenance: Maintenance | undefined;
    const diskFull = new DiskFull(deps.storageSpace, deps.clock, (full, detail) =>
      deps.onDiskFull?.(full, detail),
    );
    this.diskFull = diskFull;
    this.ctx = createEngineContext(db, options, {
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
    const write: Write = (op) => this.write(op);
    const expiry = new Expiry(this.ctx);
    this.reserver = new Reserver(this.ctx, expiry);
    this.settler = new Settler(this.ctx);
    this.acks = new AckBatches(this.ctx, this.settler);
    this.progress = new ProgressReports(this.ctx);
    this.queries = new JobQueries(this.ctx);
    this.browser = new JobBrowser(this.ctx, this.queries.sql);
    this.finder = new JobSearch(this.ctx, this.browser, this.queries);
    this.audit = new AuditLog(this.ctx, this.queries.sql);
    this.workerControl = new WorkerControl(this.ctx, this.browser, this.settler, this.audit, write);
    this.actions = new OperatorActions(this.ctx, this.queries.sql, this.audit, write);
    this.enqueuer = new Enqueuer(
      this.ctx,
      new JobIdGenerator(deps.randomBytes ?? systemRandomBytes),
      this.audit,
      write,
    );
    this.schedules = new Schedules(
      this.ctx,
      this.audit,
      (tx, requests) => this.enqueuer.enqueueWithin(tx, requests),
      write,
      deps.onScheduleEvent,
    );
    maintenance = new Maintenance(this.ctx, this.settler, expiry, deps.onMaintenanceError, this.schedules);
    this.maintenance = maintenance;
    this.queueAdmin = new QueueAdmin(this.ctx, this.queries.sql, this.audit, write);
    this.deadLetters = new DeadLetters(this.ctx, this.queries.sql, this.actions, this.audit, write);
    this.canceller = new Canceller(this.ctx, this.actions, this.audit, write);
    this.updater = new JobUpdater(this.ctx, this.actions, this.audit, write);
    this.onlineBackup = new OnlineBackup(db);
    const runtimeSql = prepareRuntimeStatements(db);
    this.runtimeSettings = new RuntimeSettings(
      this.ctx,
      runtimeSql,
      this.audit,
      write,
      deps.checkQueueSettings,
    );
    this.adminSessions = new AdminSessions(this.ctx, runtimeSql, this.audit, write);
    this.queueAdmin.load();
    // The config's schedules are checked against the config's queue settings, as `sepp config
    // check` checks them, so a run-time override cannot keep the server from starting (it refuses
    // the schedule's jobs instead, which the schedule's outcome shows): reconcile, then the overrides.
    const reconciled = this.schedules.reconcile(options.schedules ?? []);
    deps.onSchedulesReconciled?.(reconciled);
    this.runtimeSettings.load();
    this.maintenance.start();
  }

  get limits(): EngineLimits {
    return this.ctx.limits;
  }

  /** The options in force: the limits given at start and the queue settings of the config file now (reloads replace them). */
  get options(): EngineOptions {
    return { ...this.ctx.queues.fileSettings, limits: this.ctx.limits };
  }

  private write<T>(op: (tx: Transaction) => T): Promise<T> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.ctx.writer.submit(op).catch((error: unknown) => {
      throw toSeppError(error);
    });
  }

  // ---------------------------------------------------------------- enqueue

  /**
   * Enqueues one job. A rejection is thrown as a SeppError carrying it.
   * `audit` (operators' enqueues) is written in the same transaction when the job is accepted.
   */
  async enqueue(request: EnqueueRequest, audit?: AuditInput): Promise<EnqueueAccepted> {
    const [result] = await this.enqueueBatch([request], audit);
    if (result === undefined) throw new SeppError('internal', 'enqueue returned no result');
    if (!result.ok) throw SeppError.rejected(result);
    return result;
  }

  /** Enqueues each job on its own merits: one result per job, in order. */
  enqueueBatch(requests: readonly EnqueueRequest[], audit?: AuditInput): Promise<EnqueueResult[]> {
    const refusal = this.diskFull.enqueueRefusal();
    if (refusal !== null) return Promise.reject(refusal);
    return this.enqueuer.enqueueBatch(requests, audit);
  }

  /** Enqueues every job or none: on any rejection, nothing is stored and every failing index is reported. */
  enqueueAtomic(requests: readonly EnqueueRequest[]): Promise<AtomicEnqueueResult> {
    const refusal = this.diskFull.enqueueRefusal();
    if (refusal !== null) return Promise.reject(refusal);
    return this.enqueuer.enqueueAtomic(requests);
  }

  /** True while the disk is full: enqueues are refused, leases and acks go on (disk-full.ts). */
  get diskIsFull(): boolean {
    return this.diskFull.isFull;
  }

  // ---------------------------------------------------------------- leases

  /** Leases up to `maxJobs` jobs, waiting up to `waitMs` for one; `signal` ends the wait early. */
  reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.reserver.reserve(request, signal, () => this.closing || this.draining);
  }

  /**
   * Completes a leased job, keeping `result` with it when its queue retains completed jobs.
   * A job with a cancel request ends cancelled instead, and its ack fails with
   * `job_cancelled` once that is durable.
   */
  async ack(ack: Ack): Promise<void> {
    checkAckResult(ack, this.ctx.limits);
    return this.write((tx) => this.settler.ack(tx, ack)).then(throwIfFailed);
  }

  /** Acks each job on its own: one outcome per job, in order. A result too large fails the whole call. */
  async ackBatch(settles: readonly Ack[]): Promise<SettleOutcome[]> {
    for (const ack of settles) checkAckResult(ack, this.ctx.limits);
    if (settles.length > this.ctx.limits.maxReserveJobs) {
      throw new SeppError(
        'resource_exhausted',
        `acks: ${settles.length} in one batch, the limit is ${this.ctx.limits.maxReserveJobs} (limits.max_reserve_jobs)`,
      );
    }
    return this.write((tx) => this.acks.ackEach(tx, settles));
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.write((tx) => this.settler.nack(tx, request));
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.write((tx) => this.settler.extend(tx, request));
  }

  /** Records how far along a leased job is (fenced like extend); resolves with the job's progress after it. */
  async reportProgress(report: ProgressReport): Promise<JobProgress> {
    checkProgressReport(report, this.ctx.limits);
    return this.write((tx) => this.progress.report(tx, report));
  }

  // ---------------------------------------------------------------- jobs and queues

  getJob(jobId: string): JobInfo {
    this.checkOpen();
    const row = this.ctx.sql.jobById.get(jobId);
    if (row === undefined)
      throw new SeppError(
        'not_found',
        `job ${jobId} does not exist (it may have been acked, cancelled or swept)`,
      );
    return jobInfoFromRow(row);
  }

  // ---------------------------------------------------------------- job control (cancel.ts, job-update.ts)

  /** Cancels a waiting job, or asks the worker of a leased one to stop (it ends cancelled). */
  cancel(jobId: string, audit?: AuditInput): Promise<CancelResult> {
    return this.canceller.cancelJob(jobId, audit);
  }

  /** Cancels every job the filter matches, in chunks. */
  cancelJobs(filter: JobFilter, audit?: AuditInput): Promise<BulkCancelResult> {
    return this.canceller.cancelJobs(filter, audit);
  }

  /** How many jobs cancelJobs(filter) would change now. */
  countCancellable(filter: JobFilter): number {
    this.checkOpen();
    return this.canceller.countCancellable(filter);
  }

  /** Calls `listener` with the leases told to stop, after each commit that asked for it; returns the unsubscribe. */
  onCancelRequested(listener: CancelListener): () => void {
    return this.canceller.onCancelRequested(listener);
  }

  /** Changes a scheduled or ready job's priority or run time; returns it as it is now. */
  updateJob(jobId: string, changes: JobChanges, audit?: AuditInput): Promise<JobInfo> {
    return this.updater.updateJob(jobId, changes, audit);
  }

  /** Runs now, or reprioritises, every waiting job the filter matches; returns how many changed. */
  updateJobs(filter: JobFilter, changes: JobChanges, audit?: AuditInput): Promise<number> {
    return this.updater.updateJobs(filter, changes, audit);
  }

  listQueues(): QueueInfo[] {
    this.checkOpen();
    return this.queueAdmin.listQueues();
  }

  /**
   * Pauses a queue: it hands out no jobs until resumed. NOT_FOUND for a queue
   * nobody has used, unless `allowMissing` creates it (paused, so producers can
   * fill it before any worker starts).
   */
  pauseQueue(queue: string, audit?: AuditInput, options: { allowMissing?: boolean } = {}): Promise<void> {
    return this.queueAdmin.setPaused(queue, true, audit, options.allowMissing === true);
  }

  /** Resumes a paused queue; NOT_FOUND for a queue nobody has used, unless `allowMissing`. */
  resumeQueue(queue: string, audit?: AuditInput, options: { allowMissing?: boolean } = {}): Promise<void> {
    return this.queueAdmin.setPaused(queue, false, audit, options.allowMissing === true);
  }

  /** Deletes a queue that holds no job; FAILED_PRECONDITION while it holds any, or when the config declares it. */
  deleteQueue(queue: string, audit?: AuditInput): Promise<void> {
    return this.queueAdmin.deleteQueue(queue, audit);
  }

  /**
   * Sets and resets run-time overrides of a queue's settings (they win over the
   * config file and survive restarts); audited with every old and new value.
   * Returns the queue as it is afterwards.
   */
  async changeQueueSettings(
    queue: string,
    change: QueueSettingsChange,
    audit: AuditInput,
  ): Promise<QueueInfo> {
    await this.runtimeSettings.change(queue, change, audit);
    return this.queueAdmin.queueInfo(queue);
  }

  /** Every queue's run-time overrides (a reload checks the new file against them). */
  queueSettingOverrides(): ReadonlyMap<string, Readonly<Partial<QueueSettingsFlat>>> {
    return this.ctx.queues.allOverrides();
  }

  /** Replaces the config file's queue settings (a reload); run-time overrides stay on top. */
  reconfigureQueues(file: QueueFileSettings): Promise<void> {
    return this.runtimeSettings.reconfigure(file);
  }

  // ---------------------------------------------------------------- dead letters

  listDeadLetters(query: DeadLetterQuery): Page<JobInfo> {
    this.checkOpen();
    return this.deadLetters.list(query);
  }

  /** Puts dead letters back to ready with a fresh attempt budget; returns how many. */
  requeueDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.deadLetters.change(selection, 'requeue', audit);
  }

  /** Deletes dead letters; returns how many. */
  deleteDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.deadLetters.change(selection, 'delete', audit);
  }

  // ---------------------------------------------------------------- operators (admin UI and API)

  /** One page of a queue's jobs in one state, in enqueue order; `total` is the state's count when no type filter is given. */
  listJobs(query: JobListQuery): Page<JobSummary> & { total: number | null } {
    return this.queries.listJobs(query);
  }

  /** A page of jobs across queues and states, with filters; paged both ways (job-browse.ts). */
  browseJobs(query: JobBrowseQuery): JobBrowsePage {
    this.checkOpen();
    return this.browser.browse(query);
  }

  /** Jobs by full id, a piece of an id, or an idempotency key in any queue (job-search.ts). */
  searchJobs(text: string): JobSearchResult {
    this.checkOpen();
    return this.finder.search(text);
  }

  /** One page of a queue's dead letters (optionally of one reason), without payloads. */
  listDeadLetterSummaries(query: DeadLetterSummaryQuery): Page<JobSummary> {
    return this.queries.listDeadLetters(query);
  }

  /**
   * The job an idempotency key names: the newest stored job with that key, else
   * the job the dedup window remembers (which may have been acked since).
   */
  findJobByIdempotencyKey(queue: string, key: string): { jobId: string; stored: boolean } | null {
    const stored = this.queries.jobIdByIdempotencyKey(queue, key);
    if (stored !== null) return { jobId: stored, stored: true };
    const remembered = this.queries.rememberedJobId(queue, key);
    return remembered === null ? null : { jobId: remembered, stored: false };
  }

  /** A dead, completed or cancelled job back to ready now, with a fresh attempt budget. */
  requeueJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.actions.requeueJob(jobId, audit);
  }

  /** A ready or scheduled job to the dead letters now (reason `dead_lettered`). */
  deadLetterJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.actions.deadLetterJob(jobId, audit);
  }

  /** Deletes every ready and scheduled job of a queue, in chunks; leased jobs finish normally. */
  purgeQueue(queue: string, audit?: AuditInput): Promise<{ deleted: number }> {
    checkQueueName(this.ctx, queue);
    checkQueueExists(this.ctx, queue);
    return this.actions.purgeQueue(queue, audit);
  }

  /** Records an action that changes nothing in the engine (a login, say); resolves once durable. */
  recordAudit(entry: AuditInput): Promise<number> {
    return this.write(() => this.audit.write(entry));
  }

  /** Audit entries, newest first. */
  listAudit(query: AuditQuery): Page<AuditEntry> {
    return this.audit.list(query);
  }

  // ---------------------------------------------------------------- schedules (schedules/)

  /** Every schedule by name, each with its next `nextRuns` run times (0–10; default 1). */
  listSchedules(nextRuns?: number): ScheduleInfo[] {
    this.checkOpen();
    return this.schedules.list(nextRuns);
  }

  /** One schedule with its template's payload and its next `nextRuns` run times (0–100; default 10). */
  getSchedule(name: string, nextRuns?: number): ScheduleInfo {
    this.checkOpen();
    return this.schedules.get(name, nextRuns);
  }

  /** Creates (`create`), changes (`update`) or either (`upsert`) a schedule defined over the API. */
  putSchedule(
    spec: ScheduleSpec,
    mode: PutMode,
    audit?: AuditInput,
  ): Promise<{ schedule: ScheduleInfo; created: boolean }> {
    return this.schedules.put(spec, mode, audit);
  }

  pauseSchedule(name: string, audit?: AuditInput): Promise<ScheduleInfo> {
    return this.schedules.setPaused(name, true, audit);
  }

  /** Resumes a paused schedule; ticks it missed follow its misfire policy. */
  resumeSchedule(name: string, audit?: AuditInput): Promise<ScheduleInfo> {
    return this.schedules.setPaused(name, false, audit);
  }

  deleteSchedule(name: string, audit?: AuditInput): Promise<void> {
    return this.schedules.delete(name, audit);
  }

  /** Enqueues the schedule's job now, outside its ticks. */
  triggerSchedule(name: string, audit?: AuditInput): Promise<EnqueueAccepted> {
    return this.schedules.trigger(name, audit);
  }

  /** Applies the config's [[schedules]] again (a reload), as at open; API schedules it does not name stay. */
  reconcileSchedules(specs: readonly ScheduleSpec[]): Promise<ReconcileReport> {
    return this.schedules.reconcileNow(specs);
  }

  // ---------------------------------------------------------------- housekeeping

  /** Promotes due scheduled jobs, expires leases and sweeps retention now. */
  runMaintenance(): Promise<MaintenanceReport> {
    return this.write((tx) => this.maintenance.run(tx));
  }

  /**
   * Copies the live database to `destinationPath` with SQLite's online backup
   * API, a few hundred pages per step, so other work goes on meanwhile; writes
   * made during the copy are included. One backup at a time.
   */
  async backup(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void> {
    if (this.closing) throw shuttingDown();
    return this.onlineBackup.copyTo(destinationPath, onProgress);
  }

  // ---------------------------------------------------------------- events

  /**
   * Subscribes to job lifecycle events matching `filter`, from `start`: `sink`
   * gets them in commit order once each commit is durable (see events/event-log.ts
   * for the backlog, its bounds and what a subscriber that falls behind is told).
   */
  subscribeEvents(filter: EventFilter, start: EventStart, sink: EventSink): EventSubscription {
    this.checkOpen();
    return this.ctx.events.subscribe(filter, start, sink);
  }

  /** Names this server run's event sequence: a resume must name it (a restart makes a new one). */
  get eventStreamId(): string {
    return this.ctx.events.streamId;
  }

  /** The event backlog now: subscribers, events kept and their estimated bytes (diagnostics, tests). */
  get eventBacklog(): { subscribers: number; events: number; bytes: number; recording: boolean } {
    const { events } = this.ctx;
    return { subscribers: events.subscribers, ...events.backlogSize, recording: events.recording };
  }

  // ---------------------------------------------------------------- workers

  /** Where the rpc layer reports connected workers (worker-registry.ts). */
  get workers(): WorkerRegistry {
    return this.workerControl.registry;
  }

  /** The workers connected now, with the leases each holds. */
  listWorkers(): WorkerInfo[] {
    this.checkOpen();
    return this.workerControl.list();
  }

  /** Ends a lease now as its expiry would (for a stuck worker); audited. */
  releaseLease(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState; state: JobState }> {
    return this.workerControl.releaseLease(jobId, audit);
  }

  /** Long-polls waiting now. */
  get waitingReserves(): number {
    return this.ctx.waiters.size;
  }

  /** Per-queue counters that disagree with the rows (empty when healthy): for tests and diagnostics. */
  counterMismatches(): string[] {
    this.checkOpen();
    return counterMismatches(this.ctx.sql);
  }

  /**
   * Throws (unavailable) unless the database answers a read now: for readiness
   * probes, so one index lookup (of an id no job has), never a scan.
   */
  checkReadable(): void {
    this.checkOpen();
    this.ctx.sql.attemptById.get('00000000-0000-0000-0000-000000000000');
  }

  /** Reads after close() get the same answer as writes, not the driver's "connection is not open". */
  private checkOpen(): void {
    if (this.closing) throw shuttingDown();
  }

  /**
   * First step of a graceful shutdown: answers every waiting long-poll with no
   * jobs and makes later reserves return at once, while acks and other writes
   * in flight still complete.
   */
  drainWaiters(): void {
    this.draining = true;
    this.ctx.waiters.settleAll('closed');
  }

  /**
   * Shuts down: refuses new work, answers waiting long-polls with no jobs,
   * writes what is queued, checkpoints the WAL and closes the database.
   */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.maintenance.stop();
    this.ctx.flow.stop();
    this.ctx.waiters.settleAll('closed');
    this.ctx.events.endAll(shuttingDown());
    this.ctx.writer.close();
    closeDatabase(this.ctx.db);
  }
}

function throwIfFailed(outcome: SettleOutcome): void {
  if (!outcome.ok) throw new SeppError(outcome.code, outcome.message);
}

function shuttingDown(): SeppError {
  return new SeppError('unavailable', 'sepp is shutting down');
}

function randomHex(randomBytes: RandomBytes, bytes: number): string {
  const buffer = new Uint8Array(bytes);
  randomBytes(buffer);
  return Buffer.from(buffer).toString('hex');
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
