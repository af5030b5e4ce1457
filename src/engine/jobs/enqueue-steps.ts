/**
 * The steps every enqueue is made of: admission (room on the disk, the batch's
 * size, a job's depends_on, a new queue, max_depth), idempotency, the insert
 * and the events. The Enqueuer composes them for one job, a batch and an
 * all-or-nothing batch; the FlowEnqueuer for a graph of jobs.
 */

import { waitsOnJobs } from '../../store/dependencies.ts';
import { nothing, type Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import {
  type DependencyEdges,
  type DependencyQueues,
  type DependentsBound,
  dependencyEdges,
} from '../dependencies/index.ts';
import { type JobRejection, SeppError } from '../errors.ts';
import type { FlowControl } from '../flow-control/index.ts';
import type { EnqueueAccepted, EnqueueRequest, EnqueueResult, JobEvent } from '../types.ts';
import { AddedJobs } from './added-jobs.ts';
import type { DiskFull } from './disk-full.ts';
import { type ValidJob, validateJob } from './enqueue-validation.ts';
import { IdempotencyKeys } from './idempotency.ts';
import type { JobIdGenerator } from './job-id.ts';

/** A job admitted, with the edges of its depends_on (null: it named none), or why it is not. */
export type Admission = { ok: true; edges: DependencyEdges | null } | ({ ok: false } & JobRejection);

/** A job's rejection at its index in an all-or-nothing request. */
export type IndexedRejection = JobRejection & { index: number };

export class EnqueueSteps {
  private readonly keys = new IdempotencyKeys();

  constructor(
    readonly ctx: EngineContext,
    /** Marks a queue's first group (its leases take turns from then on). */
    private readonly flow: FlowControl,
    private readonly ids: JobIdGenerator,
    /** Refuses enqueues while the disk is full (a schedule's ticks are not refused: enqueueWithin). */
    private readonly diskFull: DiskFull,
    /** Marks the queues of jobs with dependencies (their leases pass results on). */
    private readonly dependencyQueues: DependencyQueues,
  ) {}

  /** Debounce is for jobs enqueued alone or in a best-effort batch: `where` refuses it. */
  static debounceRefused(where: string): JobRejection {
    return {
      reason: 'invalid_job',
      message: `debounce_key is not accepted in ${where}: enqueue the job alone or in a best-effort batch`,
    };
  }

  /** While the disk is full, enqueues are refused (disk-full.ts); leases and acks go on. */
  checkRoom(): void {
    const refusal = this.diskFull.enqueueRefusal();
    if (refusal !== null) throw refusal;
  }

  checkBatchSize(jobs: number): void {
    const max = this.ctx.limits.maxBatchJobs;
    if (jobs === 0) throw new SeppError('invalid_argument', 'jobs: the batch is empty');
    if (jobs > max) {
      throw SeppError.tooLarge(
        `jobs: the batch has ${jobs} jobs, the limit is ${max} (limits.max_batch_jobs); split it into several calls`,
      );
    }
  }

  /**
   * Before `validate`, when the registry misses the request's queue: on a store other servers
   * share, the queue one of them made is looked for (ctx.queueExists, one read in `tx`), so the
   * job is checked against its settings, and the queue is neither made again, nor counted as
   * new against limits.max_queues, nor taken as unpaused. Else (or on a hit) nothing.
   * `lookedUp`, the names the operation's transaction looked up already, makes that one read
   * per name, not per job: a queue new everywhere stays a miss while an all-or-nothing batch
   * or a flow only counts it as `creating` (up to limits.max_batch_jobs jobs), and what the
   * transaction read of it once holds for the rest of it.
   */
  *lookUpQueue(tx: StoreTx, queue: string, lookedUp: Set<string>): Op<void> {
    if (lookedUp.has(queue)) return;
    lookedUp.add(queue);
    yield* this.ctx.queueExists(tx, queue);
  }

  /** Checks a job of an enqueue, or of a flow (`after`: the jobs of the flow it runs after). */
  validate(request: EnqueueRequest & { after?: readonly string[] }, nowMs: number): ValidJob | JobRejection {
    return validateJob(request, nowMs, this.ctx.queues, this.ctx.limits);
  }

  /** Whether `job` needs `admit`: it names depends_on or a queue that does not exist yet (most jobs do neither). */
  needsAdmission(job: ValidJob): boolean {
    return job.dependencies !== null || !this.ctx.queues.exists(job.queue);
  }

  /**
   * Admits a valid job: its depends_on are checked against the stored jobs (they become
   * its edges; each such job's dependents, with those of the operation's earlier jobs that
   * the store does not count yet, `earlier`, against limits.max_dependents_per_job), and a
   * queue that does not exist yet is counted against limits.max_queues.
   * Such a queue is created at once, or — when `creating` is given (all or nothing) — only
   * added to it, counted with the operation's other new queues and created by `createQueue`
   * once every job is admitted.
   */
  *admit(
    tx: StoreTx,
    job: ValidJob,
    earlier: DependentsBound['earlier'],
    creating?: Set<string>,
  ): Op<Admission> {
    let edges: DependencyEdges | null = null;
    if (job.dependencies !== null) {
      const bound = this.bound(earlier, job.createdBy, job.createdByAdmin);
      const checked = yield* dependencyEdges(tx, this.ctx.store.kind, job.dependencies, bound);
      if ('reason' in checked) return { ok: false, ...checked };
      edges = checked;
    }
    if (!this.ctx.queues.exists(job.queue) && !creating?.has(job.queue)) {
      const refusal = this.ctx.newQueueRefusal(job.queue, creating?.size ?? 0);
      if (refusal !== null) return { ok: false, ...refusal };
      if (creating === undefined) yield* this.ctx.ensureQueue(tx, job.queue);
      else creating.add(job.queue);
    }
    return { ok: true, edges };
  }

  /**
   * limits.max_dependents_per_job, with the operation's uncounted edges (`earlier`), for the job
   * of `caller` (`callerAdmin`: a key with the admin role).
   */
  bound(earlier: DependentsBound['earlier'], caller: string | null, callerAdmin: boolean): DependentsBound {
    return { limit: this.ctx.limits.maxDependentsPerJob, earlier, caller, callerAdmin };
  }

  /** Creates `queue` if this is its first job (after `admit` counted it). */
  *createQueue(tx: StoreTx, queue: string): Op<void> {
    if (!this.ctx.queues.exists(queue)) yield* this.ctx.ensureQueue(tx, queue);
  }

  /**
   * max_depth back-pressure for an all-or-nothing request: each candidate whose queue
   * would hold more than its max_depth with `adding` (per queue) more jobs is refused.
   * A queue's count is read once.
   */
  *depthRejections(
    tx: StoreTx,
    candidates: Iterable<{ index: number; job: ValidJob }>,
    adding: ReadonlyMap<string, number>,
  ): Op<IndexedRejection[]> {
    const verdicts = new Map<string, JobRejection | null>();
    const rejections: IndexedRejection[] = [];
    for (const { index, job } of candidates) {
      if (job.settings.maxDepth <= 0) continue;
      let verdict = verdicts.get(job.queue);
      if (verdict === undefined) {
        verdict = yield* this.checkDepth(tx, job, adding.get(job.queue) ?? 1, true);
        verdicts.set(job.queue, verdict);
      }
      if (verdict !== null) rejections.push({ index, ...verdict });
    }
    return rejections;
  }

  /**
   * max_depth back-pressure (a queue with a max_depth): the maintained counts, including this batch's inserts.
   * `adding` counts this job and the queue's jobs enqueued just before it and not yet in the counts (stored
   * by now), or, `allOrNone`, the jobs stored together with it or not at all. The message counts them too:
   * a batch's member refused after its first members reads "holds 2, 2 of them enqueued just before",
   * not "holds 0".
   */
  *checkDepth(tx: StoreTx, job: ValidJob, adding: number, allOrNone = false): Op<JobRejection | null> {
    const maxDepth = job.settings.maxDepth;
    if (maxDepth <= 0) return null;
    const depth = yield* tx.counts.unfinished(job.queue);
    if (depth + adding <= maxDepth) return null;
    const others = adding - 1;
    const holds =
      others === 0
        ? `holds ${depth} unfinished jobs`
        : allOrNone
          ? `holds ${depth} unfinished jobs and would hold ${depth + adding} with this request's`
          : `holds ${depth + others} unfinished jobs, ${others} of them enqueued just before this one`;
    return {
      reason: 'queue_full',
      message: `queue ${job.queue} ${holds}, its max_depth is ${maxDepth}; retry later`,
    };
  }

  /**
   * Before any key of `requests` is looked up: serialises them with other writers of the
   * same keys where the store asks for it (Keys.lock: several servers on PostgreSQL).
   * The first thing a write does, so a store may run it again later (keys.ts).
   */
  lockKeys(tx: StoreTx, requests: readonly EnqueueRequest[]): Op<void> {
    const keys = tx.keys;
    if (keys.lock === undefined) return nothing;
    const keyed: { queue: string; key: string }[] = [];
    for (const { queue, idempotencyKey } of requests) {
      // A key with a NUL in it is no PostgreSQL text: its lookup answers as it did without the lock.
      if (typeof idempotencyKey === 'string' && idempotencyKey !== '' && !idempotencyKey.includes('\0'))
        keyed.push({ queue: String(queue), key: idempotencyKey });
    }
    return keyed.length === 0 ? nothing : keys.lock(keyed);
  }

  /** The original job when `job`'s idempotency key is taken (see idempotency.ts); null without a key. */
  *findDuplicate(tx: StoreTx, job: ValidJob, nowMs: number, added?: AddedJobs): Op<EnqueueAccepted | null> {
    if (job.idempotencyKey === null) return null;
    // The lookup (unique-while-active keys read the jobs table) must see this batch's earlier jobs: store them first.
    if (added !== undefined) yield* added.insertPending(tx);
    const original = yield* this.keys.duplicateOf(tx, job, nowMs);
    return original === null ? null : { ok: true, jobId: original, deduplicated: true };
  }

  /**
   * Debounce (docs/protocol.md, "Debounce"): the queue's waiting, never-leased job with
   * `job`'s debounce key absorbs it — its content is replaced and its run time moves to
   * now + debounce_ms, never past the cap its first enqueue set — and the answer names it.
   * Null without such a job (the caller stores a new one).
   */
  *absorbDebounced(tx: StoreTx, job: ValidJob, nowMs: number, added: AddedJobs): Op<EnqueueAccepted | null> {
    const debounce = job.debounce;
    if (debounce === null) return null;
    // An earlier job of this batch with the same key must be found: store it first.
    yield* added.insertPending(tx);
    const target = yield* tx.jobs.debounceTarget({ queue: job.queue, key: debounce.key });
    if (target === undefined) return null;
    const pushedTo = nowMs + debounce.delayMs;
    const runAtMs =
      target.debounce_until_ms === null ? pushedTo : Math.min(pushedTo, target.debounce_until_ms);
    const state = runAtMs > nowMs ? 'scheduled' : 'ready';
    yield* tx.jobs.debounce({
      seq: target.seq,
      payload: job.payload,
      content_type: job.contentType,
      metadata_json: job.metadataJson,
      traceparent: job.traceparent,
      tracestate: job.tracestate,
      run_at_ms: runAtMs,
      state,
    });
    if (target.state !== state) {
      yield* this.ctx.count(tx, job.queue, target.state as 'scheduled' | 'ready', state, 1);
      if (state === 'ready') this.ctx.jobsReady(tx, job.queue, 1);
    }
    if (state === 'scheduled') this.ctx.wakeAt(tx, runAtMs);
    return { ok: true, jobId: target.id, deduplicated: false, debounced: true };
  }

  /** The new jobs of one operation (stored with `added.store` once done). */
  newJobs(): AddedJobs {
    return new AddedJobs(this.flow, this.dependencyQueues);
  }

  /**
   * Adds a new job to `added` (its queue exists in this transaction); the caller has checked
   * it is not a duplicate, and stores `added` once done. Keys are remembered with the rows.
   * `flowName`: its name in the flow that stores it, kept with it (GetFlow).
   */
  insert(
    tx: StoreTx,
    job: ValidJob,
    nowMs: number,
    added: AddedJobs,
    edges: DependencyEdges | null,
    flowName?: string,
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
      // Its edges (added.depend) are stored after it: its row says it waits on them from its INSERT on.
      dependency_flags: edges === null ? 0 : waitsOnJobs,
      flow_name: flowName ?? null,
      created_by: job.createdBy,
    });
    if (job.group !== null) added.grouped(job.queue);
    if (IdempotencyKeys.remembers(job)) added.remember(job, id, nowMs);
    if (edges !== null) added.depend(id, job.queue, edges);
    if (job.debounce !== null) {
      const { key, maxMs } = job.debounce;
      added.debounce(id, key, maxMs === null ? null : nowMs + maxMs);
    }
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

  /** One event per queue and outcome, not per job: batches stay cheap to report. */
  emitEnqueueEvents(
    tx: StoreTx,
    requests: readonly EnqueueRequest[],
    results: readonly EnqueueResult[],
  ): void {
    const tally = new Map<string, JobEvent>();
    results.forEach((result, i) => {
      const queue = String(requests[i]?.queue);
      const event: JobEvent = result.ok
        ? {
            kind: result.deduplicated ? 'deduplicated' : result.debounced === true ? 'debounced' : 'enqueued',
            queue,
            count: 0,
          }
        : { kind: 'rejected', queue, reason: result.reason, count: 0 };
      const key = `${event.kind}\0${queue}\0${result.ok ? '' : result.reason}`;
      const seen = tally.get(key) ?? event;
      seen.count++;
      tally.set(key, seen);
    });
    for (const event of tally.values()) this.ctx.emit(tx, event);
  }

  /** An all-or-nothing request was refused: its rejections in index order, one event each. */
  refuse(
    tx: StoreTx,
    requests: readonly EnqueueRequest[],
    rejections: IndexedRejection[],
  ): { committed: false; rejections: IndexedRejection[] } {
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
}
