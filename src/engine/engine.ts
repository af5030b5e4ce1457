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

import { counterMismatches } from '../store/counter-check.ts';
import {
  type BatchStats,
  GroupCommitter,
  isStorageFailure,
  type Transaction,
} from '../store/group-commit.ts';
import type { Db } from '../store/open.ts';
import { prepareStatements } from '../store/statements.ts';
import type { AuditEntry, AuditInput, AuditQuery, JobListQuery, JobSummary } from './admin-types.ts';
import { AuditLog } from './audit.ts';
import type { Clock } from './clock.ts';
import type { EngineContext } from './context.ts';
import { isRejection, type ValidJob, validateJob } from './enqueue-validation.ts';
import { type JobRejection, SeppError, toSeppError } from './errors.ts';
import { JobIdGenerator, type RandomBytes, systemRandomBytes } from './job-id.ts';
import { type DeadLetterSummaryQuery, JobQueries } from './job-queries.ts';
import { jobInfoFromRow } from './job-rows.ts';
import { Maintenance, type MaintenanceReport } from './maintenance.ts';
import { chunkRows, OperatorActions } from './operator-actions.ts';
import { QueueRegistry } from './queue-registry.ts';
import { Reserver } from './reserve.ts';
import type { EngineLimits, EngineOptions } from './settings.ts';
import { Settler } from './settle.ts';
import type {
  AtomicEnqueueResult,
  DeadLetterQuery,
  DeadLetterSelection,
  EnqueueAccepted,
  EnqueueRequest,
  EnqueueResult,
  ExtendRequest,
  JobEvent,
  JobInfo,
  JobState,
  LeasedJob,
  NackRequest,
  NackResult,
  Page,
  QueueInfo,
  ReserveRequest,
  Settle,
  SettleOutcome,
  StateCounts,
} from './types.ts';
import { jobStates } from './types.ts';
import { WaiterRegistry } from './waiters.ts';

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
}

const deadPageDefault = 100;
/** Pages copied per backup step: small enough that each step is a short pause for everything else. */
const backupPagesPerStep = 256;

export class Engine {
  private readonly ctx: EngineContext;
  private readonly ids: JobIdGenerator;
  private readonly reserver: Reserver;
  private readonly settler: Settler;
  private readonly maintenance: Maintenance;
  private readonly queries: JobQueries;
  private readonly audit: AuditLog;
  private readonly actions: OperatorActions;
  private closing = false;
  /** Set by drainWaiters(): reserves stop waiting, writes still work. */
  private draining = false;
  private backupRunning = false;

  constructor(
    db: Db,
    readonly options: EngineOptions,
    deps: EngineDeps,
  ) {
    const sql = prepareStatements(db);
    const queues = new QueueRegistry(options);
    const waiters = new WaiterRegistry();
    const writer = new GroupCommitter(db, {
      commitFailed: (cause) =>
        new SeppError('unavailable', `storage unavailable, nothing was written: ${describe(cause)}`, {
          cause,
        }),
      closed: shuttingDown,
      ...(deps.onBatch === undefined ? {} : { onBatch: deps.onBatch }),
      onHookError: (error) => deps.onHookError?.(toSeppError(error)),
      ...(deps.maxBatchOperations === undefined ? {} : { maxBatchOperations: deps.maxBatchOperations }),
    });
    let maintenance: Maintenance | undefined;
    this.ctx = {
      db,
      sql,
      clock: deps.clock,
      limits: options.limits,
      queues,
      waiters,
      writer,
      random: deps.random ?? Math.random,
      ensureQueue: (tx, queue) => {
        if (queues.exists(queue)) return;
        sql.insertQueue.run({
          name: queue,
          created_at_ms: deps.clock.nowMs(),
          settings_json: JSON.stringify(queues.settingsFor(queue)),
        });
        tx.afterCommit(() => queues.markExisting(queue, false));
      },
      jobsReady: (tx, queue, jobs) => {
        if (jobs > 0) tx.afterCommit(() => waiters.notify(queue, jobs));
      },
      wakeAt: (tx, atMs) => tx.afterCommit(() => maintenance?.wakeAt(atMs)),
      count: (queue, from, to, jobs) => {
        if (jobs === 0) return;
        if (from !== null) sql.adjustCount.run({ queue, state: from, delta: -jobs });
        if (to !== null) sql.adjustCount.run({ queue, state: to, delta: jobs });
      },
      emit: (tx, event) => {
        const onEvent = deps.onEvent;
        if (onEvent !== undefined && event.count > 0) tx.afterCommit(() => onEvent(event));
      },
    };
    this.ids = new JobIdGenerator(deps.randomBytes ?? systemRandomBytes);
    this.reserver = new Reserver(this.ctx);
    this.settler = new Settler(this.ctx);
    maintenance = new Maintenance(this.ctx, this.settler, deps.onMaintenanceError);
    this.maintenance = maintenance;
    this.queries = new JobQueries(this.ctx);
    this.audit = new AuditLog(this.ctx, this.queries.sql);
    this.actions = new OperatorActions(this.ctx, this.queries.sql, this.audit, (op) => this.write(op));
    this.loadQueues();
    this.maintenance.start();
  }

  get limits(): EngineLimits {
    return this.options.limits;
  }

  /** Reads queue flags into memory, creates declared queues, records effective settings for forensics. */
  private loadQueues(): void {
    const { sql, queues, clock, db } = this.ctx;
    db.transaction(() => {
      for (const name of queues.declaredNames()) {
        sql.insertQueue.run({ name, created_at_ms: clock.nowMs(), settings_json: '{}' });
      }
      for (const row of sql.allQueues.all()) {
        queues.markExisting(row.name, row.paused === 1);
        sql.updateQueueSettings.run({
          name: row.name,
          settings_json: JSON.stringify(queues.settingsFor(row.name)),
        });
      }
    })();
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
  async enqueueBatch(requests: readonly EnqueueRequest[], audit?: AuditInput): Promise<EnqueueResult[]> {
    this.checkBatchSize(requests.length);
    return this.write((tx) => {
      const nowMs = this.ctx.clock.nowMs();
      const added = new AddedJobs();
      const results = requests.map((request): EnqueueResult => {
        const job = validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
        if (isRejection(job)) return { ok: false, ...job };
        // A duplicate adds nothing, so a full queue still answers it with the original job.
        const duplicate = this.findDuplicate(job, nowMs);
        if (duplicate) return duplicate;
        const depthProblem = this.checkDepth(job, 1 + added.inQueue(job.queue));
        if (depthProblem) return { ok: false, ...depthProblem };
        return this.insert(tx, job, nowMs, added);
      });
      added.count(this.ctx);
      this.emitEnqueueEvents(tx, requests, results);
      if (audit !== undefined) this.auditEnqueue(audit, results);
      return results;
    });
  }

  private auditEnqueue(audit: AuditInput, results: readonly EnqueueResult[]): void {
    const [only] = results;
    if (results.length === 1 && only?.ok) {
      this.audit.write(audit, { jobId: only.jobId, deduplicated: only.deduplicated });
    } else if (results.some((r) => r.ok)) {
      const accepted = results.filter((r) => r.ok).length;
      this.audit.write(audit, { accepted, rejected: results.length - accepted });
    }
  }

  /** Enqueues every job or none: on any rejection, nothing is stored and every failing index is reported. */
  async enqueueAtomic(requests: readonly EnqueueRequest[]): Promise<AtomicEnqueueResult> {
    this.checkBatchSize(requests.length);
    return this.write((tx): AtomicEnqueueResult => {
      const nowMs = this.ctx.clock.nowMs();
      const rejections: (JobRejection & { index: number })[] = [];
      const valid: { index: number; job: ValidJob; adds: boolean }[] = [];
      // Jobs that add a row, per queue: duplicates (of stored jobs or of earlier jobs in this batch) add none.
      const perQueue = new Map<string, number>();
      const keysInBatch = new Set<string>();
      requests.forEach((request, index) => {
        const job = validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
        if (isRejection(job)) {
          rejections.push({ index, ...job });
          return;
        }
        let adds = this.findDuplicate(job, nowMs) === null;
        if (adds && job.idempotencyKey !== null && job.settings.dedupWindowMs > 0) {
          const key = `${job.queue}\0${job.idempotencyKey}`;
          adds = !keysInBatch.has(key);
          keysInBatch.add(key);
        }
        if (adds) perQueue.set(job.queue, (perQueue.get(job.queue) ?? 0) + 1);
        valid.push({ index, job, adds });
      });
      for (const { index, job, adds } of valid) {
        const depthProblem = adds ? this.checkDepth(job, perQueue.get(job.queue) ?? 1) : null;
        if (depthProblem) rejections.push({ index, ...depthProblem });
      }
      if (rejections.length > 0) {
        rejections.sort((a, b) => a.index - b.index);
        for (const r of rejections) {
          this.ctx.emit(tx, {
            kind: 'rejected',
            queue: String(requests[r.index]?.queue),
            reason: r.reason,
            count: 1,
          });
        }
        return { committed: false, rejections };
      }
      const added = new AddedJobs();
      const results = valid.map(
        ({ job }) => this.findDuplicate(job, nowMs) ?? this.insert(tx, job, nowMs, added),
      );
      added.count(this.ctx);
      this.emitEnqueueEvents(tx, requests, results);
      return { committed: true, results };
    });
  }

  /** One event per queue and outcome, not per job: batches stay cheap to report. */
  private emitEnqueueEvents(
    tx: Transaction,
    requests: readonly EnqueueRequest[],
    results: readonly EnqueueResult[],
  ): void {
    const tally = new Map<string, JobEvent>();
    results.forEach((result, i) => {
      const queue = String(requests[i]?.queue);
      const event: JobEvent = result.ok
        ? { kind: result.deduplicated ? 'deduplicated' : 'enqueued', queue, count: 0 }
        : { kind: 'rejected', queue, reason: result.reason, count: 0 };
      const key = `${event.kind}\0${queue}\0${result.ok ? '' : result.reason}`;
      const seen = tally.get(key) ?? event;
      seen.count++;
      tally.set(key, seen);
    });
    for (const event of tally.values()) this.ctx.emit(tx, event);
  }

  private checkBatchSize(jobs: number): void {
    const max = this.ctx.limits.maxBatchJobs;
    if (jobs === 0) throw new SeppError('invalid_argument', 'jobs: the batch is empty');
    if (jobs > max) {
      throw new SeppError(
        'resource_exhausted',
        `jobs: the batch has ${jobs} jobs, the limit is ${max} (limits.max_batch_jobs); split it`,
      );
    }
  }

  /** max_depth back-pressure: counts come from the maintained counters, including this batch's inserts. */
  private checkDepth(job: ValidJob, adding: number): JobRejection | null {
    const maxDepth = job.settings.maxDepth;
    if (maxDepth <= 0) return null;
    const depth = this.ctx.sql.queueDepth.get(job.queue) ?? 0;
    if (depth + adding <= maxDepth) return null;
    return {
      reason: 'queue_full',
      message: `queue ${job.queue} holds ${depth} unfinished jobs, its max_depth is ${maxDepth}; retry later`,
    };
  }

  /** The original job when `job`'s idempotency key was used within the queue's window. */
  private findDuplicate(job: ValidJob, nowMs: number): EnqueueAccepted | null {
    if (job.idempotencyKey === null) return null;
    const seen = this.ctx.sql.findIdempotencyKey.get(job.queue, job.idempotencyKey);
    if (seen === undefined || seen.expires_at_ms <= nowMs) return null;
    return { ok: true, jobId: seen.job_id, deduplicated: true };
  }

  /** Stores a new job; the caller has checked it is not a duplicate, and counts `added` once done. */
  private insert(tx: Transaction, job: ValidJob, nowMs: number, added: AddedJobs): EnqueueAccepted {
    const { sql } = this.ctx;
    this.ctx.ensureQueue(tx, job.queue);
    const id = this.ids.next(nowMs);
    const state = job.scheduled ? 'scheduled' : 'ready';
    added.add(job.queue, state);
    sql.insertJob.run({
      id,
      queue: job.queue,
      type: job.type,
      state,
      priority: job.priority,
      payload: job.payload,
      content_type: job.contentType,
      metadata_json: job.metadataJson,
      traceparent: job.traceparent,
      tracestate: job.tracestate,
      idempotency_key: job.idempotencyKey,
      max_attempts: job.maxAttempts,
      enqueued_at_ms: nowMs,
      run_at_ms: job.runAtMs,
    });
    if (job.idempotencyKey !== null && job.settings.dedupWindowMs > 0) {
      sql.putIdempotencyKey.run({
        queue: job.queue,
        key: job.idempotencyKey,
        job_id: id,
        expires_at_ms: nowMs + job.settings.dedupWindowMs,
      });
    }
    if (job.scheduled) this.ctx.wakeAt(tx, job.runAtMs);
    else this.ctx.jobsReady(tx, job.queue, 1);
    return { ok: true, jobId: id, deduplicated: false };
  }

  // ---------------------------------------------------------------- leases

  /** Leases up to `maxJobs` jobs, waiting up to `waitMs` for one; `signal` ends the wait early. */
  reserve(request: ReserveRequest, signal?: AbortSignal): Promise<LeasedJob[]> {
    if (this.closing) return Promise.reject(shuttingDown());
    return this.reserver.reserve(request, signal, () => this.closing || this.draining);
  }

  ack(settle: Settle): Promise<void> {
    return this.write((tx) => this.settler.ack(tx, settle));
  }

  /** Acks each job on its own: one outcome per job, in order. */
  async ackBatch(settles: readonly Settle[]): Promise<SettleOutcome[]> {
    if (settles.length > this.ctx.limits.maxReserveJobs) {
      throw new SeppError(
        'resource_exhausted',
        `acks: ${settles.length} in one batch, the limit is ${this.ctx.limits.maxReserveJobs} (limits.max_reserve_jobs)`,
      );
    }
    return this.write((tx) => settles.map((settle) => this.settler.tryAck(tx, settle)));
  }

  nack(request: NackRequest): Promise<NackResult> {
    return this.write((tx) => this.settler.nack(tx, request));
  }

  extend(request: ExtendRequest): Promise<{ leaseDeadlineMs: number }> {
    return this.write((tx) => this.settler.extend(tx, request));
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

  /** Removes a job that is not leased. */
  cancel(jobId: string, audit?: AuditInput): Promise<{ state: JobState }> {
    return this.write((tx) => {
      const row = this.ctx.sql.attemptById.get(jobId);
      if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
      if (row.state === 'leased') {
        throw new SeppError(
          'failed_precondition',
          `job ${jobId} is leased by a worker; it can be cancelled once the worker nacks it or its lease expires`,
        );
      }
      this.ctx.sql.deleteJob.run(row.seq);
      this.ctx.count(row.queue, row.state as JobState, null, 1);
      this.ctx.emit(tx, { kind: 'cancelled', queue: row.queue, count: 1 });
      if (audit !== undefined) this.audit.write(audit, { previousState: row.state });
      return { state: row.state as JobState };
    });
  }

  listQueues(): QueueInfo[] {
    this.checkOpen();
    const { sql, queues, waiters, clock } = this.ctx;
    const counts = new Map<string, StateCounts>();
    for (const row of sql.allCounts.all()) {
      let c = counts.get(row.queue);
      if (c === undefined) {
        c = emptyCounts();
        counts.set(row.queue, c);
      }
      c[row.state as JobState] = row.jobs;
    }
    const nowMs = clock.nowMs();
    return queues.names().map((name) => {
      const queueCounts = counts.get(name) ?? emptyCounts();
      return {
        name,
        paused: queues.isPaused(name),
        counts: queueCounts,
        oldestReadyAgeMs: queueCounts.ready > 0 ? this.oldestReadyAge(name, nowMs) : null,
        waitingWorkers: waiters.waitingOn(name),
        settings: queues.settingsFor(name),
      };
    });
  }

  /** The oldest due time among ready jobs: one index probe per priority, never a scan. */
  private oldestReadyAge(queue: string, nowMs: number): number | null {
    let oldest: number | null = null;
    for (let priority = 0; priority <= 9; priority++) {
      const runAtMs = this.ctx.sql.oldestReadyAtPriority.get(queue, priority) ?? null;
      if (runAtMs !== null && (oldest === null || runAtMs < oldest)) oldest = runAtMs;
    }
    return oldest === null ? null : Math.max(0, nowMs - oldest);
  }

  pauseQueue(queue: string, audit?: AuditInput): Promise<void> {
    return this.setPaused(queue, true, audit);
  }

  resumeQueue(queue: string, audit?: AuditInput): Promise<void> {
    return this.setPaused(queue, false, audit);
  }

  private async setPaused(queue: string, paused: boolean, audit: AuditInput | undefined): Promise<void> {
    this.checkQueueName(queue);
    return this.write((tx) => {
      this.ctx.ensureQueue(tx, queue);
      if (audit !== undefined) this.audit.write(audit, { wasPaused: this.ctx.queues.isPaused(queue) });
      this.ctx.sql.setQueuePaused.run({ name: queue, paused: paused ? 1 : 0 });
      tx.afterCommit(() => this.ctx.queues.markExisting(queue, paused));
      if (!paused) {
        const ready = this.ctx.sql.queueCounts.all(queue).find((c) => c.state === 'ready')?.jobs ?? 0;
        this.ctx.jobsReady(tx, queue, ready);
      }
    });
  }

  private checkQueueName(queue: string): void {
    const problem = validateJob(
      { queue, type: 'x', payload: new Uint8Array() },
      0,
      this.ctx.queues,
      this.ctx.limits,
    );
    if (isRejection(problem) && (problem.reason === 'invalid_name' || problem.reason === 'unknown_queue')) {
      throw new SeppError(
        problem.reason === 'unknown_queue' ? 'not_found' : 'invalid_argument',
        problem.message,
      );
    }
  }

  // ---------------------------------------------------------------- dead letters

  listDeadLetters(query: DeadLetterQuery): Page<JobInfo> {
    this.checkOpen();
    // A name no queue can have is a mistake to report, not an empty page.
    this.checkQueueName(query.queue);
    const pageSize = Math.min(query.pageSize ?? deadPageDefault, this.ctx.limits.maxPageSize);
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new SeppError(
        'invalid_argument',
        `page_size must be a positive integer (at most ${this.ctx.limits.maxPageSize})`,
      );
    }
    const after = decodeCursor(query.cursor);
    const params = {
      queue: query.queue,
      after_failed_at_ms: after.failedAtMs,
      after_seq: after.seq,
      limit: pageSize + 1,
    };
    const rows =
      query.reason === undefined
        ? this.ctx.sql.deadPage.all(params)
        : this.ctx.sql.deadPageByReason.all({ ...params, reason: query.reason });
    const items = rows.slice(0, pageSize).map(jobInfoFromRow);
    const last = items.at(-1);
    return {
      items,
      nextCursor: rows.length > pageSize && last ? encodeCursor(last.failedAtMs ?? 0, last.seq) : null,
    };
  }

  /** Puts dead letters back to ready with a fresh attempt budget; returns how many. */
  async requeueDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.changeDeadLetters(selection, 'requeue', audit);
  }

  /** Deletes dead letters; returns how many. */
  async deleteDeadLetters(selection: DeadLetterSelection, audit?: AuditInput): Promise<number> {
    return this.changeDeadLetters(selection, 'delete', audit);
  }

  private async changeDeadLetters(
    selection: DeadLetterSelection,
    action: 'requeue' | 'delete',
    audit: AuditInput | undefined,
  ): Promise<number> {
    const { sql } = this.ctx;
    const { queue } = selection;
    // A name no queue can have matches nothing, but it must not reach the audit log
    // (whose target is bounded) or look like a successful change of nothing.
    this.checkQueueName(queue);
    if ('jobIds' in selection) {
      if (selection.jobIds.length > this.ctx.limits.maxBatchJobs) {
        throw new SeppError(
          'resource_exhausted',
          `job_ids: at most ${this.ctx.limits.maxBatchJobs} per call`,
        );
      }
      return this.write((tx) => {
        let changed = 0;
        const nowMs = this.ctx.clock.nowMs();
        for (const id of selection.jobIds) {
          changed +=
            action === 'requeue'
              ? sql.requeueDeadById.run({ queue, id, now_ms: nowMs }).changes
              : sql.deleteDeadById.run({ queue, id }).changes;
        }
        this.ctx.count(queue, 'dead', action === 'requeue' ? 'ready' : null, changed);
        if (action === 'requeue') {
          this.ctx.jobsReady(tx, queue, changed);
          this.ctx.emit(tx, { kind: 'requeued', queue, count: changed });
        }
        if (audit !== undefined) this.audit.write(audit, { jobIds: selection.jobIds, changed });
        return changed;
      });
    }
    // All of a queue's dead letters (of one reason): in chunks, so one huge dead-letter
    // queue never makes one huge transaction.
    const { reason } = selection;
    const { sql: adminSql } = this.queries;
    return this.actions.inChunks(
      audit === undefined ? undefined : { input: audit, id: undefined },
      0,
      (tx) => {
        const nowMs = this.ctx.clock.nowMs();
        let n: number;
        if (action === 'requeue') {
          n = (
            reason === undefined
              ? sql.requeueDeadChunk.run({ queue, now_ms: nowMs, limit: chunkRows })
              : adminSql.requeueDeadChunkByReason.run({ queue, reason, now_ms: nowMs, limit: chunkRows })
          ).changes;
          this.ctx.count(queue, 'dead', 'ready', n);
          this.ctx.jobsReady(tx, queue, n);
          this.ctx.emit(tx, { kind: 'requeued', queue, count: n });
        } else {
          n = (
            reason === undefined
              ? sql.deleteDeadChunk.run({ queue, limit: chunkRows })
              : adminSql.deleteDeadChunkByReason.run({ queue, reason, limit: chunkRows })
          ).changes;
          this.ctx.count(queue, 'dead', null, n);
        }
        return n;
      },
      (changed, done) => ({ all: true, ...(reason === undefined ? {} : { reason }), changed, done }),
    );
  }

  // ---------------------------------------------------------------- operators (admin UI and API)

  /** One page of a queue's jobs in one state, in enqueue order; `total` is the state's count when no type filter is given. */
  listJobs(query: JobListQuery): Page<JobSummary> & { total: number | null } {
    return this.queries.listJobs(query);
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

  /** A dead or completed job back to ready now, with a fresh attempt budget. */
  requeueJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.actions.requeueJob(jobId, audit);
  }

  /** A ready or scheduled job to the dead letters now (reason `dead_lettered`). */
  deadLetterJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.actions.deadLetterJob(jobId, audit);
  }

  /** Deletes every ready and scheduled job of a queue, in chunks; leased jobs finish normally. */
  purgeQueue(queue: string, audit?: AuditInput): Promise<{ deleted: number }> {
    this.checkQueueName(queue);
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
    if (this.closing) throw new SeppError('unavailable', 'sepp is shutting down');
    if (this.backupRunning)
      throw new SeppError('resource_exhausted', 'a backup is already running; try again when it ends');
    this.backupRunning = true;
    try {
      await this.ctx.db.backup(destinationPath, {
        progress: ({ totalPages, remainingPages }) => {
          onProgress?.(totalPages - remainingPages, totalPages);
          return backupPagesPerStep;
        },
      });
    } catch (error) {
      throw isStorageFailure(error)
        ? new SeppError('unavailable', `backup failed: ${describe(error)}`, { cause: error })
        : toSeppError(error);
    } finally {
      this.backupRunning = false;
    }
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
    this.ctx.waiters.settleAll('closed');
    this.ctx.writer.close();
    try {
      this.ctx.sql.walCheckpoint.run();
    } catch (error) {
      if (!isStorageFailure(error)) throw error;
    }
    this.ctx.db.close();
  }
}

function shuttingDown(): SeppError {
  return new SeppError('unavailable', 'sepp is shutting down');
}

function emptyCounts(): StateCounts {
  return Object.fromEntries(jobStates.map((s) => [s, 0])) as StateCounts;
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

function encodeCursor(failedAtMs: number, seq: number): string {
  return Buffer.from(`${failedAtMs}:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string | undefined): { failedAtMs: number; seq: number } {
  if (cursor === undefined || cursor === '') return { failedAtMs: -1, seq: -1 };
  const match = /^(\d+):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) throw new SeppError('invalid_argument', 'page_token is not one this server issued');
  return { failedAtMs: Number(match[1]), seq: Number(match[2]) };
}

/** New jobs of one operation, per queue and state: counted once at its end. */
class AddedJobs {
  private readonly jobs = new Map<string, { ready: number; scheduled: number }>();

  add(queue: string, state: 'ready' | 'scheduled'): void {
    let perState = this.jobs.get(queue);
    if (perState === undefined) {
      perState = { ready: 0, scheduled: 0 };
      this.jobs.set(queue, perState);
    }
    perState[state]++;
  }

  /** Jobs added to `queue` so far (not yet in its counts). */
  inQueue(queue: string): number {
    const perState = this.jobs.get(queue);
    return perState === undefined ? 0 : perState.ready + perState.scheduled;
  }

  count(ctx: EngineContext): void {
    for (const [queue, perState] of this.jobs) {
      ctx.count(queue, null, 'ready', perState.ready);
      ctx.count(queue, null, 'scheduled', perState.scheduled);
    }
  }
}
