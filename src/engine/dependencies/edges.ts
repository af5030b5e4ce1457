/**
 * What an enqueue's depends_on becomes: one edge per named job, resolved at once when
 * that job already completed (or failed, under the `run` policy), pending otherwise.
 * Checked inside the enqueue's unit, against what the transaction sees.
 */
import type { DependencyPolicy, DependentsAdded, EdgeState } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { JobRejection } from '../errors.ts';

/** The edges of a new job, and how many of them are pending (0: it is not waiting). */
export interface DependencyEdges {
  policy: DependencyPolicy;
  /**
   * `parentMarked`: the edge's job carries jobsWaitOnIt from its INSERT (a job of the same flow);
   * `byOther`: a key other than the one that made the edge's job makes it (othersShare).
   */
  edges: { parentId: string; state: EdgeState; name?: string; parentMarked?: boolean; byOther?: boolean }[];
  pending: number;
}

const failedStates = new Set(['dead', 'cancelled']);

/**
 * New edges per job they name, made by one operation and not counted by the store yet
 * (limits.max_dependents_per_job): what a job's stored count does not show.
 */
export class DependentTally {
  private readonly counts = new Map<string, DependentsAdded>();

  /** Edges to `parentId` tallied so far, and how many of them other keys made. */
  of(parentId: string): DependentsAdded {
    return this.counts.get(parentId) ?? none;
  }

  /**
   * Tallies one more edge to each job of `edges` (`by` -1 takes them back); `stored`: not those
   * to a job whose row is not stored yet (`parentMarked`: a job of the same flow, new), which
   * the store counts from its edges (Dependencies.countDependents).
   */
  add(edges: DependencyEdges['edges'], by = 1, stored = false): void {
    for (const { parentId, parentMarked, byOther } of edges) {
      if (stored && parentMarked === true) continue;
      const { added, others } = this.of(parentId);
      const count = { added: added + by, others: byOther === true ? others + by : others };
      if (count.added === 0) this.counts.delete(parentId);
      else this.counts.set(parentId, count);
    }
  }

  get empty(): boolean {
    return this.counts.size === 0;
  }

  /** The tally, handed to the store (Dependencies.countDependents), and forgotten. */
  take(): ReadonlyMap<string, DependentsAdded> {
    const counts = new Map(this.counts);
    this.counts.clear();
    return counts;
  }
}

/** No edges tallied. */
const none: DependentsAdded = { added: 0, others: 0 };

/**
 * How the enqueue bounds a job's dependents: at most `limit` (limits.max_dependents_per_job),
 * counting the edges the operation made to it before (`earlier`) beyond those the store counts;
 * `caller`, the API key's name that enqueues (null: none), makes at most othersShare of them when
 * it is not the one that made the job — unless it has the admin role (`callerAdmin`): a trusted
 * operator's edges count as the creator's.
 */
export interface DependentsBound {
  limit: number;
  earlier: (parentId: string) => DependentsAdded;
  caller: string | null;
  callerAdmin: boolean;
}

/**
 * How many of a job's dependents the keys other than the one that made it may make together:
 * half of limits.max_dependents_per_job, so that another key that learns a job's id cannot use
 * them all up (attack7): the job's own creator keeps room for the other half. A caller without a
 * key counts as one key, as does the server's own (a job it made has no creator). A key with the
 * admin role is not one of them: it may do anything to any job anyway, and its edges count as the
 * creator's.
 */
export const othersShare = (limit: number): number => Math.floor(limit / 2);

/** A job's count of dependents (`dependents`, `others` of them by other keys than its creator's) against `limit`. */
interface DependentsHeld {
  dependents: number;
  others: number;
  limit: number;
}

/**
 * Why an edge to `id` is refused (`at`: the job's depends_on[i]): it has `limit` dependents, or
 * (`share`) keys other than its creator made their share of them and the caller is one of them.
 * It says how many other keys hold, never which.
 */
function tooManyDependents(at: string, id: string, held: DependentsHeld, share: boolean): JobRejection {
  const { dependents, others, limit } = held;
  const byOthers = `${others} of them made by keys other than the one that enqueued it`;
  const why = share
    ? `, ${byOthers}; those keys may make at most ${othersShare(limit)} together (half of limits.max_dependents_per_job, ${limit}), the rest is kept for the key that enqueued ${id}; depend on a job your key enqueued, or have that key enqueue this one`
    : `${others === 0 ? '' : ` (${byOthers})`}, the limit is ${limit} (limits.max_dependents_per_job); fan out through jobs in between (each named by at most ${limit}), or raise the limit`;
  return { reason: 'invalid_job', message: `${at}: job ${id} has ${dependents} jobs depending on it${why}` };
}

/**
 * The edges of a job that depends on `ids`, or why it cannot (an unknown or failed job, a job
 * with as many dependents as `bound` allows, or as many made by keys other than its creator as
 * othersShare allows when the caller is one of them, no capability).
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
    const earlier = bound.earlier(id);
    const dependents = Number(target.dependents) + earlier.added;
    const others = Number(target.other_dependents) + earlier.others;
    const held = { dependents, others, limit: bound.limit };
    if (dependents >= bound.limit) return tooManyDependents(`depends_on[${i}]`, id, held, false);
    const byOther = !bound.callerAdmin && (target.created_by ?? null) !== bound.caller;
    if (byOther && others >= othersShare(bound.limit))
      return tooManyDependents(`depends_on[${i}]`, id, held, true);
    let edge: EdgeState = 'pending';
    if (state === 'completed') edge = 'completed';
    else if (failedStates.has(state) && policy === 'cancel') {
      return {
        reason: 'dependency_failed',
        message: `depends_on[${i}]: job ${id} is ${state} and on_dependency_failure is cancel, so this job could never run; requeue ${id} first, or use run or wait`,
      };
    } else if (failedStates.has(state) && policy === 'run') edge = 'failed';
    if (edge === 'pending') pending++;
    edges.push(byOther ? { parentId: id, state: edge, byOther } : { parentId: id, state: edge });
  }
  return { policy, edges, pending };
}
