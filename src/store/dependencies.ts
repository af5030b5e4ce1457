/**
 * The dependency capability of a store (issue 33, docs/decisions/0101-workflows-design.md):
 * the edges between a job that waits (`waiting`) and the jobs it depends on. Optional: a
 * store without it (`StoreTx.dependencies` undefined) refuses `depends_on` with
 * FAILED_PRECONDITION naming its kind. Only jobs that take part in a dependency touch it:
 * a job's `dependents` and `dependencies` columns say whether there is anything to do.
 */
import type { Op } from './op.ts';

/** What a failed dependency does to the job waiting on it. */
export type DependencyPolicy = 'cancel' | 'run' | 'wait';

/** An edge's state: still to resolve, or resolved by the dependency's completion or failure. */
export type EdgeState = 'pending' | 'completed' | 'failed';

/** A job named in `depends_on`, as the enqueue checks it. */
export interface DependencyTargetRow {
  id: string;
  seq: number;
  state: string;
}

/** One edge of a job, from the waiting job's side. */
export interface DependencyEdgeRow {
  parent_id: string;
  edge_state: EdgeState;
  /** The dependency's state now; null once it was deleted (swept). */
  parent_state: string | null;
  parent_queue: string | null;
  parent_type: string | null;
  /** Its result when completed and kept. */
  result: Uint8Array | null;
  result_content_type: string | null;
}

/** One job that depends on a job, and the edge between them. */
export interface DependentRow {
  id: string;
  queue: string;
  state: string;
  edge_state: EdgeState;
}

/** A waiting job with a pending edge from a job that just ended. */
export interface WaitingChildRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  attempt: number;
  state: string;
  run_at_ms: number;
  idempotency_key: string | null;
  on_dependency_failure: DependencyPolicy;
  dependents: number;
}

export interface DependencyReads {
  /** The stored jobs among `ids` (one primary-key probe each), in no particular order. */
  targets(ids: readonly string[]): Op<DependencyTargetRow[]>;
  /** The jobs `childId` depends on, with the state of each edge and of each job. */
  of(childId: string): Op<DependencyEdgeRow[]>;
  /** Up to `limit` jobs that depend on `parentId`, oldest first. */
  dependentsOf(p: { parentId: string; limit: number }): Op<DependentRow[]>;
}

export interface Dependencies extends DependencyReads {
  /**
   * Records that `childId`, stored in this transaction, depends on the edges' jobs, with
   * its policy; each edge's job counts one more dependent.
   */
  add(p: {
    childId: string;
    policy: DependencyPolicy;
    edges: readonly { parentId: string; state: EdgeState }[];
  }): Op<void>;
  /** The waiting jobs with a pending edge from `parentId`, in enqueue order. */
  pendingChildren(parentId: string): Op<WaitingChildRow[]>;
  /** Resolves the edge parent → child if it is pending; returns whether it was. */
  resolve(p: { parentId: string; childSeq: number; state: 'completed' | 'failed' }): Op<boolean>;
  /** How many edges of a job are still pending. */
  pendingOf(childSeq: number): Op<number>;
  /** A waiting job → ready or scheduled. */
  release(p: { seq: number; state: 'ready' | 'scheduled' }): Op<void>;
  /** Forgets the edges of a job that is being deleted. */
  forget(childSeq: number): Op<void>;
}
