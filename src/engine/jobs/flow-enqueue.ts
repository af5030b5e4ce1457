/**
 * A flow: a graph of jobs enqueued in one operation, every job or none, each
 * stored after the jobs of the request it runs after (flow-shape.ts), its edges
 * written with it. Composed of the enqueue steps (enqueue-steps.ts). A job whose
 * idempotency key is taken is not stored again, and what runs after it waits on
 * the original job.
 *
 * Flows that arrive while their write unit waits for the writer share it (issue 33):
 * one unit stores them one after the other, as separate units would, with their new
 * jobs in statements of many across flows, their counts and wake-ups once. Each flow
 * is answered on its own: a refused one (its rejections) stores nothing and the others
 * go on. A flow that fails the unit (an error thrown once it began to write: a
 * duplicate's failed original, a conflict of the store) fails it for all; then each
 * flow runs again in a unit of its own, so that it fails alone with the same error.
 */

import type { DependentsAdded } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import {
  type DependencyEdges,
  type DependentsBound,
  DependentTally,
  dependencyEdges,
} from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import type { EnqueueAccepted, FlowJob, FlowResult } from '../types.ts';
import type { AddedJobs } from './added-jobs.ts';
import { EnqueueSteps, type IndexedRejection } from './enqueue-steps.ts';
import { isRejection, type ValidJob } from './enqueue-validation.ts';
import { checkFlowShape, type FlowOrder } from './flow-shape.ts';

/** A job of a flow as stored: its id, whether it is new (not a duplicate), and its position in the unit's AddedJobs. */
interface StoredJob {
  id: string;
  fresh: boolean;
  /** Where `AddedJobs.add` put it (-1: a duplicate, not added). */
  position: number;
}

/** A flow waiting for the unit that stores it. */
interface QueuedFlow {
  jobs: readonly FlowJob[];
  shape: FlowOrder;
  resolve: (result: FlowResult) => void;
  reject: (error: unknown) => void;
}

/** A flow's answer from a shared unit: its result, or the error it alone met before it wrote anything. */
type FlowOutcome = { ok: true; result: FlowResult } | { ok: false; error: SeppError };

/**
 * What the flows of one unit share: their new jobs (stored at its end), the queues it created
 * and the queue names it looked up in the store (EnqueueSteps.lookUpQueue).
 */
interface SharedUnit {
  added: AddedJobs;
  created: Set<string>;
  lookedUp: Set<string>;
}

export class FlowEnqueuer {
  /** Flows waiting for a unit; `unitQueued` says whether one is submitted that will take them. */
  private queued: QueuedFlow[] = [];
  private unitQueued = false;

  constructor(private readonly steps: EnqueueSteps) {}

  async enqueueFlow(jobs: readonly FlowJob[]): Promise<FlowResult> {
    this.steps.checkRoom();
    const shape = checkFlowShape(jobs, this.steps.ctx.limits);
    return new Promise<FlowResult>((resolve, reject) => {
      this.queued.push({ jobs, shape, resolve, reject });
      if (!this.unitQueued) this.submitUnit();
    });
  }

  /**
   * Submits a unit that takes the queued flows when it first runs (a unit the writer
   * runs again — PostgreSQL's key locks, LocksBusy — stores the same flows).
   */
  private submitUnit(): void {
    this.unitQueued = true;
    let flows: QueuedFlow[] | undefined;
    this.steps.ctx
      .write((tx) => {
        flows ??= this.take();
        return this.enqueueFlowsIn(tx, flows);
      })
      .then(
        (outcomes) => {
          flows!.forEach((flow, i) => {
            const outcome = outcomes[i]!;
            if (outcome.ok) flow.resolve(outcome.result);
            else flow.reject(outcome.error);
          });
        },
        (error: unknown) => {
          // Refused before it ran (the store is closing): the flows it would have taken.
          flows ??= this.take();
          // The batch failed (storage) or the store refuses writes: alone, each would meet the same.
          const unavailable = error instanceof SeppError && error.code === 'unavailable';
          if (flows.length === 1 || unavailable) for (const flow of flows) flow.reject(error);
          else for (const flow of flows) this.enqueueAlone(flow);
        },
      );
  }

  /** The queued flows for one unit, up to limits.max_batch_jobs jobs (at least one flow); the rest get the next unit. */
  private take(): QueuedFlow[] {
    const max = this.steps.ctx.limits.maxBatchJobs;
    let count = 0;
    let jobs = 0;
    for (const flow of this.queued) {
      if (count > 0 && jobs + flow.jobs.length > max) break;
      jobs += flow.jobs.length;
      count++;
    }
    const taken = this.queued.splice(0, count);
    this.unitQueued = false;
    if (this.queued.length > 0) this.submitUnit();
    return taken;
  }

  /** A flow of a unit that failed, again in a unit of its own: it succeeds or fails alone. */
  private enqueueAlone(flow: QueuedFlow): void {
    this.steps.ctx
      .write((tx) => this.enqueueFlowsIn(tx, [flow]))
      .then(([outcome]) => {
        if (outcome!.ok) flow.resolve(outcome!.result);
        else flow.reject(outcome!.error);
      }, flow.reject);
  }

  /** Stores `flows` one after the other in one unit; their new jobs go in at its end. */
  private *enqueueFlowsIn(tx: StoreTx, flows: readonly QueuedFlow[]): Op<FlowOutcome[]> {
    const { steps } = this;
    // Every key first, before any other statement: PostgreSQL waits for keys only then (store/postgres/keys.ts).
    yield* steps.lockKeys(tx, flows.length === 1 ? flows[0]!.jobs : flows.flatMap((flow) => flow.jobs));
    const unit: SharedUnit = { added: steps.newJobs(), created: new Set(), lookedUp: new Set() };
    const outcomes: FlowOutcome[] = [];
    for (const flow of flows) outcomes.push(yield* this.enqueueFlowIn(tx, flow.jobs, flow.shape, unit));
    yield* unit.added.store(tx, steps.ctx);
    return outcomes;
  }

  private *enqueueFlowIn(
    tx: StoreTx,
    jobs: readonly FlowJob[],
    { order, parents }: FlowOrder,
    unit: SharedUnit,
  ): Op<FlowOutcome> {
    const { steps } = this;
    const { ctx } = steps;
    const { added, created } = unit;
    if (tx.dependencies === undefined && parents.some((own) => own.length > 0)) {
      const message = `the ${ctx.store.kind} store keeps no job dependencies: a flow's jobs cannot run after each other`;
      return { ok: false, error: new SeppError('failed_precondition', message) };
    }
    const nowMs = ctx.clock.nowMs();
    const rejections: IndexedRejection[] = [];
    const valid: ValidJob[] = [];
    const byIdEdges: (DependencyEdges | null)[] = [];
    const adding = new Map<string, number>();
    // Queues an earlier flow of the unit creates are the registry's `creating` already (as for separate units).
    const creating = new Set<string>();
    // Edges to stored jobs (depends_on) admitted and not yet in `added`: each job's leave as it is stored.
    const admitted = new DependentTally();
    const earlier = (parentId: string): DependentsAdded => {
      const [unit, flow] = [added.dependentsOf(parentId), admitted.of(parentId)];
      return { added: unit.added + flow.added, others: unit.others + flow.others };
    };
    for (const [index, request] of jobs.entries()) {
      if (!steps.ctx.queues.exists(request.queue)) yield* steps.lookUpQueue(tx, request.queue, unit.lookedUp);
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
      // The unit's earlier flows' new jobs are not in the counts yet: they count here.
      adding.set(job.queue, (adding.get(job.queue) ?? added.inQueue(job.queue)) + 1);
      const admission = yield* steps.admit(tx, job, earlier, creating);
      if (!admission.ok) rejections.push({ index, ...admission });
      else {
        byIdEdges[index] = admission.edges;
        if (admission.edges !== null) admitted.add(admission.edges.edges);
      }
    }
    const candidates = valid.flatMap((job, index) => (job === undefined ? [] : [{ index, job }]));
    rejections.push(...(yield* steps.depthRejections(tx, candidates, adding)));
    if (rejections.length > 0) return { ok: true, result: steps.refuse(tx, jobs, rejections) };
    const results: EnqueueAccepted[] = [];
    /** Each stored job's id, whether it is new in this flow, and then its position in `added`. */
    const stored: StoredJob[] = [];
    for (const index of order) {
      const job = valid[index]!;
      const duplicate = yield* steps.findDuplicate(tx, job, nowMs, added);
      if (duplicate !== null) {
        results[index] = duplicate;
        stored[index] = { id: duplicate.jobId, fresh: false, position: -1 };
        continue;
      }
      const byId = byIdEdges[index] ?? null;
      const local = { parents: parents[index]!, stored, added, earlier };
      const edges = yield* this.flowEdges(tx, jobs, index, local, byId);
      if (!created.has(job.queue)) {
        // Once per queue and unit: until the unit commits, the registry does not know a queue it creates.
        yield* steps.createQueue(tx, job.queue);
        created.add(job.queue);
      }
      const position = added.count;
      const accepted = steps.insert(tx, job, nowMs, added, edges, jobs[index]!.name);
      // Its edges to stored jobs are `added`'s now.
      if (byId !== null) admitted.add(byId.edges, -1);
      results[index] = accepted;
      stored[index] = { id: accepted.jobId, fresh: true, position };
    }
    steps.emitEnqueueEvents(tx, jobs, results);
    return {
      ok: true,
      result: {
        committed: true,
        jobs: results.map((r, i) => ({ name: jobs[i]!.name, jobId: r.jobId, deduplicated: r.deduplicated })),
      },
    };
  }

  /**
   * A flow job's edges: to the stored jobs it names by id (checked already), to the jobs
   * of the flow stored just now (pending), and to the original jobs of the flow's
   * duplicates (checked as stored jobs: one may have failed). A failed one under the
   * `cancel` policy refuses the whole flow (the unit is rolled back). A job of the flow
   * stored just now is marked as waited on in its row while that is not stored yet (its
   * INSERT writes the flag, and the edge says so: `parentMarked`).
   */
  private *flowEdges(
    tx: StoreTx,
    jobs: readonly FlowJob[],
    index: number,
    local: {
      parents: readonly number[];
      stored: readonly StoredJob[];
      added: AddedJobs;
      /** The flow's (and the unit's) edges to a stored job that the store does not count yet. */
      earlier: DependentsBound['earlier'];
    },
    byId: DependencyEdges | null,
  ): Op<DependencyEdges | null> {
    const { parents: localParents, stored, added, earlier } = local;
    if (localParents.length === 0) return byId;
    const policy = byId?.policy ?? jobs[index]!.onDependencyFailure ?? 'cancel';
    const edges: DependencyEdges = { policy, edges: [...(byId?.edges ?? [])], pending: byId?.pending ?? 0 };
    // The parents named so far: a set, so that a wide fan-in (10,000 parents) is not O(n²).
    const named = new Set(edges.edges.map((e) => e.parentId));
    const originals: string[] = [];
    for (const parent of localParents) {
      const { id, fresh, position } = stored[parent]!;
      if (!fresh) originals.push(id);
      else if (!named.has(id)) {
        named.add(id);
        const parentMarked = added.markDependedOn(position);
        edges.edges.push({ parentId: id, state: 'pending', name: jobs[parent]!.name, parentMarked });
        edges.pending++;
      }
    }
    const unique = [...new Set(originals)].filter((id) => !named.has(id));
    if (unique.length > 0) {
      const { createdBy, createdByAdmin } = jobs[index]!;
      const bound = this.steps.bound(earlier, createdBy ?? null, createdByAdmin === true);
      const checked = yield* dependencyEdges(tx, this.steps.ctx.store.kind, { ids: unique, policy }, bound);
      if ('reason' in checked) {
        throw SeppError.rejected({
          ...checked,
          message: `jobs[${index}] (${jobs[index]!.name}): ${checked.message}`,
        });
      }
      for (const edge of checked.edges) {
        const localIndex = localParents.find((p) => stored[p]!.id === edge.parentId);
        edges.edges.push(localIndex === undefined ? edge : { ...edge, name: jobs[localIndex]!.name });
      }
      edges.pending += checked.pending;
    }
    return edges;
  }
}
