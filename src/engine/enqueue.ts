/**
 * Enqueue: validation, idempotency, max_depth back-pressure and the insert,
 * for one job, a best-effort batch or an all-or-nothing batch. Each call is
 * one write operation; its results are answered after the commit is durable.
 */

import { prepareJobInserts } from '../store/sqlite/batch-statements.ts';
import type { Transaction } from '../store/sqlite/group-commit.ts';
import type { MultiRowStatement } from '../store/sqlite/multi-row.ts';
import type { InsertJobParams } from '../store/sqlite/statements.ts';
import type { AuditInput } from './admin-types.ts';
import type { AuditLog } from './audit.ts';
import type { EngineContext, Write } from './context.ts';
import type { DiskFull } from './disk-full.ts';
import { isRejection, type ValidJob, validateJob } from './enqueue-validation.ts';
import { type JobRejection, SeppError } from './errors.ts';
import { IdempotencyKeys } from './idempotency.ts';
import type { JobIdGenerator } from './job-id.ts';
import type {
  AtomicEnqueueResult,
  EnqueueAccepted,
  EnqueueRequest,
  EnqueueResult,
  JobEvent,
} from './types.ts';

export class Enqueuer {
  private readonly inserts: MultiRowStatement<InsertJobParams, never>;
  private readonly keys: IdempotencyKeys;

  constructor(
    private readonly ctx: EngineContext,
    private readonly ids: JobIdGenerator,
    private readonly audit: AuditLog,
    private readonly write: Write,
    /** Refuses enqueues while the disk is full (a schedule's ticks are not refused: enqueueWithin). */
    private readonly diskFull: DiskFull,
  ) {
    this.inserts = prepareJobInserts(ctx.db);
    this.keys = new IdempotencyKeys(ctx);
  }

  /** Enqueues one job; a rejection is thrown as a SeppError carrying it. */
  async enqueue(request: EnqueueRequest, audit?: AuditInput): Promise<EnqueueAccepted> {
    const [result] = await this.enqueueBatch([request], audit);
    if (result === undefined) throw new SeppError('internal', 'enqueue returned no result');
    if (!result.ok) throw SeppError.rejected(result);
    return result;
  }

  /** Enqueues each job on its own merits: one result per job, in order. */
  async enqueueBatch(requests: readonly EnqueueRequest[], audit?: AuditInput): Promise<EnqueueResult[]> {
    this.checkRoom();
    this.checkBatchSize(requests.length);
    return this.write((tx) => this.enqueueWithin(tx, requests, audit));
  }

  /**
   * enqueueBatch inside a write operation that is already running: a schedule's
   * tick enqueues its job in the same transaction as the advance of its cursor.
   */
  enqueueWithin(tx: Transaction, requests: readonly EnqueueRequest[], audit?: AuditInput): EnqueueResult[] {
    const nowMs = this.ctx.clock.nowMs();
    const added = new AddedJobs();
    const results = requests.map((request): EnqueueResult => {
      const job = validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
      if (isRejection(job)) return { ok: false, ...job };
      // A duplicate adds nothing, so a full queue still answers it with the original job.
      const duplicate = this.findDuplicate(job, nowMs, added);
      if (duplicate) return duplicate;
      const depthProblem = this.checkDepth(job, 1 + added.inQueue(job.queue));
      if (depthProblem) return { ok: false, ...depthProblem };
      return this.insert(tx, job, nowMs, added);
    });
    added.store(tx, this.ctx, this.inserts);
    this.emitEnqueueEvents(tx, requests, results);
    if (audit !== undefined) this.auditEnqueue(audit, results);
    return results;
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
    this.checkRoom();
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
        if (adds && IdempotencyKeys.dedupsWithinBatch(job)) {
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
        ({ job }) => this.findDuplicate(job, nowMs, added) ?? this.insert(tx, job, nowMs, added),
      );
      added.store(tx, this.ctx, this.inserts);
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

  /** While the disk is full, enqueues are refused (disk-full.ts); leases and acks go on. */
  private checkRoom(): void {
    const refusal = this.diskFull.enqueueRefusal();
    if (refusal !== null) throw refusal;
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

  /** The original job when `job`'s idempotency key is taken (see idempotency.ts). */
  private findDuplicate(job: ValidJob, nowMs: number, added?: AddedJobs): EnqueueAccepted | null {
    if (job.idempotencyKey === null) return null;
    // The lookup (unique-while-active keys read the jobs table) must see this batch's earlier jobs: store them first.
    added?.insertPending(this.inserts);
    const original = this.keys.duplicateOf(job, nowMs);
    return original === null ? null : { ok: true, jobId: original, deduplicated: true };
  }

  /** Adds a new job to `added`; the caller has checked it is not a duplicate, and stores `added` once done. */
  private insert(tx: Transaction, job: ValidJob, nowMs: number, added: AddedJobs): EnqueueAccepted {
    this.ctx.ensureQueue(tx, job.queue);
    const id = this.ids.next(nowMs);
    const state = job.scheduled ? 'scheduled' : 'ready';
    added.add({
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
      lease_ms: job.leaseMs,
      enqueued_at_ms: nowMs,
      run_at_ms: job.runAtMs,
      expires_at_ms: job.expiresAtMs,
      group_key: job.group,
    });
    if (job.group !== null) this.ctx.flow.groupedJobAdded(job.queue);
    this.keys.record(job, id, nowMs);
    if (job.scheduled) this.ctx.wakeAt(tx, job.runAtMs);
    if (job.expiresAtMs !== null) this.ctx.wakeAt(tx, job.expiresAtMs);
    if (this.ctx.events.recording) {
      this.ctx.record(tx, {
        kind: 'enqueued',
        sequence: 0,
        atMs: nowMs,
        jobId: id,
        queue: job.queue,
        type: job.type,
        attempt: 0,
        state,
        runAtMs: job.runAtMs,
        priority: job.priority,
      });
    }
    return { ok: true, jobId: id, deduplicated: false };
  }
}

/** New jobs of one operation: inserted, counted per queue and state, and handed to waiters once at its end. */
class AddedJobs {
  /** Added but not inserted yet. */
  private readonly rows: InsertJobParams[] = [];
  private readonly jobs = new Map<string, { ready: number; scheduled: number }>();

  add(row: InsertJobParams): void {
    this.rows.push(row);
    let perState = this.jobs.get(row.queue);
    if (perState === undefined) {
      perState = { ready: 0, scheduled: 0 };
      this.jobs.set(row.queue, perState);
    }
    perState[row.state]++;
  }

  /** Jobs added to `queue` so far (not yet in its counts). */
  inQueue(queue: string): number {
    const perState = this.jobs.get(queue);
    return perState === undefined ? 0 : perState.ready + perState.scheduled;
  }

  /** Inserts the jobs added so far (in order) and forgets them. */
  insertPending(inserts: MultiRowStatement<InsertJobParams, never>): void {
    if (this.rows.length === 0) return;
    inserts.run(this.rows);
    this.rows.length = 0;
  }

  store(tx: Transaction, ctx: EngineContext, inserts: MultiRowStatement<InsertJobParams, never>): void {
    this.insertPending(inserts);
    for (const [queue, perState] of this.jobs) {
      ctx.count(queue, null, 'ready', perState.ready);
      ctx.count(queue, null, 'scheduled', perState.scheduled);
      ctx.jobsReady(tx, queue, perState.ready);
    }
  }
}
