/**
 * The queue engine: the semantics of SPEC §4 over a Store (src/store/store.ts). A facade:
 * engine-parts.ts builds the capability modules and each method delegates to one. Every write is
 * a unit of store operations handed to the store, answered after the commit that holds it is
 * durable; every read is a unit the store runs against a consistent view, answered as a promise
 * (a store may answer over the network). In-memory state changes only in after-commit hooks, so
 * a failed commit leaves memory and storage agreeing.
 */

import type { Store } from '../store/store.ts';
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
import type { CancelListener } from './control/cancel.ts';
import type { BulkCancelResult, CancelResult, JobChanges, JobFilter } from './control-types.ts';
import { type EngineDeps, type EngineParts, openEngineParts } from './engine-parts.ts';
import type { EventSubscription } from './events/event-log.ts';
import type { EventFilter, EventStart } from './events/lifecycle-event.ts';
import type { EventSink } from './events/subscription.ts';
import type { DeadLetterSummaryQuery } from './jobs/job-queries.ts';
import type { MaintenanceReport } from './maintenance.ts';
import type { WorkerRegistry } from './operators/worker-registry.ts';
import type { QueueSettingsChange } from './queues/runtime-settings.ts';
import type { PutMode } from './schedules/schedules.ts';
import type { ReconcileReport, ScheduleInfo, ScheduleSpec } from './schedules/types.ts';
import type { EngineLimits, EngineOptions, QueueFileSettings, QueueSettingsFlat } from './settings.ts';
import type {
  Ack,
  AtomicEnqueueResult,
  DeadLetterQuery,
  DeadLetterSelection,
  EnqueueAccepted,
  EnqueueRequest,
  EnqueueResult,
  ExtendRequest,
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

export type { EngineDeps } from './engine-parts.ts';

export class Engine {
  private constructor(private readonly parts: EngineParts) {}

  /**
   * Opens the engine over `store`, which it owns from now on (close() closes it): loads the
   * queues, reconciles the config's schedules, reads the run-time overrides, starts maintenance.
   */
  static async open(store: Store, options: EngineOptions, deps: EngineDeps): Promise<Engine> {
    return new Engine(await openEngineParts(store, options, deps));
  }

  /** The store the engine works on (the admin UI keeps its sessions there). */
  get store(): Store {
    return this.parts.ctx.store;
  }

  get limits(): EngineLimits {
    return this.parts.ctx.limits;
  }

  /** The options in force: the limits given at start and the queue settings of the config file now (reloads replace them). */
  get options(): EngineOptions {
    return { ...this.parts.ctx.queues.fileSettings, limits: this.parts.ctx.limits };
  }

  // ---------------------------------------------------------------- enqueue (enqueue.ts)

  /** Enqueues one job; a rejection is thrown as a SeppError. `audit` is written with the accepted job. */
  enqueue(request: EnqueueRequest, audit?: AuditInput): Promise<EnqueueAccepted> {
    return this.parts.enqueuer.enqueue(request, audit);
  }

  /** Enqueues each job on its own merits: one result per job, in order. */
  enqueueBatch(requests: readonly EnqueueRequest[], audit?: AuditInput): Promise<EnqueueResult[]> {
    return this.parts.enqueuer.enqueueBatch(requests, audit);
  }

  /** Enqueues every job or none: on any rejection, nothing is stored and every failing index is reported. */
  enqueueAtomic(requests: readonly EnqueueRequest[]): Promise<AtomicEnqueueResult> {
    return this.parts.enqueuer.enqueueAtomic(requests);
  }

  /** True while the disk is full: enqueues are refused, leases and acks go on (disk-full.ts). */
  get diskIsFull(): boolean {
    return this.parts.diskFull.isFull;
  }

  // ---------------------------------------------------------------- leases (leases.ts)

  /** Leases up to `maxJobs` jobs, waiting up to `waitMs` for one; `signal` ends the wait early. */
  reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    return this.parts.leases.reserve(request, signal);
  }

  /** Completes a leased job, keeping `result` if its queue retains completed jobs (job_cancelled if cancelled). */
  ack(ack: Ack): Promise<void> {
    return this.parts.leases.ack(ack);
  }

  /** Acks each job on its own: one outcome per job, in order. A result too large fails the whole call. */
  ackBatch(settles: readonly Ack[]): Promise<SettleOutcome[]> {
    return this.parts.leases.ackBatch(settles);
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.parts.leases.nack(request);
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.parts.leases.extend(request);
  }

  /** Records how far along a leased job is (fenced like extend); resolves with the job's progress after it. */
  reportProgress(report: ProgressReport): Promise<JobProgress> {
    return this.parts.leases.reportProgress(report);
  }

  // ---------------------------------------------------------------- job control (cancel.ts, job-update.ts)

  getJob(jobId: string): Promise<JobInfo> {
    return this.parts.ctx.read((view) => this.parts.queries.getJob(view, jobId));
  }

  /** Cancels a waiting job, or asks the worker of a leased one to stop (it ends cancelled). */
  cancel(jobId: string, audit?: AuditInput): Promise<CancelResult> {
    return this.parts.canceller.cancelJob(jobId, audit);
  }

  /** Cancels every job the filter matches, in chunks. */
  cancelJobs(filter: JobFilter, audit?: AuditInput): Promise<BulkCancelResult> {
    return this.parts.canceller.cancelJobs(filter, audit);
  }

  /** How many jobs cancelJobs(filter) would change now. */
  countCancellable(filter: JobFilter): Promise<number> {
    return this.parts.ctx.read((view) => this.parts.canceller.countCancellable(view, filter));
  }

  /** Calls `listener` with the leases told to stop, after each commit that asked for it; returns the unsubscribe. */
  onCancelRequested(listener: CancelListener): () => void {
    return this.parts.canceller.onCancelRequested(listener);
  }

  /** Changes a scheduled or ready job's priority or run time; returns it as it is now. */
  updateJob(jobId: string, changes: JobChanges, audit?: AuditInput): Promise<JobInfo> {
    return this.parts.updater.updateJob(jobId, changes, audit);
  }

  /** Runs now, or reprioritises, every waiting job the filter matches; returns how many changed. */
  updateJobs(filter: JobFilter, changes: JobChanges, audit?: AuditInput): Promise<number> {
    return this.parts.updater.updateJobs(filter, changes, audit);
  }

  // ---------------------------------------------------------------- queues (queue-admin.ts, runtime-settings.ts)

  listQueues(): Promise<QueueInfo[]> {
    return this.parts.ctx.read((view) => this.parts.queueAdmin.listQueues(view));
  }

  /** Pauses a queue; NOT_FOUND for a queue nobody has used, unless `allowMissing` creates it (paused). */
  pauseQueue(queue: string, audit?: AuditInput, options: { allowMissing?: boolean } = {}): Promise<void> {
    return this.parts.queueAdmin.setPaused(queue, true, audit, options.allowMissing === true);
  }

  /** Resumes a paused queue; NOT_FOUND for a queue nobody has used, unless `allowMissing`. */
  resumeQueue(queue: string, audit?: AuditInput, options: { allowMissing?: boolean } = {}): Promise<void> {
    return this.parts.queueAdmin.setPaused(queue, false, audit, options.allowMissing === true);
  }

  /** Deletes a queue that holds no job; FAILED_PRECONDITION while it holds any, or when the config declares it. */
  deleteQueue(queue: string, audit?: AuditInput): Promise<void> {
    return this.parts.queueAdmin.deleteQueue(queue, audit);
  }

  /** Sets and resets run-time overrides of a queue's settings (audited); returns the queue afterwards. */
  async changeQueueSettings(
    queue: string,
    change: QueueSettingsChange,
    audit: AuditInput,
  ): Promise<QueueInfo> {
    await this.parts.runtimeSettings.change(queue, change, audit);
    return this.parts.ctx.read((view) => this.parts.queueAdmin.queueInfo(view, queue));
  }

  /** Every queue's run-time overrides (a reload checks the new file against them). */
  queueSettingOverrides(): ReadonlyMap<string, Readonly<Partial<QueueSettingsFlat>>> {
    return this.parts.ctx.queues.allOverrides();
  }

  /** Replaces the config file's queue settings (a reload); run-time overrides stay on top. */
  reconfigureQueues(file: QueueFileSettings): Promise<void> {
    return this.parts.runtimeSettings.reconfigure(file);
  }

  // ---------------------------------------------------------------- dead letters (dead-letters.ts)

  listDeadLetters(query: DeadLetterQuery): Promise<Page<JobInfo>> {
    return this.parts.ctx.read((view) => this.parts.deadLetters.list(view, query));
  }

  /** Puts dead letters back to ready with a fresh attempt budget; returns how many. */
  requeueDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.parts.deadLetters.change(selection, 'requeue', audit);
  }

  /** Deletes dead letters; returns how many. */
  deleteDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.parts.deadLetters.change(selection, 'delete', audit);
  }

  // ---------------------------------------------------------------- operators (job-queries.ts, job-browse.ts, operator-actions.ts)

  /** One page of a queue's jobs in one state, in enqueue order; `total` is the state's count when no type filter is given. */
  listJobs(query: JobListQuery): Promise<Page<JobSummary> & { total: number | null }> {
    return this.parts.ctx.read((view) => this.parts.queries.listJobs(view, query));
  }

  /** A page of jobs across queues and states, with filters; paged both ways (job-browse.ts). */
  browseJobs(query: JobBrowseQuery): Promise<JobBrowsePage> {
    return this.parts.ctx.read((view) => this.parts.browser.browse(view, query));
  }

  /** Jobs by full id, a piece of an id, or an idempotency key in any queue (job-search.ts). */
  searchJobs(text: string): Promise<JobSearchResult> {
    return this.parts.ctx.read((view) => this.parts.finder.search(view, text));
  }

  /** One page of a queue's dead letters (optionally of one reason), without payloads. */
  listDeadLetterSummaries(query: DeadLetterSummaryQuery): Promise<Page<JobSummary>> {
    return this.parts.ctx.read((view) => this.parts.queries.listDeadLetters(view, query));
  }

  /** The job an idempotency key names: the newest stored one, else the one the dedup window remembers. */
  findJobByIdempotencyKey(queue: string, key: string): Promise<{ jobId: string; stored: boolean } | null> {
    return this.parts.ctx.read((view) => this.parts.queries.findJobByIdempotencyKey(view, queue, key));
  }

  /** A dead, completed or cancelled job back to ready now, with a fresh attempt budget. */
  requeueJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.parts.actions.requeueJob(jobId, audit);
  }

  /** A ready or scheduled job to the dead letters now (reason `dead_lettered`). */
  deadLetterJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.parts.actions.deadLetterJob(jobId, audit);
  }

  /** Deletes every ready and scheduled job of a queue, in chunks; leased jobs finish normally. */
  purgeQueue(queue: string, audit?: AuditInput): Promise<{ deleted: number }> {
    return this.parts.actions.purgeQueue(queue, audit);
  }

  /** Records an action that changes nothing in the engine (a login, say); resolves once durable. */
  recordAudit(entry: AuditInput): Promise<number> {
    return this.parts.ctx.write((tx) => this.parts.audit.write(tx, entry));
  }

  /** Audit entries, newest first. */
  listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    return this.parts.ctx.read((view) => this.parts.audit.list(view, query));
  }

  // ---------------------------------------------------------------- schedules (schedules/)

  /** Every schedule by name, each with its next `nextRuns` run times (0–10; default 1). */
  listSchedules(nextRuns?: number): Promise<ScheduleInfo[]> {
    return this.parts.ctx.read((view) => this.parts.schedules.list(view, nextRuns));
  }

  /** One schedule with its template's payload and its next `nextRuns` run times (0–100; default 10). */
  getSchedule(name: string, nextRuns?: number): Promise<ScheduleInfo> {
    return this.parts.ctx.read((view) => this.parts.schedules.get(view, name, nextRuns));
  }

  /** Creates (`create`), changes (`update`) or either (`upsert`) a schedule defined over the API. */
  putSchedule(
    spec: ScheduleSpec,
    mode: PutMode,
    audit?: AuditInput,
  ): Promise<{ schedule: ScheduleInfo; created: boolean }> {
    return this.parts.schedules.put(spec, mode, audit);
  }

  pauseSchedule(name: string, audit?: AuditInput): Promise<ScheduleInfo> {
    return this.parts.schedules.setPaused(name, true, audit);
  }

  /** Resumes a paused schedule; ticks it missed follow its misfire policy. */
  resumeSchedule(name: string, audit?: AuditInput): Promise<ScheduleInfo> {
    return this.parts.schedules.setPaused(name, false, audit);
  }

  deleteSchedule(name: string, audit?: AuditInput): Promise<void> {
    return this.parts.schedules.delete(name, audit);
  }

  /** Enqueues the schedule's job now, outside its ticks. */
  triggerSchedule(name: string, audit?: AuditInput): Promise<EnqueueAccepted> {
    return this.parts.schedules.trigger(name, audit);
  }

  /** Applies the config's [[schedules]] again (a reload), as at open; API schedules it does not name stay. */
  reconcileSchedules(specs: readonly ScheduleSpec[]): Promise<ReconcileReport> {
    return this.parts.schedules.reconcileNow(specs);
  }

  // ---------------------------------------------------------------- housekeeping (maintenance.ts, backup.ts)

  /** Promotes due scheduled jobs, expires leases and sweeps retention now. */
  runMaintenance(): Promise<MaintenanceReport> {
    return this.parts.ctx.write((tx) => this.parts.maintenance.run(tx));
  }

  /**
   * Copies the live store to `destinationPath` while other work goes on (backup.ts), one at
   * a time; FAILED_PRECONDITION when the store makes no backups.
   */
  async backup(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void> {
    this.parts.lifecycle.checkOpen();
    return this.parts.onlineBackup.copyTo(destinationPath, onProgress);
  }

  // ---------------------------------------------------------------- events (events/)

  /** Subscribes to job lifecycle events matching `filter` from `start`, in commit order (events/event-log.ts). */
  subscribeEvents(filter: EventFilter, start: EventStart, sink: EventSink): EventSubscription {
    this.parts.lifecycle.checkOpen();
    return this.parts.ctx.events.subscribe(filter, start, sink);
  }

  /** Names this server run's event sequence: a resume must name it (a restart makes a new one). */
  get eventStreamId(): string {
    return this.parts.ctx.events.streamId;
  }

  /** The event backlog now: subscribers, events kept and their estimated bytes (diagnostics, tests). */
  get eventBacklog(): { subscribers: number; events: number; bytes: number; recording: boolean } {
    return this.parts.ctx.events.backlog;
  }

  // ---------------------------------------------------------------- workers (worker-control.ts)

  /** Where the rpc layer reports connected workers (worker-registry.ts). */
  get workers(): WorkerRegistry {
    return this.parts.workerControl.registry;
  }

  /** The workers connected now, with the leases each holds. */
  listWorkers(): Promise<WorkerInfo[]> {
    return this.parts.ctx.read((view) => this.parts.workerControl.list(view));
  }

  /** Ends a lease now as its expiry would (for a stuck worker); audited. */
  releaseLease(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState; state: JobState }> {
    return this.parts.workerControl.releaseLease(jobId, audit);
  }

  /** Long-polls waiting now. */
  get waitingReserves(): number {
    return this.parts.ctx.waiters.size;
  }

  // ---------------------------------------------------------------- health and shutdown (lifecycle.ts)

  /** Per-queue counters that disagree with the rows (empty when healthy): for tests and diagnostics. */
  counterMismatches(): Promise<string[]> {
    return this.parts.ctx.read((view) => view.counts.mismatches());
  }

  /** Rejects (unavailable) unless the store answers a read now (readiness probes: one index lookup). */
  checkReadable(): Promise<void> {
    return this.parts.lifecycle.checkReadable();
  }

  /** First step of a graceful shutdown: long-polls answer with no jobs now; writes in flight still complete. */
  drainWaiters(): void {
    this.parts.lifecycle.drainWaiters();
  }

  /** Shuts down: refuses new work, writes what is queued and closes the store (SQLite: checkpoints the WAL). */
  close(): Promise<void> {
    return this.parts.lifecycle.close();
  }
}
