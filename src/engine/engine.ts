/**
 * The queue engine: the semantics of SPEC §4 over a Store (src/store/store.ts). A facade:
 * engine-parts.ts builds the capability modules and each method delegates to one. Every write is
 * a unit of store operations handed to the store, answered after the commit that holds it is
 * durable; every read is a unit the store runs against a consistent view, answered as a promise
 * (a store may answer over the network). In-memory state changes only in after-commit hooks, so
 * a failed commit leaves memory and storage agreeing.
 */

import { type Store, type StoreDescription, storeKindOnly } from '../store/store.ts';
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
import type { BatchCaller } from './batches/index.ts';
import type {
  BulkStart,
  CancelListener,
  SelectedJobsAction,
  SelectedJobsResult,
  WorkflowCancelResult,
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
import type { SeppError } from './errors.ts';
import type { EventFilter, EventOwner, EventSink, EventStart, EventSubscription } from './events/index.ts';
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
  BatchListQuery,
  BatchMember,
  BatchPage,
  CreateBatchRequest,
  FlowGraph,
} from './workflow-types.ts';

export type { EngineDeps } from './engine-parts.ts';

export class Engine {
  /** The capability objects (engine-parts.ts): each method below delegates to one of them. */
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

  /** Which store this is and where its data is (GetServerInfo, the dashboard); never a password. */
  storeDescription(): StoreDescription {
    const { store } = this.parts.ctx;
    return store.describe?.() ?? storeKindOnly(store.kind);
  }

  /** The limits in force: a view that follows reloads (live-limits.ts); spread it to keep a copy. */
  get limits(): EngineLimits {
    return this.parts.ctx.limits;
  }

  /**
   * Puts new limits in force from the next call (a config reload). What is
   * already held above a lowered limit is kept and drains. The restart-only
   * limits (live-limits.ts) must be unchanged.
   */
  reconfigureLimits(limits: Readonly<EngineLimits>): void {
    this.parts.limits.replace(limits);
  }

  /** The options in force: the limits and the queue settings of the config file now (reloads replace them). */
  get options(): EngineOptions {
    return { ...this.parts.queues.fileSettings, limits: this.parts.ctx.limits };
  }

  // ---------------------------------------------------------------- enqueue (jobs/)

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

  /** Enqueues a flow: jobs named locally, each after the ones it names; all or none (jobs/flow-shape.ts). */
  enqueueFlow(jobs: readonly FlowJob[]): Promise<FlowResult> {
    return this.parts.flowEnqueuer.enqueueFlow(jobs);
  }

  // ---------------------------------------------------------------- batches (batches/)

  /** Creates a batch with its completion jobs, enqueues its first members, seals it if asked. */
  createBatch(request: CreateBatchRequest, audit?: AuditInput): Promise<BatchAddResult> {
    return this.parts.batches.create(request, audit);
  }

  /** Adds jobs to an open batch (or a sealed one, from a running member with its lease's token); seals it if asked. */
  addToBatch(
    batchId: string,
    jobs: readonly EnqueueRequest[],
    options?: {
      seal?: boolean;
      sealIfAllStored?: boolean;
      fromMember?: string;
      memberToken?: string;
      caller?: BatchCaller;
    },
    audit?: AuditInput,
  ): Promise<BatchAddResult> {
    return this.parts.batches.add(batchId, jobs, options, audit);
  }

  /** Seals a batch; it ends (and enqueues its completion jobs) once no member is pending. Only its owner or an admin `caller`. */
  sealBatch(batchId: string, caller?: BatchCaller): Promise<BatchInfo> {
    return this.parts.batches.seal(batchId, caller);
  }

  /** A batch's state and counts, and a page of its members in the order added. */
  getBatch(
    batchId: string,
    page?: { afterPosition?: number; limit?: number },
  ): Promise<{ batch: BatchInfo; members: (BatchMember & { position: number })[] }> {
    return this.parts.batches.get(batchId, page);
  }

  /** A page of batches, newest first, by state and owner (ListBatches). */
  listBatches(query?: BatchListQuery): Promise<BatchPage> {
    return this.parts.batches.list(query);
  }

  /** Cancels every member of a batch that has not ended, as one act (audited with `audit`). */
  cancelBatch(batchId: string, audit?: AuditInput): Promise<WorkflowCancelResult> {
    return this.parts.workflows.cancelBatch(batchId, audit);
  }

  /** Batches not ended (open or sealed), for the batches_open gauge; null for a store without batches. */
  batchesOpen(): Promise<number | null> {
    return this.parts.ctx.read(function* (view) {
      return view.dependencies === undefined ? null : yield* view.dependencies.unendedBatches();
    });
  }

  // ---------------------------------------------------------------- flows (control/workflow-cancel.ts)

  /**
   * The flow of a job: the jobs connected to it through dependencies, either way, and their
   * edges, at most `limit` jobs and about `answerBytesMax` bytes (default and most 4 MiB).
   */
  getFlow(jobId: string, limit?: number, answerBytesMax?: number): Promise<FlowGraph> {
    return this.parts.workflows.getFlow(jobId, limit, answerBytesMax);
  }

  /** Cancels every job of a job's flow that has not ended, as one act (audited with `audit`). */
  cancelFlow(jobId: string, audit?: AuditInput): Promise<WorkflowCancelResult> {
    return this.parts.workflows.cancelFlow(jobId, audit);
  }

  /** True while the disk is full: enqueues are refused, leases and acks go on (disk-full.ts). */
  get diskIsFull(): boolean {
    return this.parts.diskFull.isFull;
  }

  // ---------------------------------------------------------------- leases (leases/)

  /** Leases up to `maxJobs` jobs, waiting up to `waitMs` for one; `signal` ends the wait early. */
  reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    return this.parts.reserver.reserve(request, signal);
  }

  /** Completes a leased job, keeping `result` if its queue retains completed jobs (job_cancelled if cancelled). */
  ack(ack: Ack): Promise<void> {
    return this.parts.settler.ack(ack);
  }

  /** Acks each job on its own: one outcome per job, in order. A result too large fails the whole call. */
  ackBatch(settles: readonly Ack[]): Promise<SettleOutcome[]> {
    return this.parts.acks.ackBatch(settles);
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.parts.settler.nack(request);
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.parts.settler.extend(request);
  }

  /**
   * Undoes leases that never reached their worker (an answer refused before it was sent): each
   * job still leased at the attempt named is ready again at its place, on the attempt it had
   * before, with no failure counted (leases/undone-lease.ts). Resolves with how many went back.
   */
  undoLeases(jobs: readonly { jobId: string; attempt: number }[]): Promise<number> {
    return this.parts.settler.undoLeases(jobs);
  }

  /** Records how far along a leased job is (fenced like extend); resolves with the job's progress after it. */
  reportProgress(report: ProgressReport): Promise<JobProgress> {
    return this.parts.progress.report(report);
  }

  // ---------------------------------------------------------------- job control (control/)

  getJob(jobId: string): Promise<JobInfo> {
    const read = this.parts.ctx.read((view) => this.parts.queries.getJob(view, jobId));
    const { remoteEnds } = this.parts;
    if (remoteEnds === undefined) return read;
    // A wait here naming the job learns it was there: gone from the store later, it ended elsewhere.
    return read.then((job) => {
      remoteEnds.saw(job);
      return job;
    });
  }

  /** Cancels a waiting job, or asks the worker of a leased one to stop (it ends cancelled). */
  cancel(jobId: string, audit?: AuditInput): Promise<CancelResult> {
    return this.parts.canceller.cancelJob(jobId, audit);
  }

  /** Cancels every job the filter matches: a bulk operation, waited for. */
  async cancelJobs(filter: JobFilter, audit?: AuditInput): Promise<BulkCancelResult> {
    const info = await this.runBulk({ action: 'cancel', filter, ...(audit ? { audit } : {}) });
    return { cancelled: info.changed - info.cancelRequested, cancelRequested: info.cancelRequested };
  }

  /** How many jobs cancelJobs(filter) would change now (a bounded count, see countBulk). */
  async countCancellable(filter: JobFilter): Promise<number> {
    return (await this.parts.bulk.count('cancel', filter)).matched;
  }

  /** How many jobs a bulk action would apply to now: exact, or "at least" after a bounded count. */
  async countBulk(
    action: BulkAction,
    filter: JobFilter,
    changes?: JobChanges,
    budget?: number,
  ): Promise<MatchCount> {
    return this.parts.bulk.count(action, filter, changes, budget);
  }

  /** How many jobs a filter of the jobs list matches, in any state: exact, or "at least" after a bounded count. */
  async countJobs(filter: JobFilter): Promise<MatchCount> {
    return this.parts.bulk.countListed(filter);
  }

  /** Starts a bulk operation and answers once it has begun; poll it with getBulkOperation. */
  async startBulk(request: BulkStart): Promise<BulkOperationInfo> {
    return (await this.parts.bulk.start(request)).info;
  }

  /** Runs a bulk operation to its end; rejects with what failed it. */
  async runBulk(request: BulkStart): Promise<BulkOperationInfo> {
    return this.parts.bulk.run(request);
  }

  /** A bulk operation's progress (NOT_FOUND once it is no longer kept). */
  getBulkOperation(id: string): BulkOperationInfo {
    return this.parts.bulk.get(id);
  }

  /** The bulk operations this server runs or has kept, running first. */
  listBulkOperations(): BulkOperationInfo[] {
    return this.parts.bulk.list();
  }

  /** Stops a bulk operation after its current slice; resolves with it once it stopped. */
  cancelBulkOperation(id: string): Promise<BulkOperationInfo> {
    return this.parts.bulk.cancel(id);
  }

  /** Calls `listener` with the leases told to stop, after each commit that asked for it; returns the unsubscribe. */
  onCancelRequested(listener: CancelListener): () => void {
    return this.parts.canceller.onCancelRequested(listener);
  }

  /** Calls `listener` after each commit that ended attempts by their hard timeout; returns the unsubscribe. */
  onAttemptsTimedOut(listener: TimeoutListener): () => void {
    return this.parts.settler.timeouts.onTimedOut(listener);
  }

  /** Changes a scheduled or ready job's priority or run time; returns it as it is now. */
  updateJob(jobId: string, changes: JobChanges, audit?: AuditInput): Promise<JobInfo> {
    return this.parts.updater.updateJob(jobId, changes, audit);
  }

  /** Runs now, or reprioritises, every waiting job the filter matches (a bulk operation); returns how many changed. */
  async updateJobs(filter: JobFilter, changes: JobChanges, audit?: AuditInput): Promise<number> {
    return (await this.runBulk({ action: 'update', filter, changes, ...(audit ? { audit } : {}) })).changed;
  }

  // ---------------------------------------------------------------- queues (queues/)

  /** Every queue, at most limits.max_queues: for tests and tools; answers to clients use `queuePage`. */
  listQueues(): Promise<QueueInfo[]> {
    return this.parts.ctx.read((view) => this.parts.queueAdmin.listQueues(view));
  }

  /** One page of queues in name order: at most limits.max_page_size (name-pages.ts). */
  queuePage(query: NamePageQuery = {}): Promise<Page<QueueInfo>> {
    return this.parts.ctx.read((view) => this.parts.queueAdmin.queuePage(view, query));
  }

  /** One queue; undefined when it does not exist. */
  async getQueue(queue: string): Promise<QueueInfo | undefined> {
    if (!this.parts.queues.exists(queue) && !(await this.parts.ctx.queueExistsNow(queue))) return undefined;
    const [info] = await this.parts.ctx.read((view) => this.parts.queueAdmin.describeQueues(view, [queue]));
    return info;
  }

  /** The named queues that exist, described (the gauges read only the queues they label). */
  describeQueues(names: readonly string[]): Promise<QueueInfo[]> {
    return this.parts.ctx.read((view) => this.parts.queueAdmin.describeQueues(view, names));
  }

  /** Every queue's jobs by state, from the maintained counters only (totals, gauges). */
  queueCounts(): Promise<Map<string, StateCounts>> {
    return this.parts.ctx.read((view) => this.parts.queueAdmin.queueCounts(view));
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
    return this.parts.queues.allOverrides();
  }

  /** Replaces the config file's queue settings (a reload); run-time overrides stay on top. */
  reconfigureQueues(file: QueueFileSettings): Promise<void> {
    return this.parts.runtimeSettings.reconfigure(file);
  }

  // ---------------------------------------------------------------- dead letters (control/)

  listDeadLetters(query: DeadLetterQuery): Promise<Page<JobInfo>> {
    return this.parts.ctx.read((view) => this.parts.deadLetters.list(view, query));
  }

  /** Puts dead letters back to ready with a fresh attempt budget; returns how many. With `all`, `requestKey` names the bulk operation (bulk-keys.ts). */
  requeueDeadLetters(
    selection: DeadLetterSelection,
    audit?: AuditInput,
    requestKey?: string,
  ): Promise<number> {
    return this.changeDeadLetters(selection, 'requeue', audit, requestKey);
  }

  /** Deletes dead letters; returns how many. */
  deleteDeadLetters(
    selection: DeadLetterSelection,
    audit?: AuditInput,
    requestKey?: string,
  ): Promise<number> {
    return this.changeDeadLetters(selection, 'delete', audit, requestKey);
  }

  /** How many jobs wait on chosen dead letters (the `wait` policy): a delete of them cancels those. */
  deadLettersWaitedOn(selection: {
    queue: string;
    jobIds: readonly string[];
  }): Promise<{ waiting: number; more: boolean }> {
    return this.parts.ctx.read((view) => this.parts.deadLetters.waitingOn(view, selection));
  }

  /** "All" of a queue's dead letters as a bulk filter; null for a declared queue that never held a job. */
  deadLetterFilter(selection: Extract<DeadLetterSelection, { all: true }>): Promise<JobFilter | null> {
    return this.parts.deadLetters.filterOfAll(selection);
  }

  private async changeDeadLetters(
    selection: DeadLetterSelection,
    action: 'requeue' | 'delete',
    audit: AuditInput | undefined,
    requestKey: string | undefined,
  ): Promise<number> {
    if ('jobIds' in selection) return this.parts.deadLetters.change(selection, action, audit);
    const filter = await this.deadLetterFilter(selection);
    if (filter === null) return 0;
    const keyed = requestKey === undefined ? {} : { requestKey };
    return (await this.runBulk({ action, filter, ...(audit ? { audit } : {}), ...keyed })).changed;
  }

  // ---------------------------------------------------------------- operators (operators/, jobs/, control/, audit/)

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

  /** A queue's dead letters grouped by last error (class, first line), the most jobs first. */
  topErrors(query: { queue: string; limit?: number }): Promise<TopErrors> {
    return this.parts.ctx.read((view) => topErrors(this.parts.ctx, view, query));
  }

  /** One page of a queue's dead letters (optionally of one reason), without payloads. */
  listDeadLetterSummaries(query: DeadLetterSummaryQuery): Promise<Page<JobSummary> & { total: number }> {
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

  /** Requeues, cancels or deletes (dead letters) the jobs of `jobIds` it applies to: one write, one audit entry. */
  changeSelectedJobs(
    action: SelectedJobsAction,
    jobIds: readonly string[],
    audit?: AuditInput,
  ): Promise<SelectedJobsResult> {
    return this.parts.selectedJobs.change(action, jobIds, audit);
  }

  /** Deletes every ready and scheduled job of a queue (a bulk operation); leased jobs finish normally. `requestKey` names it (bulk-keys.ts). */
  async purgeQueue(queue: string, audit?: AuditInput, requestKey?: string): Promise<{ deleted: number }> {
    const filter: JobFilter = { queue, states: ['scheduled', 'ready'] };
    const keyed = requestKey === undefined ? {} : { requestKey };
    return {
      deleted: (await this.runBulk({ action: 'delete', filter, ...(audit ? { audit } : {}), ...keyed }))
        .changed,
    };
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

  /** One page of schedules by name (at most limits.max_page_size), each with its next `nextRuns` run times. */
  schedulePage(query: NamePageQuery, nextRuns?: number): Promise<Page<ScheduleInfo>> {
    return this.parts.ctx.read((view) => this.parts.schedules.page(view, query, nextRuns));
  }

  /** One schedule with its template's payload and its next `nextRuns` run times (0–100; default 10). */
  getSchedule(name: string, nextRuns?: number): Promise<ScheduleInfo> {
    return this.parts.ctx.read((view) => this.parts.schedules.get(view, name, nextRuns));
  }

  /** A schedule's latest runs (the last 20 are kept), newest first; NOT_FOUND for an unknown schedule. */
  scheduleRuns(name: string): Promise<ScheduleRun[]> {
    return this.parts.ctx.read((view) => this.parts.schedules.runs(view, name));
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

  // ---------------------------------------------------------------- housekeeping (maintenance.ts, operators/)

  /** Promotes due scheduled jobs, expires leases and sweeps retention now. */
  runMaintenance(): Promise<MaintenanceReport> {
    return this.parts.ctx.write((tx) => this.parts.maintenance.run(tx));
  }

  /** Throws FAILED_PRECONDITION, naming the store, when the store makes no backups. */
  checkBackup(): void {
    this.parts.onlineBackup.check();
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

  /**
   * Subscribes to job lifecycle events matching `filter` from `start`, in commit order
   * (events/event-log.ts); `owner`, when the caller has an API key, bounds that key's subscriptions.
   */
  subscribeEvents(
    filter: EventFilter,
    start: EventStart,
    sink: EventSink,
    owner?: EventOwner,
  ): EventSubscription {
    this.parts.lifecycle.checkOpen();
    return this.parts.events.subscribe(filter, start, sink, owner);
  }

  /** Names this server run's event sequence: a resume must name it (a restart makes a new one). */
  get eventStreamId(): string {
    return this.parts.events.streamId;
  }

  /** The event backlog now: subscribers, events kept and their estimated bytes (diagnostics, tests). */
  get eventBacklog(): { subscribers: number; events: number; bytes: number; recording: boolean } {
    return this.parts.events.backlog;
  }

  // ---------------------------------------------------------------- workers (operators/)

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

  /**
   * Counts a read call of `caller` (an API key's name) in while it runs; answers the function
   * that counts it out. Throws RESOURCE_EXHAUSTED when the caller holds its share of the
   * store's read queue while reads wait (read-shares.ts). For the doors.
   */
  enterRead(caller: string): () => void {
    return this.parts.readShares.enter(caller);
  }

  /** The store's read queue for the metrics (read-shares.ts); null when reads never wait (SQLite). */
  get readQueue(): { waiting: number; refusedQueueFull: number; refusedKeyShare: number } | null {
    return this.parts.readShares.stats;
  }

  /** Long-polls waiting now. */
  get waitingReserves(): number {
    return this.parts.waiters.size;
  }

  // ---------------------------------------------------------------- health and shutdown (lifecycle.ts)

  /**
   * Per-queue counters that disagree with the rows, and rows of the workflow tables that deleted
   * jobs left (empty when healthy): for tests and diagnostics.
   */
  counterMismatches(): Promise<string[]> {
    return this.parts.ctx.read(function* (view) {
      const counts = yield* view.counts.mismatches();
      return view.dependencies === undefined
        ? counts
        : [...counts, ...(yield* view.dependencies.leftovers())];
    });
  }

  /**
   * Completed and failed attempts, dead jobs, waits and run times per queue and type over
   * `window`, from the stored history (src/engine/history/); `queue` narrows it to one queue.
   */
  history(window: HistoryWindow, queue: string | null = null): Promise<HistoryAnswer> {
    return this.parts.history.query(window, queue);
  }

  /** Writes the history's minutes that ended now rather than at the minute timer (tests). */
  flushHistory(): Promise<void> {
    return this.parts.history.flush();
  }

  /** Rejects (unavailable) unless the store answers a read now (readiness probes: one index lookup). */
  checkReadable(): Promise<void> {
    return this.parts.lifecycle.checkReadable();
  }

  /** First step of a graceful shutdown: long-polls answer with no jobs now; writes in flight still complete. */
  drainWaiters(): void {
    this.parts.lifecycle.drainWaiters();
  }

  /**
   * This server refuses every call from now on (app.ts calls it when the store says a newer sepp
   * migrated the schema past it): long-polls waiting now, and event subscriptions, end with
   * `refusal` at once, so their clients go to another server rather than find out
   * when their wait ends; later reserves get the store's refusal, later subscriptions this one.
   */
  shutOut(refusal: SeppError): void {
    this.parts.lifecycle.shutOut(refusal);
    this.parts.events.endAll(refusal);
  }

  /** Shuts down: refuses new work, writes what is queued and closes the store (SQLite: checkpoints the WAL). */
  close(): Promise<void> {
    return this.parts.lifecycle.close();
  }
}
