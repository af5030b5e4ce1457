/**
 * SeppClient: every RPC of sepp.v1.QueueService as an async method with
 * friendly types. Enqueues are coalesced per event-loop turn and go over one
 * Produce stream (see enqueue-batcher.ts); everything else is a unary call
 * with a deadline. Producing, leasing, settling and waiting for jobs are
 * methods here; the rest is grouped by what it acts on, each group an object
 * of its own on the client: `client.jobs` (client-jobs.ts), `client.queues`
 * (client-queues.ts), `client.dlq`, `client.audit`, `client.schedules`.
 * The flat methods of earlier versions (`client.pauseQueue(…)`, …) stay as
 * aliases of those.
 */

import { status } from '@grpc/grpc-js';
import { pageSizeArgument } from './arguments.ts';
import { type BatchSender, ProduceStreamSender, UnaryBatchSender } from './batch-senders.ts';
import {
  addToBatch,
  type BatchAdded,
  type BatchInfo,
  type BatchMember,
  type BatchQuery,
  type BatchSpec,
  cancelBatchCall,
  cancelFlowCall,
  createBatchCall,
  type FlowGraph,
  getBatchCall,
  getFlowCall,
  listBatchesCall,
  sealBatchCall,
  type WorkflowCancelled,
} from './batches.ts';
import { AuditLog } from './client-audit.ts';
import { type DeadLetterChangeOptions, DeadLetters } from './client-dead-letters.ts';
import { Jobs } from './client-jobs.ts';
import { type PurgeOptions, Queues } from './client-queues.ts';
import { Connection, type ConnectOptions, retrySafe } from './connection.ts';
import {
  jobFromArgs,
  jobFromJson,
  jobFromSpec,
  serverInfoFromProto,
  workerInfoFromProto,
} from './convert.ts';
import { EnqueueBatcher } from './enqueue-batcher.ts';
import { submitAtomic, submitBatch, submitOne } from './enqueue-calls.ts';
import { SeppError } from './errors.ts';
import { EventSubscription, type EventsOptions } from './events.ts';
import { enqueueFlowCall, type Flow, type FlowJobSpec } from './flows.ts';
import type { EnqueueJob } from './gen/sepp/v1/job.js';
import { type Job, LeasedJob } from './jobs.ts';
import { ackBatchCall, ackCall, extendCall, nackCall, progressCall, reserveCall } from './lease-calls.ts';
import { encodeResult, type JobProgress, progressFields } from './results.ts';
import { Schedules } from './schedules.ts';
import { reloadConfigCall, type SettingInput } from './settings-calls.ts';
import type {
  AckOptions,
  AckResult,
  AckSpec,
  AuditEntry,
  AuditQuery,
  BulkChanges,
  BulkOptions,
  BulkResult,
  CallOptions,
  CancelJobsResult,
  CancelResult,
  DeadLetterQuery,
  DeadLetterSelection,
  Enqueued,
  EnqueueOptions,
  EnqueueOutcome,
  JobChanges,
  JobFilter,
  JobSpec,
  LeaseRef,
  NackOptions,
  NackResult,
  Payload,
  QueueActionOptions,
  QueueInfo,
  ReloadReport,
  ReserveOptions,
  ServerInfo,
  WorkerInfo,
  WorkerPage,
  WorkerPageOptions,
} from './types.ts';
import { enqueueThenWait, type JobOutcome, type WaitOptions, waitForJob } from './wait.ts';
import { Worker, type WorkerOptions } from './worker.ts';

/** Where `SeppClient.connect()` goes without an address or SEPP_SERVER: the server's default. */
const defaultAddress = '127.0.0.1:50051';

/** Counters of the enqueue path, for tuning and tests. */
export interface ClientStats {
  /** Jobs sent (each retry counts again). */
  enqueuedJobs: number;
  /** Batches sent: Produce messages plus unary EnqueueBatch/EnqueueAtomic calls. */
  batches: number;
  /** Messages sent on Produce streams. */
  produceMessages: number;
}

/** A connection to a sepp server. Create one per process and share it; `close()` it on shutdown. */
export class SeppClient {
  /** @internal The connection; Workers use it to open Work streams. */
  readonly connection: Connection;
  private readonly batcher: EnqueueBatcher;
  private readonly streamSender: ProduceStreamSender | undefined;
  /** What carries batches and flows: the Produce stream, or unary calls. */
  private readonly sender: BatchSender;
  private readonly workers = new Set<Worker>();
  /** Jobs already enqueued: read one (`get`), cancel or change one or every match (admin key). */
  readonly jobs: Jobs;
  /** Queues: list with counts, pause, resume, purge, delete, run-time settings. */
  readonly queues: Queues;
  /** Dead letters: page through, requeue, delete (named as `sepp dlq`; `deadLetters(queue)` is the page-by-page walk of earlier versions). */
  readonly dlq: DeadLetters;
  /** The audit log (admin key): who changed what, newest first. */
  readonly audit: AuditLog;
  /** Schedules: periodic jobs the server enqueues itself (create, list, pause, trigger…). */
  readonly schedules: Schedules;

  private constructor(address: string, options: ConnectOptions) {
    this.connection = new Connection(address, options);
    this.jobs = new Jobs(this.connection);
    this.queues = new Queues(this.connection);
    this.dlq = new DeadLetters(this.connection);
    this.audit = new AuditLog(this.connection);
    this.schedules = new Schedules(this.connection);
    const unary = new UnaryBatchSender(this.connection);
    this.streamSender =
      this.connection.options.transport === 'stream'
        ? new ProduceStreamSender(this.connection, unary)
        : undefined;
    this.sender = this.streamSender ?? unary;
    this.batcher = new EnqueueBatcher(this.connection, this.sender);
  }

  /**
   * Creates a client for `address` (`host:port`; default: the environment
   * variable `SEPP_SERVER`, else `127.0.0.1:50051`). The API key is
   * `options.apiKey`, else `SEPP_API_KEY`. The connection is made lazily by the
   * first call; `ready()` waits for it explicitly.
   */
  static connect(address?: string, options: ConnectOptions = {}): SeppClient {
    return new SeppClient(address ?? (process.env.SEPP_SERVER || defaultAddress), options);
  }

  /** The server address this client talks to. */
  get address(): string {
    return this.connection.address;
  }

  /** Counters of the enqueue path (coalescing), for tuning and tests. */
  stats(): ClientStats {
    return {
      enqueuedJobs: this.batcher.jobsSent,
      batches: this.batcher.batchesSent,
      produceMessages: this.streamSender?.messagesSent ?? 0,
    };
  }

  /** Waits until the connection is up, or fails with UNAVAILABLE after `timeoutMs` (default: the default deadline). */
  ready(timeoutMs?: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const deadline = this.connection.deadline(timeoutMs, 'timeoutMs');
      this.connection.rpc.waitForReady(deadline, (error) => {
        if (error) {
          reject(
            new SeppError(status.UNAVAILABLE, `cannot reach sepp at ${this.address}: ${error.message}`, {
              cause: error,
            }),
          );
        } else resolve();
      });
    });
  }

  // ------------------------------------------------------------------ enqueue

  /**
   * Enqueues one job. Calls made in the same event-loop turn travel together
   * in one message. Resolves once the job is durable; throws JobRejectedError
   * when the server refuses it.
   */
  enqueue(queue: string, type: string, payload?: Payload, options: EnqueueOptions = {}): Promise<Enqueued> {
    let job: EnqueueJob;
    try {
      job = jobFromArgs(queue, type, payload, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return submitOne(this.batcher, job, options.deadlineMs);
  }

  /** Enqueues one job whose payload is `value` as JSON (content type `application/json`). */
  enqueueJson(queue: string, type: string, value: unknown, options: EnqueueOptions = {}): Promise<Enqueued> {
    let job: EnqueueJob;
    try {
      job = jobFromJson(queue, type, value, options);
    } catch (error) {
      return Promise.reject(error);
    }
    return submitOne(this.batcher, job, options.deadlineMs);
  }

  /**
   * Enqueues many jobs, best effort: one outcome per job, in order; a refused
   * job does not stop the others. Batches above the server's `max_batch_jobs` or message size
   * (`grpc.max_message_bytes`, counted in UTF-8 bytes) go as several messages. With `retry`,
   * jobs refused `queue_full` are sent again until the queue has room (their outcome is the
   * last try's).
   */
  async enqueueBatch(jobs: readonly JobSpec[], options: CallOptions = {}): Promise<EnqueueOutcome[]> {
    const protoJobs = jobs.map(jobFromSpec);
    // Split by the smaller of maxBatchJobs and the server's own bounds, once it has said them.
    await this.connection.learnServerBounds();
    return submitBatch(this.batcher, protoJobs, options.deadlineMs);
  }

  /**
   * Enqueues every job or none (at most `maxBatchJobs`). Resolves with each
   * job's id in order; throws JobRejectedError listing every refused job, by
   * index, when nothing was stored.
   */
  enqueueAtomic(jobs: readonly JobSpec[], options: CallOptions = {}): Promise<Enqueued[]> {
    let protoJobs: EnqueueJob[];
    try {
      protoJobs = jobs.map(jobFromSpec);
    } catch (error) {
      return Promise.reject(error);
    }
    return submitAtomic(this.batcher, protoJobs, options.deadlineMs);
  }

  /**
   * Enqueues a flow (flows.ts): jobs that name each other (`after`), each waiting
   * until the ones it runs after completed; all or none. Resolves with each job's
   * id by its name; throws JobRejectedError listing every refused job, by index.
   */
  enqueueFlow(
    flow: Flow | readonly (FlowJobSpec & { name: string })[],
    options: CallOptions = {},
  ): Promise<Record<string, Enqueued>> {
    return enqueueFlowCall(this.connection, this.sender, flow, options);
  }

  /**
   * Creates a batch (batches.ts): its completion jobs, its first members (each on its
   * own merits), sealed at once with `seal`. The server enqueues `onComplete` (and
   * `onSuccess` if every member completed) once, when the sealed batch's last member ends,
   * and `onDeath` once, when the first member dies.
   */
  createBatch(spec: BatchSpec, options: CallOptions = {}): Promise<BatchAdded> {
    return createBatchCall(this.connection, spec, options);
  }

  /**
   * Adds jobs to an open batch; a running member adds to its own sealed batch by
   * passing its job id as `fromMember`: the server also asks for the secret token of its
   * lease, which this SDK passes itself while the member's handler runs in this process,
   * through a Client of the same target as the Worker that leased it (the address as
   * configured, plaintext or TLS and its server name), never to another server: through a
   * client of another the add is refused (`permission_denied`, saying the member does not run
   * on this client's server). `fromMemberToken` (the job's `leaseToken`) gives it otherwise.
   * `seal` seals it after.
   */
  addToBatch(
    batchId: string,
    jobs: readonly JobSpec[],
    options: CallOptions & { seal?: boolean; fromMember?: string; fromMemberToken?: string } = {},
  ): Promise<BatchAdded> {
    return addToBatch(this.connection, batchId, jobs, options);
  }

  /** Seals a batch: it ends once no member is pending (at once if none is). */
  sealBatch(batchId: string, options: CallOptions = {}): Promise<BatchInfo> {
    return sealBatchCall(this.connection, batchId, options);
  }

  /** A batch's state and counts, and up to `membersLimit` (100) members after position `membersAfter`. */
  getBatch(
    batchId: string,
    options: CallOptions & { membersAfter?: number; membersLimit?: number } = {},
  ): Promise<{ batch: BatchInfo; members: BatchMember[] }> {
    return getBatchCall(this.connection, batchId, options);
  }

  /**
   * A page of batches, newest first, by state and owner; pass `nextPageToken` back as
   * `pageToken` for the next. An ended batch is listed until the server sweeps it
   * (`limits.batch_retention_ms`, 7 days). A key that is not admin lists only its own.
   */
  listBatches(
    query: BatchQuery & CallOptions = {},
  ): Promise<{ batches: BatchInfo[]; nextPageToken: string | null }> {
    return listBatchesCall(this.connection, query);
  }

  /**
   * Cancels every member of a batch that has not ended, as one act (admin key): waiting
   * and ready ones at once, running ones by telling their workers. A sealed batch then
   * ends (its onComplete runs) once its running members stopped.
   */
  cancelBatch(batchId: string, options: CallOptions = {}): Promise<WorkflowCancelled> {
    return cancelBatchCall(this.connection, batchId, options);
  }

  /** The flow of a job: every job connected to it through dependencies, either way, and the edges. */
  getFlow(jobId: string, options: CallOptions & { limit?: number } = {}): Promise<FlowGraph> {
    return getFlowCall(this.connection, jobId, options);
  }

  /** Cancels every job of a job's flow that has not ended, as one act (admin key). */
  cancelFlow(jobId: string, options: CallOptions = {}): Promise<WorkflowCancelled> {
    return cancelFlowCall(this.connection, jobId, options);
  }

  // ------------------------------------------------------------------ leases

  /**
   * Leases up to `maxJobs` jobs from `queues`, waiting up to `waitMs` for one
   * (a long poll; the call's deadline is the wait plus a margin). Resolves
   * with an empty list when the wait times out. Most applications use a
   * Worker instead.
   */
  async reserve(options: ReserveOptions): Promise<LeasedJob[]> {
    return (await reserveCall(this.connection, options)).map((job) => new LeasedJob(job));
  }

  /**
   * Completes a leased job, with `result` as its result (encoded as a
   * handler's return value is: see `JobResult`). Throws LeaseLostError when
   * the lease is no longer this one.
   */
  async ack(lease: LeaseRef, options: AckOptions = {}): Promise<void> {
    return ackCall(this.connection, lease, encodeResult(options.result), options);
  }

  /** Completes many leased jobs, each on its own (and with its `result`, if any): one outcome per lease, in order. */
  async ackBatch(acks: readonly AckSpec[], options: CallOptions = {}): Promise<AckResult[]> {
    const encoded = acks.map((lease) => ({ lease, result: encodeResult(lease.result) }));
    return ackBatchCall(this.connection, encoded, options);
  }

  /**
   * Reports how far along a leased job is: `percent` (0 to 100), a JSON
   * document `data`, or both (a Worker's handler uses `job.progress()`).
   * Resolves with the job's progress after it; LeaseLostError when the
   * lease is gone.
   */
  async reportProgress(
    lease: LeaseRef,
    progress: { percent?: number; data?: unknown },
    options: CallOptions = {},
  ): Promise<JobProgress | null> {
    const fields =
      progress.percent === undefined
        ? progressFields(progress.data)
        : progressFields(progress.percent, progress.data);
    return progressCall(this.connection, lease, fields, options);
  }

  /**
   * Fails an attempt: retry after the queue's backoff (default), after
   * `retryAfterMs`, or dead-letter now. Throws LeaseLostError when the lease
   * is no longer this one.
   */
  nack(lease: LeaseRef, options: NackOptions = {}): Promise<NackResult> {
    return nackCall(this.connection, lease, options);
  }

  /**
   * Pushes a lease's deadline to `leaseMs` from now (default: the queue's
   * default lease). Resolves with the new deadline; throws LeaseLostError when
   * the lease is gone.
   */
  extend(lease: LeaseRef, leaseMs?: number, options: CallOptions = {}): Promise<Date> {
    return extendCall(this.connection, lease, leaseMs, options);
  }

  /** Starts a Worker on this client (see WorkerOptions); `close()` closes it too. */
  worker(options: WorkerOptions): Worker {
    return new Worker(this, options);
  }

  /** @internal Workers register so that closing the client closes them first. */
  track(worker: Worker, running: boolean): void {
    if (running) this.workers.add(worker);
    else this.workers.delete(worker);
  }

  // ------------------------------------------------------------------ outcomes

  /**
   * Waits for a job to finish and resolves with how it ended: `completed`
   * (with its result), `dead` (with the dead letter's error) or `cancelled`
   * — also when it ended before the wait began, as long as the server still
   * keeps the job or its outcome event. Rejects with NOT_FOUND when it knows
   * neither, with DEADLINE_EXCEEDED after `timeoutMs`, CANCELLED when
   * `signal` aborts. Survives reconnects and server restarts.
   */
  waitFor(id: string, options: WaitOptions = {}): Promise<JobOutcome> {
    return waitForJob(this.connection, (jobId) => this.jobs.get(jobId), id, options);
  }

  /**
   * Enqueues a job (as `enqueue`) and waits for its outcome (as `waitFor`; a
   * duplicate waits for the original). The outcome is found even when the job
   * finishes at once on a queue that keeps no completed jobs.
   */
  async enqueueAndWait(
    queue: string,
    type: string,
    payload?: Payload,
    options: EnqueueOptions & WaitOptions = {},
  ): Promise<JobOutcome> {
    return this.thenWait(() => this.enqueue(queue, type, payload, options), options);
  }

  /** `enqueueAndWait` with a JSON payload (as `enqueueJson`). */
  async enqueueJsonAndWait(
    queue: string,
    type: string,
    value: unknown,
    options: EnqueueOptions & WaitOptions = {},
  ): Promise<JobOutcome> {
    return this.thenWait(() => this.enqueueJson(queue, type, value, options), options);
  }

  private thenWait(enqueue: () => Promise<Enqueued>, options: WaitOptions): Promise<JobOutcome> {
    return enqueueThenWait(this.connection, (id) => this.jobs.get(id), enqueue, options);
  }

  /**
   * Subscribes to job events (enqueued, leased, progress, completed with the
   * result, retry scheduled, dead-lettered, cancelled), in commit order:
   * `for await (const event of client.events({ queues: ['emails'] })) …`.
   * Resumes by itself after a disconnect; see EventSubscription.
   */
  events(options: EventsOptions = {}): EventSubscription {
    return new EventSubscription(this.connection, options);
  }

  // ------------------------------------------------------------------ the server

  /**
   * The workers connected now: id, address, transport, queues, when last seen, leases
   * held. Follows the server's pages (a worker connecting or leaving meanwhile may be
   * missed or shown, never shown twice).
   */
  async listWorkers(options: CallOptions = {}): Promise<WorkerInfo[]> {
    const workers: WorkerInfo[] = [];
    let pageToken = '';
    do {
      const page = await this.listWorkersPage({ ...options, pageToken });
      workers.push(...page.workers);
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    return workers;
  }

  /**
   * One page of the workers connected now, with the reserves (long-polls and Work
   * streams) waiting for jobs: pass `nextPageToken` back for the next page ('' on the last).
   */
  async listWorkersPage(options: WorkerPageOptions = {}): Promise<WorkerPage> {
    const response = await this.connection.invoke(
      this.connection.rpc.listWorkers,
      {
        pageSize: pageSizeArgument(options.pageSize),
        pageToken: options.pageToken ?? '',
      },
      retrySafe(options),
    );
    return {
      workers: response.workers.map(workerInfoFromProto),
      waitingReserves: response.waitingReserves,
      nextPageToken: response.nextPageToken,
    };
  }

  /** The server's version, durability mode, clock and every effective limit. */
  async getServerInfo(options: CallOptions = {}): Promise<ServerInfo> {
    const response = await this.connection.invoke(this.connection.rpc.getServerInfo, {}, retrySafe(options));
    return serverInfoFromProto(response);
  }

  /**
   * Makes the server read its config file again, as SIGHUP does (admin key); `dryRun` only reports.
   * A file that lowers security (no API keys, admin users, TLS or /metrics token where the running
   * configuration has them; a key's or user's role raised, a key's queues widened, `strict_queues`
   * turned off, a queue's `allowed_types` widened, a proxy range trusted) is refused unless
   * `allowSecurityDowngrade` is set, and even then where
   * the server listens on a non-loopback address without the matching `insecure_allow_unauthenticated`.
   * The report's `securityDowngrades` names what the file lowers, allowed or refused.
   */
  reloadConfig(
    options: CallOptions & { dryRun?: boolean; allowSecurityDowngrade?: boolean } = {},
  ): Promise<ReloadReport> {
    return reloadConfigCall(
      this.connection,
      { dryRun: options.dryRun ?? false, allowSecurityDowngrade: options.allowSecurityDowngrade ?? false },
      options,
    );
  }

  // ------------------------------------------------------------------ flat aliases
  // The methods of earlier versions, each the same call as its group's.

  /** Same as `client.jobs.get(id)`. */
  getJob(id: string, options: CallOptions = {}): Promise<Job> {
    return this.jobs.get(id, options);
  }

  /** Same as `client.jobs.cancel(id)`. */
  cancelJob(id: string, options: CallOptions = {}): Promise<CancelResult> {
    return this.jobs.cancel(id, options);
  }

  /** Same as `client.jobs.cancelMatching(filter, options)`: `dryRun` and `background` too. */
  cancelJobs(filter: JobFilter, options: BulkOptions = {}): Promise<CancelJobsResult> {
    return this.jobs.cancelMatching(filter, options);
  }

  /** Same as `client.jobs.update(id, changes)`. */
  updateJob(id: string, changes: JobChanges, options: CallOptions = {}): Promise<Job> {
    return this.jobs.update(id, changes, options);
  }

  /**
   * Same as `client.jobs.updateMatching(filter, changes, options)`: `dryRun`
   * and `background` too (then a `BulkResult`).
   */
  updateJobs(
    filter: JobFilter,
    changes: BulkChanges,
    options?: BulkOptions & { dryRun?: false; background?: false },
  ): Promise<number>;
  updateJobs(
    filter: JobFilter,
    changes: BulkChanges,
    options: BulkOptions & ({ dryRun: true } | { background: true }),
  ): Promise<BulkResult>;
  updateJobs(filter: JobFilter, changes: BulkChanges, options?: BulkOptions): Promise<number | BulkResult>;
  updateJobs(
    filter: JobFilter,
    changes: BulkChanges,
    options: BulkOptions = {},
  ): Promise<number | BulkResult> {
    return this.jobs.updateMatching(filter, changes, options);
  }

  /** Same as `client.queues.list()`. */
  listQueues(options: CallOptions = {}): Promise<QueueInfo[]> {
    return this.queues.list(options);
  }

  /** Same as `client.queues.pause(queue)`. */
  pauseQueue(queue: string, options: QueueActionOptions = {}): Promise<void> {
    return this.queues.pause(queue, options);
  }

  /** Same as `client.queues.resume(queue)`. */
  resumeQueue(queue: string, options: QueueActionOptions = {}): Promise<void> {
    return this.queues.resume(queue, options);
  }

  /** Same as `client.queues.delete(queue)`. */
  deleteQueue(queue: string, options: CallOptions = {}): Promise<void> {
    return this.queues.delete(queue, options);
  }

  /** Same as `client.queues.purge(queue, options)`: `background` too (then a `BulkResult`). */
  purgeQueue(queue: string, options?: PurgeOptions & { background?: false }): Promise<number>;
  purgeQueue(queue: string, options: PurgeOptions & { background: true }): Promise<BulkResult>;
  purgeQueue(queue: string, options?: PurgeOptions): Promise<number | BulkResult>;
  purgeQueue(queue: string, options: PurgeOptions = {}): Promise<number | BulkResult> {
    return this.queues.purge(queue, options);
  }

  /** Same as `client.queues.setSettings(queue, settings)`. */
  setQueueSettings(
    queue: string,
    settings: Readonly<Record<string, SettingInput>>,
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return this.queues.setSettings(queue, settings, options);
  }

  /** Same as `client.queues.resetSettings(queue, keys)`. */
  resetQueueSettings(
    queue: string,
    keys: readonly string[] | 'all',
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return this.queues.resetSettings(queue, keys, options);
  }

  /** Same as `client.dlq.list(queue, query)`. */
  listDeadLetters(
    queue: string,
    query: DeadLetterQuery = {},
  ): Promise<{ jobs: Job[]; nextPageToken: string | null }> {
    return this.dlq.list(queue, query);
  }

  /** Same as `client.dlq.all(queue, query)`. */
  deadLetters(queue: string, query: Omit<DeadLetterQuery, 'pageToken'> = {}): AsyncGenerator<Job> {
    return this.dlq.all(queue, query);
  }

  /**
   * Same as `client.dlq.requeue(queue, selection, options)`: `reason`,
   * `errorText` and `background` too (then a `BulkResult`).
   */
  requeueDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options?: DeadLetterChangeOptions & { background?: false },
  ): Promise<number>;
  requeueDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions & { background: true },
  ): Promise<BulkResult>;
  requeueDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options?: DeadLetterChangeOptions,
  ): Promise<number | BulkResult>;
  requeueDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions = {},
  ): Promise<number | BulkResult> {
    return this.dlq.requeue(queue, selection, options);
  }

  /**
   * Same as `client.dlq.delete(queue, selection, options)`: `reason`,
   * `errorText` and `background` too (then a `BulkResult`).
   */
  deleteDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options?: DeadLetterChangeOptions & { background?: false },
  ): Promise<number>;
  deleteDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions & { background: true },
  ): Promise<BulkResult>;
  deleteDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options?: DeadLetterChangeOptions,
  ): Promise<number | BulkResult>;
  deleteDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: DeadLetterChangeOptions = {},
  ): Promise<number | BulkResult> {
    return this.dlq.delete(queue, selection, options);
  }

  /** Same as `client.audit.list(query)`. */
  listAuditEntries(query: AuditQuery = {}): Promise<{ entries: AuditEntry[]; nextPageToken: string | null }> {
    return this.audit.list(query);
  }

  /** Same as `client.audit.entries(query)`. */
  auditEntries(query: Omit<AuditQuery, 'pageToken'> = {}): AsyncGenerator<AuditEntry, void, undefined> {
    return this.audit.entries(query);
  }

  // ------------------------------------------------------------------ closing

  /**
   * Closes Workers started with `worker()` (waiting for their jobs), sends
   * enqueues still queued and waits for their answers, then closes the
   * connection. Calls made afterwards fail.
   */
  async close(): Promise<void> {
    await Promise.all([...this.workers].map((w) => w.close()));
    await this.batcher.close();
    this.connection.close();
  }
}
