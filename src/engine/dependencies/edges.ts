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

/** The edges of a job that depends on `ids`, or why it cannot (an unknown or failed job, no capability). */
export function* dependencyEdges(
  tx: StoreTx,
  storeKind: string,
  dependencies: { ids: readonly string[]; policy: DependencyPolicy },
): Op<DependencyEdges | JobRejection> {
  const deps = tx.dependencies;
  if (deps === undefined) {
    return {
      reason: 'dependencies_unsupported',
      message: `depends_on: the ${storeKind} store keeps no job dependencies; enqueue without depends_on`,
    };
  }
  const { ids, policy } = dependencies;
  const states = new Map((yield* deps.targets(ids)).map((row) => [row.id, row.state]));
  const edges: DependencyEdges['edges'] = [];
  let pending = 0;
  for (const [i, id] of ids.entries()) {
    const state = states.get(id);
    if (state === undefined) {
      return {
        reason: 'unknown_dependency',
        message: `depends_on[${i}]: job ${id} does not exist (never enqueued here, or finished and not kept)`,
      };
    }
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
