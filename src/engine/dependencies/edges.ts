/**
 * What an enqueue's depends_on becomes: one edge per named job, resolved at once when
 * that job already completed (or failed, under the `run` policy), pending otherwise.
 * Checked inside the enqueue's unit, against what the transaction sees.
 */
import type { DependencyPolicy, EdgeState } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { JobRejection } from '../errors.ts';

/** The edges of a new job, and how many of them are pending (0: it is not waiting). */
export interface DependencyEdges {
  policy: DependencyPolicy;
  /** `parentMarked`: the edge's job carries jobsWaitOnIt from its INSERT (a job of the same flow). */
  edges: { parentId: string; state: EdgeState; name?: string; parentMarked?: boolean }[];
  pending: number;
}

const failedStates = new Set(['dead', 'cancelled']);

/**
 * New edges per job they name, made by one operation and not counted by the store yet
 * (limits.max_dependents_per_job): what a job's stored count does not show.
 */
export class DependentTally {
  private readonly counts = new Map<string, number>();

  /** Edges to `parentId` tallied so far. */
  of(parentId: string): number {
    return this.counts.get(parentId) ?? 0;
  }

  /**
   * Tallies one more edge to each job of `edges` (`by` -1 takes them back); `stored`: not those
   * to a job whose row is not stored yet (`parentMarked`: a job of the same flow, new), which
   * the store counts from its edges (Dependencies.countDependents).
   */
  add(edges: DependencyEdges['edges'], by = 1, stored = false): void {
    for (const { parentId, parentMarked } of edges) {
      if (stored && parentMarked === true) continue;
      const count = this.of(parentId) + by;
      if (count === 0) this.counts.delete(parentId);
      else this.counts.set(parentId, count);
    }
  }

  get empty(): boolean {
    return this.counts.size === 0;
  }

  /** The tally, handed to the store (Dependencies.countDependents), and forgotten. */
  take(): ReadonlyMap<string, number> {
    const counts = new Map(this.counts);
    this.counts.clear();
    return counts;
  }
}

/**
 * How the enqueue bounds a job's dependents: at most `limit` (limits.max_dependents_per_job),
 * counting the edges the operation made to it before (`earlier`) beyond those the store counts.
 */
export interface DependentsBound {
  limit: number;
  earlier: (parentId: string) => number;
}

/** Why an edge to `id` is refused: it already has `dependents`, the limit (`at`) — the job's depends_on[i]. */
function tooManyDependents(at: string, id: string, dependents: number, limit: number): JobRejection {
  return {
    reason: 'invalid_job',
    message: `${at}: job ${id} has ${dependents} jobs depending on it, the limit is ${limit} (limits.max_dependents_per_job); fan out through jobs in between (each named by at most ${limit}), or raise the limit`,
  };
}

/**
 * The edges of a job that depends on `ids`, or why it cannot (an unknown or failed job, a job
 * with as many dependents as `bound` allows, no capability).
 */
export function* dependencyEdges(
  tx: StoreTx,
  storeKind: string,
  dependencies: { ids: readonly string[]; policy: DependencyPolicy },
  bound: DependentsBound,
): Op<DependencyEdges | JobRejection> {
  const deps = tx.dependencies;
  if (deps === undefined) {
    return {
      reason: 'dependencies_unsupported',
      message: `depends_on: the ${storeKind} store keeps no job dependencies; enqueue without depends_on`,
    };
  }
  const { ids, policy } = dependencies;
  const targets = new Map((yield* deps.targets(ids)).map((row) => [row.id, row]));
  const edges: DependencyEdges['edges'] = [];
  let pending = 0;
  for (const [i, id] of ids.entries()) {
    const target = targets.get(id);
    if (target === undefined) {
      return {
        reason: 'unknown_dependency',
        message: `depends_on[${i}]: job ${id} does not exist (never enqueued here, or finished and not kept)`,
      };
    }
    const { state } = target;
    const dependents = Number(target.dependents) + bound.earlier(id);
    if (dependents >= bound.limit) return tooManyDependents(`depends_on[${i}]`, id, dependents, bound.limit);
    let edge: EdgeState = 'pending';
    if (state === 'completed') edge = 'completed';
    else if (failedStates.has(state) && policy === 'cancel') {
      return {
        reason: 'dependency_failed',
        message: `depends_on[${i}]: job ${id} is ${state} and on_dependency_failure is cancel, so this job could never run; requeue ${id} first, or use run or wait`,
      };
    } else if (failedStates.has(state) && policy === 'run') edge = 'failed';
    if (edge === 'pending') pending++;
    edges.push({ parentId: id, state: edge });
  }
  return { policy, edges, pending };
}
