/**
 * The dependency capability of a store (issue 33, docs/decisions/0101-workflows-design.md):
 * the edges between a job that waits (`waiting`) and the jobs it depends on. Optional: a
 * store without it (`StoreTx.dependencies` undefined) refuses `depends_on` with
 * FAILED_PRECONDITION naming its kind. Only jobs that take part in a dependency touch it:
 * a job's `dependency_flags` (0 for every other job) says whether there is anything to do.
 */
import type { Op } from './op.ts';

/** A bit of `dependency_flags`: the job waits on other jobs (it named depends_on). */
export const waitsOnJobs = 1;
/** A bit of `dependency_flags`: other jobs wait on this one. */
export const jobsWaitOnIt = 2;

/** Whether other jobs wait on a job with these `dependency_flags`. */
export const dependedOn = (flags: number): boolean => (flags & jobsWaitOnIt) !== 0;
/** Whether a job with these `dependency_flags` waited on other jobs. */
export const waitsOnOthers = (flags: number): boolean => (flags & waitsOnJobs) !== 0;

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
  /** The dependency's name in the flow that made the edge; null when it was named by id. */
  name: string | null;
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
  /** The waiting job's policy (kept on its edges). */
  policy: DependencyPolicy;
  dependency_flags: number;
}

export interface DependencyReads {
  /** The stored jobs among `ids` (one primary-key probe each), in no particular order. */
  targets(ids: readonly string[]): Op<DependencyTargetRow[]>;
  /** The jobs `childId` depends on, with the state of each edge and of each job. */
  of(childId: string): Op<DependencyEdgeRow[]>;
  /** The queues that have had a job waiting on others (their leases pass results on). */
  queuesWithDependencies(): Op<string[]>;
  /** Up to `limit` jobs that depend on `parentId`, oldest first. */
  dependentsOf(p: { parentId: string; limit: number }): Op<DependentRow[]>;
}

export interface Dependencies extends DependencyReads {
  /**
   * Records that `childId`, stored in this transaction, depends on the edges' jobs, with
   * its policy; marks it (waitsOnJobs) and each edge's job (jobsWaitOnIt).
   */
  add(p: {
    childId: string;
    policy: DependencyPolicy;
    edges: readonly { parentId: string; state: EdgeState; name?: string }[];
  }): Op<void>;
  /** Marks a queue as one that has had a job waiting on others. */
  markQueue(queue: string): Op<void>;
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
