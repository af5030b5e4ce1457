/**
 * Enqueue: validation, idempotency, max_depth back-pressure and the insert,
 * for one job, a best-effort batch or an all-or-nothing batch. Each call is
 * one write operation; its results are answered after the commit is durable.
 */

import type { Op } from '../../store/op.ts';
import type { NewJobRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { type DependencyEdges, type DependencyQueues, dependencyEdges } from '../dependencies/index.ts';
import { type JobRejection, SeppError } from '../errors.ts';
import type { FlowControl } from '../flow-control/index.ts';
import type {
  AtomicEnqueueResult,
  EnqueueAccepted,
  EnqueueRequest,
  EnqueueResult,
  FlowJob,
  FlowResult,
  JobEvent,
} from '../types.ts';
import type { DiskFull } from './disk-full.ts';
import { isRejection, type ValidJob, validateJob } from './enqueue-validation.ts';
import { checkFlowShape, type FlowOrder } from './flow-shape.ts';
import { IdempotencyKeys } from './idempotency.ts';
import type { JobIdGenerator } from './job-id.ts';

export class Enqueuer {
  private readonly keys: IdempotencyKeys;

  constructor(
    private readonly ctx: EngineContext,
    /** Marks a queue's first group (its leases take turns from then on). */
    private readonly flow: FlowControl,
    private readonly ids: JobIdGenerator,
    private readonly audit: AuditLog,
    /** Refuses enqueues while the disk is full (a schedule's ticks are not refused: enqueueWithin). */
    private readonly diskFull: DiskFull,
    /** Marks the queues of jobs with dependencies (their leases pass results on). */
    private readonly dependencyQueues: DependencyQueues,
  ) {
    this.keys = new IdempotencyKeys();
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
    return this.ctx.write((tx) => this.enqueueWithin(tx, requests, audit));
  }

  /**
   * enqueueBatch inside a write operation that is already running: a schedule's
   * tick enqueues its job in the same transaction as the advance of its cursor.
   */
  *enqueueWithin(tx: StoreTx, requests: readonly EnqueueRequest[], audit?: AuditInput): Op<EnqueueResult[]> {
    const nowMs = this.ctx.clock.nowMs();
    const added = new AddedJobs(this.flow, this.dependencyQueues);
    const results: EnqueueResult[] = [];
    // One loop, no generator per job: a job without a key or a max_depth makes no store call here.
    for (const request of requests) {
      const job = validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
      if (isRejection(job)) {
        results.push({ ok: false, ...job });
        continue;
      }
      // A duplicate adds nothing, so a full queue still answers it with the original job.
      if (job.idempotencyKey !== null) {
        const duplicate = yield* this.findDuplicate(tx, job, nowMs, added);
        if (duplicate !== null) {
          results.push(duplicate);
          continue;
        }
      }
      if (job.settings.maxDepth > 0) {
        const depthProblem = yield* this.checkDepth(tx, job, 1 + added.inQueue(job.queue));
        if (depthProblem !== null) {
          results.push({ ok: false, ...depthProblem });
          continue;
        }
      }
      let edges: DependencyEdges | null = null;
      if (job.dependencies !== null) {
        const checked = yield* dependencyEdges(tx, this.ctx.store.kind, job.dependencies);
        if ('reason' in checked) {
          results.push({ ok: false, ...checked });
          continue;
        }
        edges = checked;
      }
      if (!this.ctx.queues.exists(job.queue)) {
        const refusal = this.ctx.newQueueRefusal(job.queue);
        if (refusal !== null) {
          results.push({ ok: false, ...refusal });
          continue;
        }
        yield* this.ctx.ensureQueue(tx, job.queue);
      }
      results.push(this.insert(tx, job, nowMs, added, edges));
    }
    yield* added.store(tx, this.ctx);
    this.emitEnqueueEvents(tx, requests, results);
    if (audit !== undefined) yield* this.auditEnqueue(tx, audit, results);
    return results;
  }

  private *auditEnqueue(tx: StoreTx, audit: AuditInput, results: readonly EnqueueResult[]): Op<void> {
    const [only] = results;
    if (results.length === 1 && only?.ok) {
      yield* this.audit.write(tx, audit, { jobId: only.jobId, deduplicated: only.deduplicated });
    } else if (results.some((r) => r.ok)) {
      const accepted = results.filter((r) => r.ok).length;
      yield* this.audit.write(tx, audit, { accepted, rejected: results.length - accepted });
    }
  }

  /** Enqueues every job or none: on any rejection, nothing is stored and every failing index is reported. */
  async enqueueAtomic(requests: readonly EnqueueRequest[]): Promise<AtomicEnqueueResult> {
    this.checkRoom();
    this.checkBatchSize(requests.length);
    return this.ctx.write((tx) => this.enqueueAllOrNone(tx, requests));
  }

  private *enqueueAllOrNone(tx: StoreTx, requests: readonly EnqueueRequest[]): Op<AtomicEnqueueResult> {
    const nowMs = this.ctx.clock.nowMs();
    const rejections: (JobRejection & { index: number })[] = [];
    const valid: { index: number; job: ValidJob; adds: boolean; edges: DependencyEdges | null }[] = [];
    // Jobs that add a row, per queue: duplicates (of stored jobs or of earlier jobs in this batch) add none.
    const perQueue = new Map<string, number>();
    const newQueues = new Set<string>();
    const keysInBatch = new Set<string>();
    for (const [index, request] of requests.entries()) {
      const job = validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
      if (isRejection(job)) {
        rejections.push({ index, ...job });
        continue;
      }
      let adds = job.idempotencyKey === null || (yield* this.findDuplicate(tx, job, nowMs)) === null;
      if (adds && IdempotencyKeys.dedupsWithinBatch(job)) {
        const key = `${job.queue}\0${job.idempotencyKey}`;
        adds = !keysInBatch.has(key);
        keysInBatch.add(key);
      }
      let edges: DependencyEdges | null = null;
      if (adds && job.dependencies !== null) {
        const checked = yield* dependencyEdges(tx, this.ctx.store.kind, job.dependencies);
        if ('reason' in checked) {
          rejections.push({ index, ...checked });
          continue;
        }
        edges = checked;
      }
      if (adds) perQueue.set(job.queue, (perQueue.get(job.queue) ?? 0) + 1);
      if (!this.ctx.queues.exists(job.queue) && !newQueues.has(job.queue)) {
        // Counted as if the earlier new queues of this batch existed: all or nothing.
        const refusal = this.ctx.newQueueRefusal(job.queue, newQueues.size);
        if (refusal !== null) {
          rejections.push({ index, ...refusal });
          continue;
        }
        newQueues.add(job.queue);
      }
      valid.push({ index, job, adds, edges });
    }
    for (const { index, job, adds } of valid) {
      const depthProblem =
        adds && job.settings.maxDepth > 0
          ? yield* this.checkDepth(tx, job, perQueue.get(job.queue) ?? 1)
          : null;
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
    const added = new AddedJobs(this.flow, this.dependencyQueues);
    const results: EnqueueAccepted[] = [];
    for (const { job, edges } of valid) {
      const duplicate = job.idempotencyKey === null ? null : yield* this.findDuplicate(tx, job, nowMs, added);
      if (duplicate !== null) {
        results.push(duplicate);
        continue;
      }
      if (!this.ctx.queues.exists(job.queue)) yield* this.ctx.ensureQueue(tx, job.queue);
      results.push(this.insert(tx, job, nowMs, added, edges));
    }
    yield* added.store(tx, this.ctx);
    this.emitEnqueueEvents(tx, requests, results);
    return { committed: true, results };
  }

  /**
   * A flow: every job or none, each stored after the jobs of the request it runs after
   * (flow-shape.ts), its edges written with it. A job whose idempotency key is taken
   * is not stored again, and what runs after it waits on the original job.
   */
  async enqueueFlow(jobs: readonly FlowJob[]): Promise<FlowResult> {
    this.checkRoom();
    const shape = checkFlowShape(jobs, this.ctx.limits);
    return this.ctx.write((tx) => this.enqueueFlowIn(tx, jobs, shape));
  }

  private *enqueueFlowIn(
    tx: StoreTx,
    jobs: readonly FlowJob[],
    { order, parents }: FlowOrder,
  ): Op<FlowResult> {
    const nowMs = this.ctx.clock.nowMs();
    const rejections: (JobRejection & { index: number })[] = [];
    const valid: ValidJob[] = [];
    const byIdEdges: (DependencyEdges | null)[] = [];
    const perQueue = new Map<string, number>();
    const newQueues = new Set<string>();
    if (tx.dependencies === undefined && parents.some((own) => own.length > 0)) {
      throw new SeppError(
        'failed_precondition',
        `the ${this.ctx.store.kind} store keeps no job dependencies: a flow's jobs cannot run after each other`,
      );
    }
    for (const [index, request] of jobs.entries()) {
      const job = validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
      if (isRejection(job)) {
        rejections.push({ index, ...job });
        continue;
      }
      valid[index] = job;
      byIdEdges[index] = null;
      if (job.dependencies !== null) {
        const checked = yield* dependencyEdges(tx, this.ctx.store.kind, job.dependencies);
        if ('reason' in checked) rejections.push({ index, ...checked });
        else byIdEdges[index] = checked;
      }
      // Every job counts towards max_depth, a duplicate too: a flow is refused rather than half-checked.
      perQueue.set(job.queue, (perQueue.get(job.queue) ?? 0) + 1);
      if (!this.ctx.queues.exists(job.queue) && !newQueues.has(job.queue)) {
        const refusal = this.ctx.newQueueRefusal(job.queue, newQueues.size);
        if (refusal !== null) rejections.push({ index, ...refusal });
        else newQueues.add(job.queue);
      }
    }
    const depthChecked = new Set<string>();
    for (const [index, job] of valid.entries()) {
      if (job === undefined || depthChecked.has(job.queue)) continue;
      depthChecked.add(job.queue);
      const depthProblem = yield* this.checkDepth(tx, job, perQueue.get(job.queue) ?? 1);
      if (depthProblem) rejections.push({ index, ...depthProblem });
    }
    if (rejections.length > 0) {
      rejections.sort((a, b) => a.index - b.index);
      for (const r of rejections) {
        this.ctx.emit(tx, {
          kind: 'rejected',
          queue: String(jobs[r.index]?.queue),
          reason: r.reason,
          count: 1,
        });
      }
      return { committed: false, rejections };
    }
    const added = new AddedJobs(this.flow, this.dependencyQueues);
    const results: EnqueueAccepted[] = [];
    /** Each stored job's id, and whether it is new in this flow. */
    const stored: { id: string; fresh: boolean }[] = [];
    for (const index of order) {
      const job = valid[index]!;
      const duplicate = job.idempotencyKey === null ? null : yield* this.findDuplicate(tx, job, nowMs, added);
      if (duplicate !== null) {
        results[index] = duplicate;
        stored[index] = { id: duplicate.jobId, fresh: false };
        continue;
      }
      const edges = yield* this.flowEdges(tx, jobs, index, parents[index]!, stored, byIdEdges[index] ?? null);
      if (!this.ctx.queues.exists(job.queue)) yield* this.ctx.ensureQueue(tx, job.queue);
      const accepted = this.insert(tx, job, nowMs, added, edges);
      results[index] = accepted;
      stored[index] = { id: accepted.jobId, fresh: true };
    }
    yield* added.store(tx, this.ctx);
    this.emitEnqueueEvents(tx, jobs, results);
    return {
      committed: true,
      jobs: results.map((r, i) => ({ name: jobs[i]!.name, jobId: r.jobId, deduplicated: r.deduplicated })),
    };
  }

  /**
   * A flow job's edges: to the stored jobs it names by id (checked already), to the jobs
   * of the flow stored just now (pending), and to the original jobs of the flow's
   * duplicates (checked as stored jobs: one may have failed). A failed one under the
   * `cancel` policy refuses the whole flow (the unit is rolled back).
   */
  private *flowEdges(
    tx: StoreTx,
    jobs: readonly FlowJob[],
    index: number,
    localParents: readonly number[],
    stored: readonly { id: string; fresh: boolean }[],
    byId: DependencyEdges | null,
  ): Op<DependencyEdges | null> {
    if (localParents.length === 0) return byId;
    const policy = byId?.policy ?? jobs[index]!.onDependencyFailure ?? 'cancel';
    const edges: DependencyEdges = { policy, edges: [...(byId?.edges ?? [])], pending: byId?.pending ?? 0 };
    const originals: string[] = [];
    for (const parent of localParents) {
      const { id, fresh } = stored[parent]!;
      if (!fresh) originals.push(id);
      else if (!edges.edges.some((e) => e.parentId === id)) {
        edges.edges.push({ parentId: id, state: 'pending', name: jobs[parent]!.name });
        edges.pending++;
      }
    }
    const unique = originals.filter(
      (id, i) => originals.indexOf(id) === i && !edges.edges.some((e) => e.parentId === id),
    );
    if (unique.length > 0) {
      const checked = yield* dependencyEdges(tx, this.ctx.store.kind, { ids: unique, policy });
      if ('reason' in checked) {
        throw SeppError.rejected({
          ...checked,
          message: `jobs[${index}] (${jobs[index]!.name}): ${checked.message}`,
        });
      }
      for (const edge of checked.edges) {
        const local = localParents.find((p) => stored[p]!.id === edge.parentId);
        edges.edges.push(local === undefined ? edge : { ...edge, name: jobs[local]!.name });
      }
      edges.pending += checked.pending;
    }
    return edges;
  }

  /** One event per queue and outcome, not per job: batches stay cheap to report. */
  private emitEnqueueEvents(
    tx: StoreTx,
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

  /** max_depth back-pressure (a queue with a max_depth): the maintained counts, including this batch's inserts. */
  private *checkDepth(tx: StoreTx, job: ValidJob, adding: number): Op<JobRejection | null> {
    const maxDepth = job.settings.maxDepth;
    if (maxDepth <= 0) return null;
    const depth = yield* tx.counts.unfinished(job.queue);
    if (depth + adding <= maxDepth) return null;
    return {
      reason: 'queue_full',
      message: `queue ${job.queue} holds ${depth} unfinished jobs, its max_depth is ${maxDepth}; retry later`,
    };
  }

  /** The original job when `job`'s idempotency key (it has one) is taken (see idempotency.ts). */
  private *findDuplicate(
    tx: StoreTx,
    job: ValidJob,
    nowMs: number,
    added?: AddedJobs,
  ): Op<EnqueueAccepted | null> {
    // The lookup (unique-while-active keys read the jobs table) must see this batch's earlier jobs: store them first.
    if (added !== undefined) yield* added.insertPending(tx);
    const original = yield* this.keys.duplicateOf(tx, job, nowMs);
    return original === null ? null : { ok: true, jobId: original, deduplicated: true };
  }

  /**
   * Adds a new job to `added` (its queue exists in this transaction); the caller has checked
   * it is not a duplicate, and stores `added` once done. Keys are remembered with the rows.
   */
  private insert(
    tx: StoreTx,
    job: ValidJob,
    nowMs: number,
    added: AddedJobs,
    edges: DependencyEdges | null,
  ): EnqueueAccepted {
    const id = this.ids.next(nowMs);
    const waiting = edges !== null && edges.pending > 0;
    const state = waiting ? 'waiting' : job.scheduled ? 'scheduled' : 'ready';
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
      timeout_ms: job.timeoutMs,
      enqueued_at_ms: nowMs,
      run_at_ms: job.runAtMs,
      expires_at_ms: job.expiresAtMs,
      group_key: job.group,
    });
    if (job.group !== null) added.grouped(job.queue);
    if (IdempotencyKeys.remembers(job)) added.remember(job, id, nowMs);
    if (edges !== null) added.depend(id, job.queue, edges);
    if (job.scheduled && !waiting) this.ctx.wakeAt(tx, job.runAtMs);
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

/**
 * New jobs of one operation: stored, counted per queue and state, and handed to
 * waiters once at its end. What goes with them (their idempotency keys, the mark
 * of a queue's first group) is stored with them, so a job costs no store call of
 * its own: the rows go in statements of many (jobs.insert).
 */
class AddedJobs {
  /** Added but not stored yet. */
  private rows: NewJobRow[] = [];
  private keys: { queue: string; key: string; jobId: string; expiresAtMs: number }[] | undefined;
  private groupedQueues: Set<string> | undefined;
  /** The dependency edges of added jobs that named depends_on (stored after their rows). */
  private dependencies: { childId: string; queue: string; edges: DependencyEdges }[] | undefined;
  private readonly jobs = new Map<string, { ready: number; scheduled: number; waiting: number }>();

  constructor(
    private readonly flow: FlowControl,
    private readonly dependencyQueues: DependencyQueues,
  ) {}

  add(row: NewJobRow): void {
    this.rows.push(row);
    let perState = this.jobs.get(row.queue);
    if (perState === undefined) {
      perState = { ready: 0, scheduled: 0, waiting: 0 };
      this.jobs.set(row.queue, perState);
    }
    perState[row.state]++;
  }

  /** Remembers a new job's key for the queue's dedup window, with the job. */
  remember(job: ValidJob, jobId: string, nowMs: number): void {
    this.keys ??= [];
    this.keys.push({
      queue: job.queue,
      key: job.idempotencyKey!,
      jobId,
      expiresAtMs: nowMs + job.settings.dedupWindowMs,
    });
  }

  /** A new job named depends_on: its edges are stored with it. */
  depend(childId: string, queue: string, edges: DependencyEdges): void {
    this.dependencies ??= [];
    this.dependencies.push({ childId, queue, edges });
  }

  /** A job with a group was added to `queue`: its leases take turns from now on. */
  grouped(queue: string): void {
    if (this.flow.hasGroups(queue)) return;
    this.groupedQueues ??= new Set();
    this.groupedQueues.add(queue);
  }

  /** Jobs added to `queue` so far (not yet in its counts). */
  inQueue(queue: string): number {
    const perState = this.jobs.get(queue);
    return perState === undefined ? 0 : perState.ready + perState.scheduled + perState.waiting;
  }

  /** Stores the jobs added so far (in order), with their keys and group marks, and forgets them. */
  *insertPending(tx: StoreTx): Op<void> {
    if (this.rows.length > 0) {
      const rows = this.rows;
      this.rows = [];
      yield* tx.jobs.insert(rows);
    }
    if (this.keys !== undefined) {
      const keys = this.keys;
      this.keys = undefined;
      for (const key of keys) yield* tx.keys.remember(key);
    }
    if (this.dependencies !== undefined) {
      const dependencies = this.dependencies;
      this.dependencies = undefined;
      for (const { childId, queue, edges } of dependencies) {
        // dependencyEdges refused the job if the store had no dependency capability.
        yield* tx.dependencies!.add({ childId, policy: edges.policy, edges: edges.edges });
        yield* this.dependencyQueues.jobAdded(tx, queue);
      }
    }
    if (this.groupedQueues !== undefined) {
      const queues = this.groupedQueues;
      this.groupedQueues = undefined;
      for (const queue of queues) yield* this.flow.groupedJobAdded(tx, queue);
    }
  }

  *store(tx: StoreTx, ctx: EngineContext): Op<void> {
    yield* this.insertPending(tx);
    for (const [queue, perState] of this.jobs) {
      yield* ctx.count(tx, queue, null, 'ready', perState.ready);
      yield* ctx.count(tx, queue, null, 'scheduled', perState.scheduled);
      yield* ctx.count(tx, queue, null, 'waiting', perState.waiting);
      ctx.jobsReady(tx, queue, perState.ready);
    }
  }
}
