/**
 * Enqueue: one job, a best-effort batch or an all-or-nothing batch, composed of
 * the steps in enqueue-steps.ts. Each call is one write operation; its results
 * are answered after the commit is durable.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import { type DependencyEdges, DependentTally } from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import type { AtomicEnqueueResult, EnqueueAccepted, EnqueueRequest, EnqueueResult } from '../types.ts';
import { EnqueueSteps, type IndexedRejection } from './enqueue-steps.ts';
import { isRejection, type ValidJob } from './enqueue-validation.ts';
import { IdempotencyKeys } from './idempotency.ts';

export class Enqueuer {
  constructor(
    private readonly steps: EnqueueSteps,
    private readonly audit: AuditLog,
  ) {}

  /** Enqueues one job; a rejection is thrown as a SeppError carrying it. */
  async enqueue(request: EnqueueRequest, audit?: AuditInput): Promise<EnqueueAccepted> {
    const [result] = await this.enqueueBatch([request], audit);
    if (result === undefined) throw new SeppError('internal', 'enqueue returned no result');
    if (!result.ok) throw SeppError.rejected(result);
    return result;
  }

  /** Enqueues each job on its own merits: one result per job, in order. */
  async enqueueBatch(requests: readonly EnqueueRequest[], audit?: AuditInput): Promise<EnqueueResult[]> {
    this.steps.checkRoom();
    this.steps.checkBatchSize(requests.length);
    return this.steps.ctx.write((tx) => this.enqueueWithin(tx, requests, audit));
  }

  /**
   * enqueueBatch inside a write operation that is already running: a schedule's
   * tick enqueues its job in the same transaction as the advance of its cursor.
   */
  *enqueueWithin(tx: StoreTx, requests: readonly EnqueueRequest[], audit?: AuditInput): Op<EnqueueResult[]> {
    const { steps } = this;
    yield* steps.lockKeys(tx, requests);
    const nowMs = steps.ctx.clock.nowMs();
    const added = steps.newJobs();
    const results: EnqueueResult[] = [];
    const lookedUp = new Set<string>();
    // One loop, no generator per job: a job without a key, a max_depth, depends_on or a
    // new queue makes no store call here (a queue new to this server is looked for first on a
    // store other servers share: one of them may have made it, lookUpQueue).
    for (const request of requests) {
      if (!steps.ctx.queues.exists(request.queue)) yield* steps.lookUpQueue(tx, request.queue, lookedUp);
      const job = steps.validate(request, nowMs);
      if (isRejection(job)) {
        results.push({ ok: false, ...job });
        continue;
      }
      // A duplicate adds nothing, so a full queue still answers it with the original job.
      if (job.idempotencyKey !== null) {
        const duplicate = yield* steps.findDuplicate(tx, job, nowMs, added);
        if (duplicate !== null) {
          results.push(duplicate);
          continue;
        }
      }
      // An absorbed enqueue adds nothing either.
      if (job.debounce !== null) {
        const absorbed = yield* steps.absorbDebounced(tx, job, nowMs, added);
        if (absorbed !== null) {
          results.push(absorbed);
          continue;
        }
      }
      if (job.settings.maxDepth > 0) {
        const depthProblem = yield* steps.checkDepth(tx, job, 1 + added.inQueue(job.queue));
        if (depthProblem !== null) {
          results.push({ ok: false, ...depthProblem });
          continue;
        }
      }
      let edges: DependencyEdges | null = null;
      if (steps.needsAdmission(job)) {
        const admission = yield* steps.admit(tx, job, (parentId) => added.dependentsOf(parentId));
        if (!admission.ok) {
          results.push(admission);
          continue;
        }
        edges = admission.edges;
      }
      results.push(steps.insert(tx, job, nowMs, added, edges));
    }
    yield* added.store(tx, steps.ctx);
    steps.emitEnqueueEvents(tx, requests, results);
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
    this.steps.checkRoom();
    this.steps.checkBatchSize(requests.length);
    return this.steps.ctx.write((tx) => this.enqueueAllOrNone(tx, requests));
  }

  private *enqueueAllOrNone(tx: StoreTx, requests: readonly EnqueueRequest[]): Op<AtomicEnqueueResult> {
    const { steps } = this;
    yield* steps.lockKeys(tx, requests);
    const nowMs = steps.ctx.clock.nowMs();
    const rejections: IndexedRejection[] = [];
    const valid: { index: number; job: ValidJob; adds: boolean; edges: DependencyEdges | null }[] = [];
    // Jobs that add a row, per queue: duplicates (of stored jobs or of earlier jobs in this batch) add none.
    const adding = new Map<string, number>();
    const creating = new Set<string>();
    const keysInBatch = new Set<string>();
    // The admitted jobs' edges per job they name: none is stored before every job is admitted.
    const admitted = new DependentTally();
    const lookedUp = new Set<string>();
    for (const [index, request] of requests.entries()) {
      if (!steps.ctx.queues.exists(request.queue)) yield* steps.lookUpQueue(tx, request.queue, lookedUp);
      const job = steps.validate(request, nowMs);
      if (isRejection(job)) {
        rejections.push({ index, ...job });
        continue;
      }
      if (job.debounce !== null) {
        rejections.push({ index, ...EnqueueSteps.debounceRefused('an all-or-nothing batch') });
        continue;
      }
      let adds = (yield* steps.findDuplicate(tx, job, nowMs)) === null;
      if (adds && IdempotencyKeys.dedupsWithinBatch(job)) {
        const key = `${job.queue}\0${job.idempotencyKey}`;
        adds = !keysInBatch.has(key);
        keysInBatch.add(key);
      }
      // A duplicate's depends_on are not checked: it stores nothing.
      const admission = yield* steps.admit(
        tx,
        adds ? job : { ...job, dependencies: null },
        (parentId) => admitted.of(parentId),
        creating,
      );
      if (!admission.ok) {
        rejections.push({ index, ...admission });
        continue;
      }
      if (admission.edges !== null) admitted.add(admission.edges.edges);
      if (adds) adding.set(job.queue, (adding.get(job.queue) ?? 0) + 1);
      valid.push({ index, job, adds, edges: admission.edges });
    }
    rejections.push(
      ...(yield* steps.depthRejections(
        tx,
        valid.filter(({ adds }) => adds),
        adding,
      )),
    );
    if (rejections.length > 0) return steps.refuse(tx, requests, rejections);
    const added = steps.newJobs();
    const results: EnqueueAccepted[] = [];
    for (const { job, edges } of valid) {
      const duplicate = yield* steps.findDuplicate(tx, job, nowMs, added);
      if (duplicate !== null) {
        results.push(duplicate);
        continue;
      }
      yield* steps.createQueue(tx, job.queue);
      results.push(steps.insert(tx, job, nowMs, added, edges));
    }
    yield* added.store(tx, steps.ctx);
    steps.emitEnqueueEvents(tx, requests, results);
    return { committed: true, results };
  }
}
