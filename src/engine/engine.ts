/**
 * The queue engine: the semantics of SPEC §4 over a Store (src/store/store.ts). A facade:
 * engine-parts.ts builds the capability modules and each method delegates to one. Every write is
 * a unit of store operations handed to the store, answered after the commit that holds it is
 * durable; every read is a unit the store runs against a consistent view, answered as a promise
 * (a store may answer over the network). In-memory state changes only in after-commit hooks, so
 * a failed commit leaves memory and storage agreeing.
 */

import type { Store, StoreDescription } from '../store/store.ts';
import type {
  AuditEntry,
  AuditInput,
  AuditQuery,
  JobBrowsePage,
  JobBrowseQuery,
  JobListQuery,
  JobSearchResult,
  JobSummary,
  TopErrors,
  WorkerInfo,
} from './admin-types.ts';
import {
  type BulkStart,
  type CancelListener,
  requireQueue,
  type SelectedJobsAction,
  type SelectedJobsResult,
  type WorkflowCancelResult,
} from './control/index.ts';
import type {
  BulkAction,
  BulkCancelResult,
  BulkOperationInfo,
  CancelResult,
  JobChanges,
  JobFilter,
  MatchCount,
} from './control-types.ts';
import { type EngineDeps, type EngineParts, openEngineParts } from './engine-parts.ts';
import type { EventFilter, EventSink, EventStart, EventSubscription } from './events/index.ts';
import type { HistoryAnswer, HistoryWindow } from './history/index.ts';
import { type DeadLetterSummaryQuery, topErrors } from './jobs/index.ts';
import type { TimeoutListener } from './leases/index.ts';
import type { MaintenanceReport } from './maintenance.ts';
import type { NamePageQuery } from './name-pages.ts';
import type { WorkerRegistry } from './operators/index.ts';
import type { QueueSettingsChange } from './queues/index.ts';
import type { PutMode, ReconcileReport, ScheduleInfo, ScheduleRun, ScheduleSpec } from './schedules/index.ts';
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
  FlowJob,
  FlowResult,
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
  StateCounts,
} from './types.ts';
import type {
  BatchAddResult,
  BatchInfo,
  BatchMember,
  CreateBatchRequest,
  FlowGraph,
} from './workflow-types.ts';

export type { EngineDeps } from './engine-parts.ts';

/**
 * "All" of a queue's dead letters as a bulk filter, or null for a queue the
 * config declares that has never held a job (nothing to change).
 */
function deadLetterFilter(
  ctx: EngineParts['ctx'],
  selection: Extract<DeadLetterSelection, { all: true }>,
): JobFilter | null {
  requireQueue(ctx, selection.queue);
  if (!ctx.queues.exists(selection.queue)) return null;
  return {
    queue: selection.queue,
    states: ['dead'],
    ...(selection.reason === undefined ? {} : { deadReason: selection.reason }),
    ...(selection.errorText === undefined ? {} : { errorText: selection.errorText }),
    ...(selection.enqueuedBeforeMs === undefined ? {} : { enqueuedBeforeMs: selection.enqueuedBeforeMs }),
  };
}

export class Engine {
  // The capability objects, held directly: each method below delegates to one of them.
  private readonly ctx: EngineParts['ctx'];
  private readonly lifecycle: EngineParts['lifecycle'];
  private readonly events: EngineParts['events'];
  private readonly queues: EngineParts['queues'];
  private readonly waiters: EngineParts['waiters'];
  private readonly diskFull: EngineParts['diskFull'];
  private readonly enqueuer: EngineParts['enqueuer'];
  private readonly flowEnqueuer: EngineParts['flowEnqueuer'];
  private readonly reserver: EngineParts['reserver'];
  private readonly settler: EngineParts['settler'];
  private readonly acks: EngineParts['acks'];
  private readonly progress: EngineParts['progress'];
  private readonly maintenance: EngineParts['maintenance'];
  private readonly queries: EngineParts['queries'];
  private readonly browser: EngineParts['browser'];
  private readonly finder: EngineParts['finder'];
  private readonly workerControl: EngineParts['workerControl'];
  private readonly audit: EngineParts['audit'];
  private readonly actions: EngineParts['actions'];
  private readonly queueAdmin: EngineParts['queueAdmin'];
  private readonly deadLetters: EngineParts['deadLetters'];
  private readonly selectedJobs: EngineParts['selectedJobs'];
  private readonly onlineBackup: EngineParts['onlineBackup'];
  private readonly schedules: EngineParts['schedules'];
  private readonly canceller: EngineParts['canceller'];
  private readonly updater: EngineParts['updater'];
  private readonly bulk: EngineParts['bulk'];
  private readonly runtimeSettings: EngineParts['runtimeSettings'];
  private readonly batches: EngineParts['batches'];
  private readonly workflows: EngineParts['workflows'];
  private readonly jobHistory: EngineParts['history'];

  private constructor(parts: EngineParts) {
    this.ctx = parts.ctx;
    this.lifecycle = parts.lifecycle;
    this.events = parts.events;
    this.queues = parts.queues;
    this.waiters = parts.waiters;
    this.diskFull = parts.diskFull;
    this.enqueuer = parts.enqueuer;
    this.flowEnqueuer = parts.flowEnqueuer;
    this.reserver = parts.reserver;
    this.settler = parts.settler;
    this.acks = parts.acks;
    this.progress = parts.progress;
    this.maintenance = parts.maintenance;
    this.queries = parts.queries;
    this.browser = parts.browser;
    this.finder = parts.finder;
    this.workerControl = parts.workerControl;
    this.audit = parts.audit;
    this.actions = parts.actions;
    this.selectedJobs = parts.selectedJobs;
    this.queueAdmin = parts.queueAdmin;
    this.deadLetters = parts.deadLetters;
    this.onlineBackup = parts.onlineBackup;
    this.schedules = parts.schedules;
    this.canceller = parts.canceller;
    this.updater = parts.updater;
    this.bulk = parts.bulk;
    this.runtimeSettings = parts.runtimeSettings;
    this.batches = parts.batches;
    this.workflows = parts.workflows;
    this.jobHistory = parts.history;
  }

  /**
   * Opens the engine over `store`, which it owns from now on (close() closes it): loads the
   * queues, reconciles the config's schedules, reads the run-time overrides, starts maintenance.
   */
  static async open(store: Store, options: EngineOptions, deps: EngineDeps): Promise<Engine> {
    return new Engine(await openEngineParts(store, options, deps));
  }

  /** The store the engine works on (the admin UI keeps its sessions there). */
  get store(): Store {
    return this.ctx.store;
  }

  /** Which store this is and where its data is (GetServerInfo, the dashboard); never a password. */
  storeDescription(): StoreDescription {
    const { store } = this.ctx;
    return (
      store.describe?.() ?? {
        kind: store.kind,
        host: null,
        database: null,
        schema: null,
        signalsConnected: null,
        replication: null,
        standbys: null,
      }
    );
  }

  get limits(): EngineLimits {
    return this.ctx.limits;
  }

  /** The options in force: the limits given at start and the queue settings of the config file now (reloads replace them). */
  get options(): EngineOptions {
    return { ...this.queues.fileSettings, limits: this.ctx.limits };
  }

  // ---------------------------------------------------------------- enqueue (jobs/)

  /** Enqueues one job; a rejection is thrown as a SeppError. `audit` is written with the accepted job. */
  enqueue(request: EnqueueRequest, audit?: AuditInput): Promise<EnqueueAccepted> {
    return this.enqueuer.enqueue(request, audit);
  }

  /** Enqueues each job on its own merits: one result per job, in order. */
  enqueueBatch(requests: readonly EnqueueRequest[], audit?: AuditInput): Promise<EnqueueResult[]> {
    return this.enqueuer.enqueueBatch(requests, audit);
  }

  /** Enqueues every job or none: on any rejection, nothing is stored and every failing index is reported. */
  enqueueAtomic(requests: readonly EnqueueRequest[]): Promise<AtomicEnqueueResult> {
    return this.enqueuer.enqueueAtomic(requests);
  }

  /** Enqueues a flow: jobs named locally, each after the ones it names; all or none (jobs/flow-shape.ts). */
  enqueueFlow(jobs: readonly FlowJob[]): Promise<FlowResult> {
    return this.flowEnqueuer.enqueueFlow(jobs);
  }

  // ---------------------------------------------------------------- batches (batches/)

  /** Creates a batch with its completion jobs, enqueues its first members, seals it if asked. */
  createBatch(request: CreateBatchRequest, audit?: AuditInput): Promise<BatchAddResult> {
    return this.batches.create(request, audit);
  }

  /** Adds jobs to an open batch (or a sealed one, from a member that has not ended); seals it if asked. */
  addToBatch(
    batchId: string,
    jobs: readonly EnqueueRequest[],
    options?: { seal?: boolean; fromMember?: string },
    audit?: AuditInput,
  ): Promise<BatchAddResult> {
    return this.batches.add(batchId, jobs, options, audit);
  }

  /** Seals a batch; it ends (and enqueues its completion jobs) once no member is pending. */
  sealBatch(batchId: string): Promise<BatchInfo> {
    return this.batches.seal(batchId);
  }

  /** A batch's state and counts, and a page of its members in the order added. */
  getBatch(
    batchId: string,
    page?: { afterPosition?: number; limit?: number },
  ): Promise<{ batch: BatchInfo; members: (BatchMember & { position: number })[] }> {
    return this.batches.get(batchId, page);
  }

  /** Cancels every member of a batch that has not ended, as one act (audited with `audit`). */
  cancelBatch(batchId: string, audit?: AuditInput): Promise<WorkflowCancelResult> {
    return this.workflows.cancelBatch(batchId, audit);
  }

  /** Batches not ended (open or sealed), for the batches_open gauge; null for a store without batches. */
  batchesOpen(): Promise<number | null> {
    return this.ctx.read(function* (view) {
      return view.dependencies === undefined ? null : yield* view.dependencies.unendedBatches();
    });
  }

  // ---------------------------------------------------------------- flows (control/workflow-cancel.ts)

  /** The flow of a job: the jobs connected to it through dependencies, either way, and their edges. */
  getFlow(jobId: string, limit?: number): Promise<FlowGraph> {
    return this.workflows.getFlow(jobId, limit);
  }

  /** Cancels every job of a job's flow that has not ended, as one act (audited with `audit`). */
  cancelFlow(jobId: string, audit?: AuditInput): Promise<WorkflowCancelResult> {
    return this.workflows.cancelFlow(jobId, audit);
  }

  /** True while the disk is full: enqueues are refused, leases and acks go on (disk-full.ts). */
  get diskIsFull(): boolean {
    return this.diskFull.isFull;
  }

  // ---------------------------------------------------------------- leases (leases/)

  /** Leases up to `maxJobs` jobs, waiting up to `waitMs` for one; `signal` ends the wait early. */
  reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    return this.reserver.reserve(request, signal);
  }

  /** Completes a leased job, keeping `result` if its queue retains completed jobs (job_cancelled if cancelled). */
  ack(ack: Ack): Promise<void> {
    return this.settler.ack(ack);
  }

  /** Acks each job on its own: one outcome per job, in order. A result too large fails the whole call. */
  ackBatch(settles: readonly Ack[]): Promise<SettleOutcome[]> {
    return this.acks.ackBatch(settles);
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.settler.nack(request);
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.settler.extend(request);
  }

  /** Records how far along a leased job is (fenced like extend); resolves with the job's progress after it. */
  reportProgress(report: ProgressReport): Promise<JobProgress> {
    return this.progress.report(report);
  }

  // ---------------------------------------------------------------- job control (control/)

  getJob(jobId: string): Promise<JobInfo> {
    return this.ctx.read((view) => this.queries.getJob(view, jobId));
  }

  /** Cancels a waiting job, or asks the worker of a leased one to stop (it ends cancelled). */
  cancel(jobId: string, audit?: AuditInput): Promise<CancelResult> {
    return this.canceller.cancelJob(jobId, audit);
  }

  /** Cancels every job the filter matches: a bulk operation, waited for. */
  async cancelJobs(filter: JobFilter, audit?: AuditInput): Promise<BulkCancelResult> {
    const info = await this.runBulk({ action: 'cancel', filter, ...(audit ? { audit } : {}) });
    return { cancelled: info.changed - info.cancelRequested, cancelRequested: info.cancelRequested };
  }

  /** How many jobs cancelJobs(filter) would change now (a bounded count, see countBulk). */
  async countCancellable(filter: JobFilter): Promise<number> {
    return (await this.bulk.count('cancel', filter)).matched;
  }

  /** How many jobs a bulk action would apply to now: exact, or "at least" after a bounded count. */
  countBulk(
    action: BulkAction,
    filter: JobFilter,
    changes?: JobChanges,
    budget?: number,
  ): Promise<MatchCount> {
    return this.bulk.count(action, filter, changes, budget);
  }

  /** How many jobs a filter of the jobs list matches, in any state: exact, or "at least" after a bounded count. */
  countJobs(filter: JobFilter): Promise<MatchCount> {
    return this.bulk.countListed(filter);
  }

  /** Starts a bulk operation and answers once it has begun; poll it with getBulkOperation. */
  async startBulk(request: BulkStart): Promise<BulkOperationInfo> {
    return (await this.bulk.start(request)).info;
  }

  /** Runs a bulk operation to its end; rejects with what failed it. */
  runBulk(request: BulkStart): Promise<BulkOperationInfo> {
    return this.bulk.run(request);
  }

  /** A bulk operation's progress (NOT_FOUND once it is no longer kept). */
  getBulkOperation(id: string): BulkOperationInfo {
    return this.bulk.get(id);
  }

  /** The bulk operations this server runs or has kept, running first. */
  listBulkOperations(): BulkOperationInfo[] {
    return this.bulk.list();
  }

  /** Stops a bulk operation after its current slice; resolves with it once it stopped. */
  cancelBulkOperation(id: string): Promise<BulkOperationInfo> {
    return this.bulk.cancel(id);
  }

  /** Calls `listener` with the leases told to stop, after each commit that asked for it; returns the unsubscribe. */
  onCancelRequested(listener: CancelListener): () => void {
    return this.canceller.onCancelRequested(listener);
  }

  /** Calls `listener` after each commit that ended attempts by their hard timeout; returns the unsubscribe. */
  onAttemptsTimedOut(listener: TimeoutListener): () => void {
    return this.settler.timeouts.onTimedOut(listener);
  }

  /** Changes a scheduled or ready job's priority or run time; returns it as it is now. */
  updateJob(jobId: string, changes: JobChanges, audit?: AuditInput): Promise<JobInfo> {
    return this.updater.updateJob(jobId, changes, audit);
  }

  /** Runs now, or reprioritises, every waiting job the filter matches (a bulk operation); returns how many changed. */
  async updateJobs(filter: JobFilter, changes: JobChanges, audit?: AuditInput): Promise<number> {
    return (await this.runBulk({ action: 'update', filter, changes, ...(audit ? { audit } : {}) })).changed;
  }

  // ---------------------------------------------------------------- queues (queues/)

  /** Every queue, at most limits.max_queues: for tests and tools; answers to clients use `queuePage`. */
  listQueues(): Promise<QueueInfo[]> {
    return this.ctx.read((view) => this.queueAdmin.listQueues(view));
  }

  /** One page of queues in name order: at most limits.max_page_size (name-pages.ts). */
  queuePage(query: NamePageQuery = {}): Promise<Page<QueueInfo>> {
    return this.ctx.read((view) => this.queueAdmin.queuePage(view, query));
  }

  /** One queue; undefined when it does not exist. */
  async getQueue(queue: string): Promise<QueueInfo | undefined> {
    if (!this.queues.exists(queue)) return undefined;
    const [info] = await this.ctx.read((view) => this.queueAdmin.describeQueues(view, [queue]));
    return info;
  }

  /** The named queues that exist, described (the gauges read only the queues they label). */
  describeQueues(names: readonly string[]): Promise<QueueInfo[]> {
    return this.ctx.read((view) => this.queueAdmin.describeQueues(view, names));
  }

  /** Every queue's jobs by state, from the maintained counters only (totals, gauges). */
  queueCounts(): Promise<Map<string, StateCounts>> {
    return this.ctx.read((view) => this.queueAdmin.queueCounts(view));
  }

  /** Pauses a queue; NOT_FOUND for a queue nobody has used, unless `allowMissing` creates it (paused). */
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

  /** Sets and resets run-time overrides of a queue's settings (audited); returns the queue afterwards. */
  async changeQueueSettings(
    queue: string,
    change: QueueSettingsChange,
    audit: AuditInput,
  ): Promise<QueueInfo> {
    await this.runtimeSettings.change(queue, change, audit);
    return this.ctx.read((view) => this.queueAdmin.queueInfo(view, queue));
  }

  /** Every queue's run-time overrides (a reload checks the new file against them). */
  queueSettingOverrides(): ReadonlyMap<string, Readonly<Partial<QueueSettingsFlat>>> {
    return this.queues.allOverrides();
  }

  /** Replaces the config file's queue settings (a reload); run-time overrides stay on top. */
  reconfigureQueues(file: QueueFileSettings): Promise<void> {
    return this.runtimeSettings.reconfigure(file);
  }

  // ---------------------------------------------------------------- dead letters (control/)

  listDeadLetters(query: DeadLetterQuery): Promise<Page<JobInfo>> {
    return this.ctx.read((view) => this.deadLetters.list(view, query));
  }

  /** Puts dead letters back to ready with a fresh attempt budget; returns how many. */
  requeueDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.changeDeadLetters(selection, 'requeue', audit);
  }

  /** Deletes dead letters; returns how many. */
  deleteDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.changeDeadLetters(selection, 'delete', audit);
  }

  /** "All" of a queue's dead letters as a bulk filter; null for a declared queue that never held a job. */
  deadLetterFilter(selection: Extract<DeadLetterSelection, { all: true }>): JobFilter | null {
    return deadLetterFilter(this.ctx, selection);
  }

  private async changeDeadLetters(
    selection: DeadLetterSelection,
    action: 'requeue' | 'delete',
    audit: AuditInput | undefined,
  ): Promise<number> {
    if ('jobIds' in selection) return this.deadLetters.change(selection, action, audit);
    const filter = this.deadLetterFilter(selection);
    if (filter === null) return 0;
    return (await this.runBulk({ action, filter, ...(audit ? { audit } : {}) })).changed;
  }

  // ---------------------------------------------------------------- operators (operators/, jobs/, control/, audit/)

  /** One page of a queue's jobs in one state, in enqueue order; `total` is the state's count when no type filter is given. */
  listJobs(query: JobListQuery): Promise<Page<JobSummary> & { total: number | null }> {
    return this.ctx.read((view) => this.queries.listJobs(view, query));
  }

  /** A page of jobs across queues and states, with filters; paged both ways (job-browse.ts). */
  browseJobs(query: JobBrowseQuery): Promise<JobBrowsePage> {
    return this.ctx.read((view) => this.browser.browse(view, query));
  }

  /** Jobs by full id, a piece of an id, or an idempotency key in any queue (job-search.ts). */
  searchJobs(text: string): Promise<JobSearchResult> {
    return this.ctx.read((view) => this.finder.search(view, text));
  }

  /** A queue's dead letters grouped by last error (class, first line), the most jobs first. */
  topErrors(query: { queue: string; limit?: number }): Promise<TopErrors> {
    return this.ctx.read((view) => topErrors(this.ctx, view, query));
  }

  /** One page of a queue's dead letters (optionally of one reason), without payloads. */
  listDeadLetterSummaries(query: DeadLetterSummaryQuery): Promise<Page<JobSummary> & { total: number }> {
    return this.ctx.read((view) => this.queries.listDeadLetters(view, query));
  }

  /** The job an idempotency key names: the newest stored one, else the one the dedup window remembers. */
  findJobByIdempotencyKey(queue: string, key: string): Promise<{ jobId: string; stored: boolean } | null> {
    return this.ctx.read((view) => this.queries.findJobByIdempotencyKey(view, queue, key));
  }

  /** A dead, completed or cancelled job back to ready now, with a fresh attempt budget. */
  requeueJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.actions.requeueJob(jobId, audit);
  }

  /** A ready or scheduled job to the dead letters now (reason `dead_lettered`). */
  deadLetterJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.actions.deadLetterJob(jobId, audit);
  }

  /** Requeues, cancels or deletes (dead letters) the jobs of `jobIds` it applies to: one write, one audit entry. */
  changeSelectedJobs(
    action: SelectedJobsAction,
    jobIds: readonly string[],
    audit?: AuditInput,
  ): Promise<SelectedJobsResult> {
    return this.selectedJobs.change(action, jobIds, audit);
  }

  /** Deletes every ready and scheduled job of a queue (a bulk operation); leased jobs finish normally. */
  async purgeQueue(queue: string, audit?: AuditInput): Promise<{ deleted: number }> {
    const filter: JobFilter = { queue, states: ['scheduled', 'ready'] };
    return {
      deleted: (await this.runBulk({ action: 'delete', filter, ...(audit ? { audit } : {}) })).changed,
    };
  }

  /** Records an action that changes nothing in the engine (a login, say); resolves once durable. */
  recordAudit(entry: AuditInput): Promise<number> {
    return this.ctx.write((tx) => this.audit.write(tx, entry));
  }

  /** Audit entries, newest first. */
  listAudit(query: AuditQuery): Promise<Page<AuditEntry>> {
    return this.ctx.read((view) => this.audit.list(view, query));
  }

  // ---------------------------------------------------------------- schedules (schedules/)

  /** Every schedule by name, each with its next `nextRuns` run times (0–10; default 1). */
  listSchedules(nextRuns?: number): Promise<ScheduleInfo[]> {
    return this.ctx.read((view) => this.schedules.list(view, nextRuns));
  }

  /** One page of schedules by name (at most limits.max_page_size), each with its next `nextRuns` run times. */
  schedulePage(query: NamePageQuery, nextRuns?: number): Promise<Page<ScheduleInfo>> {
    return this.ctx.read((view) => this.schedules.page(view, query, nextRuns));
  }

  /** One schedule with its template's payload and its next `nextRuns` run times (0–100; default 10). */
  getSchedule(name: string, nextRuns?: number): Promise<ScheduleInfo> {
    return this.ctx.read((view) => this.schedules.get(view, name, nextRuns));
  }

  /** A schedule's latest runs (the last 20 are kept), newest first; NOT_FOUND for an unknown schedule. */
  scheduleRuns(name: string): Promise<ScheduleRun[]> {
    return this.ctx.read((view) => this.schedules.runs(view, name));
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

  // ---------------------------------------------------------------- housekeeping (maintenance.ts, operators/)

  /** Promotes due scheduled jobs, expires leases and sweeps retention now. */
  runMaintenance(): Promise<MaintenanceReport> {
    return this.ctx.write((tx) => this.maintenance.run(tx));
  }

  /**
   * Copies the live store to `destinationPath` while other work goes on (backup.ts), one at
   * a time; FAILED_PRECONDITION when the store makes no backups.
   */
  /** Throws FAILED_PRECONDITION, naming the store, when the store makes no backups. */
  checkBackup(): void {
    this.onlineBackup.check();
  }

  async backup(
    destinationPath: string,
    onProgress?: (pagesDone: number, pagesTotal: number) => void,
  ): Promise<void> {
    this.lifecycle.checkOpen();
    return this.onlineBackup.copyTo(destinationPath, onProgress);
  }

  // ---------------------------------------------------------------- events (events/)

  /** Subscribes to job lifecycle events matching `filter` from `start`, in commit order (events/event-log.ts). */
  subscribeEvents(filter: EventFilter, start: EventStart, sink: EventSink): EventSubscription {
    this.lifecycle.checkOpen();
    return this.events.subscribe(filter, start, sink);
  }

  /** Names this server run's event sequence: a resume must name it (a restart makes a new one). */
  get eventStreamId(): string {
    return this.events.streamId;
  }

  /** The event backlog now: subscribers, events kept and their estimated bytes (diagnostics, tests). */
  get eventBacklog(): { subscribers: number; events: number; bytes: number; recording: boolean } {
    return this.events.backlog;
  }

  // ---------------------------------------------------------------- workers (operators/)

  /** Where the rpc layer reports connected workers (worker-registry.ts). */
  get workers(): WorkerRegistry {
    return this.workerControl.registry;
  }

  /** The workers connected now, with the leases each holds. */
  listWorkers(): Promise<WorkerInfo[]> {
    return this.ctx.read((view) => this.workerControl.list(view));
  }

  /** Ends a lease now as its expiry would (for a stuck worker); audited. */
  releaseLease(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState; state: JobState }> {
    return this.workerControl.releaseLease(jobId, audit);
  }

  /** Long-polls waiting now. */
  get waitingReserves(): number {
    return this.waiters.size;
  }

  // ---------------------------------------------------------------- health and shutdown (lifecycle.ts)

  /** Per-queue counters that disagree with the rows (empty when healthy): for tests and diagnostics. */
  counterMismatches(): Promise<string[]> {
    return this.ctx.read((view) => view.counts.mismatches());
  }

  /**
   * Completed and failed attempts, dead jobs, waits and run times per queue and type over
   * `window`, from the stored history (src/engine/history/); `queue` narrows it to one queue.
   */
  history(window: HistoryWindow, queue: string | null = null): Promise<HistoryAnswer> {
    return this.jobHistory.query(window, queue);
  }

  /** Writes the history's minutes that ended now rather than at the minute timer (tests). */
  flushHistory(): Promise<void> {
    return this.jobHistory.flush();
  }

  /** Rejects (unavailable) unless the store answers a read now (readiness probes: one index lookup). */
  checkReadable(): Promise<void> {
    return this.lifecycle.checkReadable();
  }

  /** First step of a graceful shutdown: long-polls answer with no jobs now; writes in flight still complete. */
  drainWaiters(): void {
    this.lifecycle.drainWaiters();
  }

  /** Shuts down: refuses new work, writes what is queued and closes the store (SQLite: checkpoints the WAL). */
  close(): Promise<void> {
    return this.lifecycle.close();
  }
}
