/**
 * SeppClient: every RPC of sepp.v1.QueueService as an async method with
 * friendly types. Enqueues are coalesced per event-loop turn and go over one
 * Produce stream (see enqueue-batcher.ts); everything else is a unary call
 * with a deadline.
 */
import { status } from '@grpc/grpc-js';
import {
  cancelJobCall,
  cancelJobsCall,
  changeDeadLettersCall,
  listAuditCall,
  listDeadLettersCall,
  purgeQueueCall,
  updateJobCall,
  updateJobsCall,
} from './admin-calls.ts';
import { ProduceStreamSender, UnaryBatchSender } from './batch-senders.ts';
import { Connection, type ConnectOptions } from './connection.ts';
import {
  jobFromArgs,
  jobFromJson,
  jobFromSpec,
  queueInfoFromProto,
  serverInfoFromProto,
  workerInfoFromProto,
} from './convert.ts';
import { EnqueueBatcher } from './enqueue-batcher.ts';
import { submitAtomic, submitBatch, submitOne } from './enqueue-calls.ts';
import { SeppError } from './errors.ts';
import { EventSubscription, type EventsOptions } from './events.ts';
import type { EnqueueJob } from './gen/sepp/v1/job.js';
import { Job, LeasedJob } from './jobs.ts';
import { ackBatchCall, ackCall, extendCall, nackCall, progressCall, reserveCall } from './lease-calls.ts';
import { encodeResult, type JobProgress, progressFields } from './results.ts';
import { Schedules } from './schedules.ts';
import {
  reloadConfigCall,
  resetQueueSettingsCall,
  type SettingInput,
  setQueueSettingsCall,
} from './settings-calls.ts';
import type {
  AckOptions,
  AckResult,
  AckSpec,
  AuditEntry,
  AuditQuery,
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
} from './types.ts';
import { enqueueThenWait, type JobOutcome, type WaitOptions, waitForJob } from './wait.ts';
import { Worker, type WorkerOptions } from './worker.ts';

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
  private readonly workers = new Set<Worker>();
  /** Schedules: periodic jobs the server enqueues itself (create, list, pause, trigger…). */
  readonly schedules: Schedules;

  private constructor(address: string, options: ConnectOptions) {
    this.connection = new Connection(address, options);
    this.schedules = new Schedules(this.connection);
    const unary = new UnaryBatchSender(this.connection);
    this.streamSender =
      this.connection.options.transport === 'stream'
        ? new ProduceStreamSender(this.connection, unary)
        : undefined;
    this.batcher = new EnqueueBatcher(this.connection, this.streamSender ?? unary);
  }

  /**
   * Creates a client for `address` (`host:port`). The connection is made
   * lazily by the first call; `ready()` waits for it explicitly.
   */
  static connect(address: string, options: ConnectOptions = {}): SeppClient {
    return new SeppClient(address, options);
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
    const deadline = this.connection.deadline(timeoutMs);
    return new Promise((resolve, reject) => {
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
   * job does not stop the others. Batches above the server's limit are split.
   */
  async enqueueBatch(jobs: readonly JobSpec[], options: CallOptions = {}): Promise<EnqueueOutcome[]> {
    return submitBatch(
      this.batcher,
      this.connection.options.maxBatchJobs,
      jobs.map(jobFromSpec),
      options.deadlineMs,
    );
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

  // ------------------------------------------------------------------ inspection and management

  /** Reads a job: state, attempts, timestamps, payload, last error and error history. Throws NOT_FOUND. */
  async getJob(id: string, options: CallOptions = {}): Promise<Job> {
    const response = await this.connection.invoke(
      this.connection.rpc.getJob,
      { jobId: id },
      readCall(options),
    );
    if (response.job === undefined) throw new SeppError(status.INTERNAL, 'the server sent no job');
    return new Job(response.job);
  }

  /**
   * Waits for a job to finish and resolves with how it ended: `completed`
   * (with its result), `dead` (with the dead letter's error) or `cancelled`
   * — also when it ended before the wait began, as long as the server still
   * keeps the job or its outcome event. Rejects with NOT_FOUND when it knows
   * neither, with DEADLINE_EXCEEDED after `timeoutMs`, CANCELLED when
   * `signal` aborts. Survives reconnects and server restarts.
   */
  waitFor(id: string, options: WaitOptions = {}): Promise<JobOutcome> {
    return waitForJob(this.connection, (jobId) => this.getJob(jobId), id, options);
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
    return enqueueThenWait(this.connection, (id) => this.getJob(id), enqueue, options);
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

  /**
   * Cancels a job that has not finished (admin key). A scheduled or ready job
   * is `cancelled` at once; for a leased one the worker is told to stop
   * (`state` stays `leased` until it does, or its lease ends) and the job ends
   * `cancelled`, never retried. Throws FAILED_PRECONDITION for a dead or
   * completed job. Repeating it is harmless.
   */
  cancelJob(id: string, options: CallOptions = {}): Promise<CancelResult> {
    return cancelJobCall(this.connection, id, options);
  }

  /**
   * Cancels every job of a queue that `filter` matches (default states:
   * scheduled, ready and leased), as `cancelJob` does one (admin key). With
   * `dryRun` nothing changes and `matched` counts the jobs it would change.
   */
  cancelJobs(filter: JobFilter, options: CallOptions & { dryRun?: boolean } = {}): Promise<CancelJobsResult> {
    return cancelJobsCall(this.connection, filter, options);
  }

  /**
   * Changes a scheduled or ready job: its priority, when it runs, or run it
   * now (admin key). Resolves with the job as it is now; a leased job is
   * refused with FAILED_PRECONDITION.
   */
  updateJob(id: string, changes: JobChanges, options: CallOptions = {}): Promise<Job> {
    return updateJobCall(this.connection, id, changes, options);
  }

  /**
   * Runs now (`runNow`) or sets the priority of every waiting job `filter`
   * matches (admin key); resolves with how many changed.
   */
  updateJobs(filter: JobFilter, changes: JobChanges, options: CallOptions = {}): Promise<number> {
    return updateJobsCall(this.connection, filter, changes, options);
  }

  /** Deletes every ready and scheduled job of a queue (admin key); resolves with how many. */
  purgeQueue(queue: string, options: CallOptions = {}): Promise<number> {
    return purgeQueueCall(this.connection, queue, options);
  }

  /** One page of the audit log, newest first (admin key). */
  listAuditEntries(query: AuditQuery = {}): Promise<{ entries: AuditEntry[]; nextPageToken: string | null }> {
    return listAuditCall(this.connection, query);
  }

  /**
   * Every matching entry of the audit log, newest first, fetched page by page
   * as the loop goes (admin key): `for await (const entry of client.auditEntries({ target: 'queue:emails' }))`.
   */
  async *auditEntries(
    query: Omit<AuditQuery, 'pageToken'> = {},
  ): AsyncGenerator<AuditEntry, void, undefined> {
    let pageToken: string | null = null;
    do {
      const page = await this.listAuditEntries(pageToken === null ? query : { ...query, pageToken });
      yield* page.entries;
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
  }

  /** Every queue with its counts by state, paused flag, oldest ready age and settings. */
  async listQueues(options: CallOptions = {}): Promise<QueueInfo[]> {
    const response = await this.connection.invoke(this.connection.rpc.listQueues, {}, readCall(options));
    return response.queues.map(queueInfoFromProto);
  }

  /** The workers connected now: id, address, transport, queues, when last seen, leases held. */
  async listWorkers(options: CallOptions = {}): Promise<WorkerInfo[]> {
    const response = await this.connection.invoke(this.connection.rpc.listWorkers, {}, readCall(options));
    return response.workers.map(workerInfoFromProto);
  }

  /**
   * Pauses a queue: it hands out no jobs until resumed; enqueue still works.
   * A queue nobody has used yet is NOT_FOUND unless `allowMissing` creates it.
   */
  async pauseQueue(queue: string, options: QueueActionOptions = {}): Promise<void> {
    const allowMissing = options.allowMissing === true;
    await this.connection.invoke(this.connection.rpc.pauseQueue, { queue, allowMissing }, readCall(options));
  }

  /** Resumes a paused queue; NOT_FOUND for a queue nobody has used yet, unless `allowMissing`. */
  async resumeQueue(queue: string, options: QueueActionOptions = {}): Promise<void> {
    const allowMissing = options.allowMissing === true;
    await this.connection.invoke(this.connection.rpc.resumeQueue, { queue, allowMissing }, readCall(options));
  }

  /** Deletes a queue that holds no job in any state (FAILED_PRECONDITION while it holds any). */
  async deleteQueue(queue: string, options: CallOptions = {}): Promise<void> {
    // A repeat after an unknown outcome finds nothing (NOT_FOUND) rather than deleting anything else.
    await this.connection.invoke(this.connection.rpc.deleteQueue, { queue }, readCall(options));
  }

  /** One page of a queue's dead letters, oldest first (payloads and error histories left out). */
  listDeadLetters(
    queue: string,
    query: DeadLetterQuery = {},
  ): Promise<{ jobs: Job[]; nextPageToken: string | null }> {
    return listDeadLettersCall(this.connection, queue, query);
  }

  /** Every dead letter of a queue, page by page. */
  async *deadLetters(queue: string, query: Omit<DeadLetterQuery, 'pageToken'> = {}): AsyncGenerator<Job> {
    let pageToken: string | null = null;
    do {
      const page: { jobs: Job[]; nextPageToken: string | null } = await this.listDeadLetters(queue, {
        ...query,
        ...(pageToken === null ? {} : { pageToken }),
      });
      yield* page.jobs;
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
  }

  /** Makes dead letters ready again with a fresh attempt budget; resolves with how many. */
  requeueDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: CallOptions = {},
  ): Promise<number> {
    return changeDeadLettersCall(this.connection, 'requeue', queue, selection, options);
  }

  /** Deletes dead letters for good (which frees their idempotency keys); resolves with how many. */
  deleteDeadLetters(
    queue: string,
    selection: DeadLetterSelection,
    options: CallOptions = {},
  ): Promise<number> {
    return changeDeadLettersCall(this.connection, 'delete', queue, selection, options);
  }

  /** The server's version, durability mode, clock and every effective limit. */
  async getServerInfo(options: CallOptions = {}): Promise<ServerInfo> {
    const response = await this.connection.invoke(this.connection.rpc.getServerInfo, {}, readCall(options));
    return serverInfoFromProto(response);
  }

  /**
   * Overrides settings of a queue while the server runs (admin role): by their
   * config-file names, with values written as in the file (`{ max_attempts: 10,
   * backoff_base_ms: '2s' }`). They apply from the next lease or enqueue and
   * survive restarts; resolves with the queue as it is afterwards.
   */
  setQueueSettings(
    queue: string,
    settings: Readonly<Record<string, SettingInput>>,
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return setQueueSettingsCall(this.connection, queue, settings, options);
  }

  /** Removes run-time overrides of a queue (named ones, or `all`): the config file's values apply again. */
  resetQueueSettings(
    queue: string,
    keys: readonly string[] | 'all',
    options: CallOptions = {},
  ): Promise<QueueInfo> {
    return resetQueueSettingsCall(this.connection, queue, keys, options);
  }

  /** Makes the server read its config file again, as SIGHUP does (admin role); `dryRun` only reports. */
  reloadConfig(options: CallOptions & { dryRun?: boolean } = {}): Promise<ReloadReport> {
    return reloadConfigCall(this.connection, options.dryRun ?? false, options);
  }

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

/** Calls that change nothing, or whose repeat has no further effect: safe to retry after UNAVAILABLE. */
function readCall(options: CallOptions) {
  return { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: true };
}
