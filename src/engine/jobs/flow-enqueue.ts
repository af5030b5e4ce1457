/**
 * A flow: a graph of jobs enqueued in one operation, every job or none, each
 * stored after the jobs of the request it runs after (flow-shape.ts), its edges
 * written with it. Composed of the enqueue steps (enqueue-steps.ts). A job whose
 * idempotency key is taken is not stored again, and what runs after it waits on
 * the original job.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import { type DependencyEdges, dependencyEdges } from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import type { EnqueueAccepted, FlowJob, FlowResult } from '../types.ts';
import { EnqueueSteps, type IndexedRejection } from './enqueue-steps.ts';
import { isRejection, type ValidJob } from './enqueue-validation.ts';
import { checkFlowShape, type FlowOrder } from './flow-shape.ts';

export class FlowEnqueuer {
  constructor(private readonly steps: EnqueueSteps) {}

  async enqueueFlow(jobs: readonly FlowJob[]): Promise<FlowResult> {
    this.steps.checkRoom();
    const shape = checkFlowShape(jobs, this.steps.ctx.limits);
    return this.steps.ctx.write((tx) => this.enqueueFlowIn(tx, jobs, shape));
  }

  private *enqueueFlowIn(
    tx: StoreTx,
    jobs: readonly FlowJob[],
    { order, parents }: FlowOrder,
  ): Op<FlowResult> {
    const { steps } = this;
    const { ctx } = steps;
    if (tx.dependencies === undefined && parents.some((own) => own.length > 0)) {
      throw new SeppError(
        'failed_precondition',
        `the ${ctx.store.kind} store keeps no job dependencies: a flow's jobs cannot run after each other`,
      );
    }
    yield* steps.lockKeys(tx, jobs);
    const nowMs = ctx.clock.nowMs();
    const rejections: IndexedRejection[] = [];
    const valid: ValidJob[] = [];
    const byIdEdges: (DependencyEdges | null)[] = [];
    const adding = new Map<string, number>();
    const creating = new Set<string>();
    for (const [index, request] of jobs.entries()) {
      const job = steps.validate(request, nowMs);
      if (isRejection(job)) {
        rejections.push({ index, ...job });
        continue;
      }
      if (job.debounce !== null) {
        rejections.push({ index, ...EnqueueSteps.debounceRefused('a flow') });
        continue;
      }
      valid[index] = job;
      // Every job counts towards max_depth, a duplicate too: a flow is refused rather than half-checked.
      adding.set(job.queue, (adding.get(job.queue) ?? 0) + 1);
      const admission = yield* steps.admit(tx, job, creating);
      if (!admission.ok) rejections.push({ index, ...admission });
      else byIdEdges[index] = admission.edges;
    }
    const candidates = valid.flatMap((job, index) => (job === undefined ? [] : [{ index, job }]));
    rejections.push(...(yield* steps.depthRejections(tx, candidates, adding)));
    if (rejections.length > 0) return steps.refuse(tx, jobs, rejections);
    const added = steps.newJobs();
    const results: EnqueueAccepted[] = [];
    /** Each stored job's id, and whether it is new in this flow. */
    const stored: { id: string; fresh: boolean }[] = [];
    const created = new Set<string>();
    for (const index of order) {
      const job = valid[index]!;
      const duplicate = yield* steps.findDuplicate(tx, job, nowMs, added);
      if (duplicate !== null) {
        results[index] = duplicate;
        stored[index] = { id: duplicate.jobId, fresh: false };
        continue;
      }
      const edges = yield* this.flowEdges(tx, jobs, index, parents[index]!, stored, byIdEdges[index] ?? null);
      if (!created.has(job.queue)) {
        // Once per queue: until the unit commits, the registry does not know a queue it creates.
        yield* steps.createQueue(tx, job.queue);
        created.add(job.queue);
      }
      const accepted = steps.insert(tx, job, nowMs, added, edges);
      results[index] = accepted;
      stored[index] = { id: accepted.jobId, fresh: true };
    }
    yield* added.store(tx, ctx);
    steps.emitEnqueueEvents(tx, jobs, results);
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
    // The parents named so far: a set, so that a wide fan-in (10,000 parents) is not O(n²).
    const named = new Set(edges.edges.map((e) => e.parentId));
    const originals: string[] = [];
    for (const parent of localParents) {
      const { id, fresh } = stored[parent]!;
      if (!fresh) originals.push(id);
      else if (!named.has(id)) {
        named.add(id);
        edges.edges.push({ parentId: id, state: 'pending', name: jobs[parent]!.name });
        edges.pending++;
      }
    }
    const unique = [...new Set(originals)].filter((id) => !named.has(id));
    if (unique.length > 0) {
      const checked = yield* dependencyEdges(tx, this.steps.ctx.store.kind, { ids: unique, policy });
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
}
