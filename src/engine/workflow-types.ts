/**
 * The engine's shapes of workflows (issue 33) beyond a single job's: batches with their
 * completion jobs and members, and the graph of a flow. A job's own links (`JobLink`)
 * stay with the job in types.ts.
 */
import type { EnqueueRequest, EnqueueResult, JobState } from './types.ts';

/**
 * A batch's completion job (issue 33): an enqueue request without what a job that runs once
 * cannot use (dependencies, keys, absolute times). Its payload, if any, must be JSON: the
 * job gets `{"batch": {...}, "data": <this payload>}` (docs/workflows.md#batches).
 */
export type BatchCompletionJob = Omit<
  EnqueueRequest,
  'dependsOn' | 'onDependencyFailure' | 'idempotencyKey' | 'uniqueWhileActive' | 'runAtMs' | 'expiresAtMs'
>;

/** A new batch: its completion jobs, optional first members, and whether it is sealed at once. */
export interface CreateBatchRequest {
  /** Enqueued when the batch ends, whatever its members ended as. */
  onComplete?: BatchCompletionJob;
  /** Enqueued when the batch ends only if every member completed. */
  onSuccess?: BatchCompletionJob;
  /**
   * Enqueued once, when the first member dies (dead-lettered or expired), in the unit that
   * counts that death: the batch may still be running.
   */
  onDeath?: BatchCompletionJob;
  /** Enqueued as the first members (each on its own merits, as EnqueueBatch). */
  jobs?: readonly EnqueueRequest[];
  /** Seal the batch with these jobs: nothing can be added after, except by its own members. */
  seal?: boolean;
  /**
   * Seal it with these jobs only if every one was stored (none refused; a duplicate counts as
   * stored), else leave it open for the refused ones to be added again. Ignored with `seal`.
   */
  sealIfAllStored?: boolean;
  /**
   * The API key creating it ('' for a caller without one): a key holds at most
   * limits.max_open_batches_per_key batches not ended. Absent: not counted (in-process callers).
   */
  owner?: string;
}

/**
 * A batch's states, in the order it passes through them: the one list the doors' checks,
 * schemas and choices derive from (the protocol's BatchState enum holds the same three).
 */
export const batchStates = ['open', 'sealed', 'ended'] as const;
export type BatchState = (typeof batchStates)[number];

export interface BatchInfo {
  id: string;
  state: BatchState;
  createdAtMs: number;
  sealedAtMs: number | null;
  endedAtMs: number | null;
  /** Jobs ever added. */
  members: number;
  /** Members not ended yet. */
  pending: number;
  completed: number;
  dead: number;
  cancelled: number;
  hasOnComplete: boolean;
  hasOnSuccess: boolean;
  hasOnDeath: boolean;
  /** The on_complete job the end enqueued (null before the end, or without one). */
  completeJobId: string | null;
  /** The on_success job the end enqueued (null unless every member completed). */
  successJobId: string | null;
  /** The member whose death was counted first (null while none died). */
  firstDeadId: string | null;
  /** The on_death job the first death enqueued (null until a member died, or without one). */
  deathJobId: string | null;
  /** Why a completion job could not be enqueued (its queue refused it), or null. */
  completionError: string | null;
  /** The API key that created it (`anonymous` over an API without keys, '' in-process). */
  owner: string;
}

/** Which batches ListBatches pages through, newest first. */
export interface BatchListQuery {
  /** Only batches in this state; absent: every state. */
  state?: BatchState;
  /** Only the batches of this owner (an API key's name, as `owner`); absent: every owner's. */
  owner?: string;
  /** Default 100; at most limits.max_page_size. */
  pageSize?: number;
  /** A previous page's `nextCursor`. */
  cursor?: string;
}

/** A page of batches, and the cursor of the next one (null: the last page). */
export interface BatchPage {
  batches: BatchInfo[];
  nextCursor: string | null;
}

/** A member of a batch: how it ended (`pending` until then) and its job's state now (null once swept). */
export interface BatchMember {
  jobId: string;
  memberState: 'pending' | 'completed' | 'dead' | 'cancelled';
  jobState: JobState | null;
}

/** What adding jobs to a batch answered: the batch after it, and one result per job. */
export interface BatchAddResult {
  batch: BatchInfo;
  results: EnqueueResult[];
}

/** A job of a flow, as GetFlow and the flow page show it. */
export interface FlowNode {
  id: string;
  queue: string;
  type: string;
  state: JobState;
  /**
   * Its name in the flow that stored it; for a job stored before names were kept with jobs, the
   * name an edge gives it; null for a job no flow named (enqueued alone, named by id).
   */
  name: string | null;
}

/** An edge of a flow: `jobId` waits on `dependsOn`. */
export interface FlowEdge {
  jobId: string;
  dependsOn: string;
  /** pending; completed; failed (the dependency failed and the edge counted it, under the run or cancel policy). */
  state: 'pending' | 'completed' | 'failed';
  /** The dependency's name in the flow that made the edge; null when it was named by id. */
  name: string | null;
}

/**
 * A flow: the jobs connected to a job through dependencies, either way, in enqueue order,
 * and the edges between them. `truncated` when there were more than the bound.
 */
export interface FlowGraph {
  jobs: FlowNode[];
  edges: FlowEdge[];
  /** The flow has more jobs than the answer holds (or may have: `edgesLimited`). */
  truncated: boolean;
  /**
   * The walk read as many edges as one read may (maxFlowWalkEdges) and stopped: a flow
   * that dense is shown in part, whatever `limit` asks (`truncated` is true too).
   */
  edgesLimited: boolean;
}

/** What a cancel of a flow or a batch did. */
export interface WorkflowCancelResult {
  /** Jobs cancelled at once (waiting, scheduled, ready). */
  cancelled: number;
  /** Leased jobs whose workers were asked to stop: they end cancelled when their attempt ends. */
  cancelRequested: number;
}
