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
/** A bit of `dependency_flags`: the job is a member of a batch (schema/0014_batches.sql). */
export const batchMember = 4;

/** Whether other jobs wait on a job with these `dependency_flags`. */
export const dependedOn = (flags: number): boolean => (flags & jobsWaitOnIt) !== 0;

/**
 * The states (SQL list) of a job that keep a job it depends on from its retention sweep: it
 * may still read it. A failed one (dead, cancelled) is not kept for jobs still `waiting` on
 * it: they would wait for its requeue past its retention, and its sweep cancels them
 * (docs/workflows.md); a completed one is, as they wait for others.
 */
export const readerStates = (state: 'dead' | 'completed' | 'cancelled'): string =>
  state !== 'completed' ? "'scheduled', 'ready', 'leased'" : "'waiting', 'scheduled', 'ready', 'leased'";
/**
 * A requeue's SET term for `batch_id` (SQLite schema/0030_job_batch_id.sql, PostgreSQL 0016 and
 * 0018): a member whose row has no batch id — one that had ended before those migrations, which
 * fill only the rows a lease could still take — gets it from its member row (one primary-key
 * probe), so that its next lease carries it. Every other row keeps its own, and no other row
 * reads batch_members. The statement names its table `jobs` (no alias).
 */
export const requeuedBatchId = `batch_id = CASE WHEN batch_id IS NULL AND (dependency_flags & ${batchMember}) <> 0
  THEN (SELECT m.batch_id FROM batch_members m WHERE m.job_id = jobs.id) ELSE batch_id END`;
/** Whether a job with these `dependency_flags` is a member of a batch. */
export const inBatch = (flags: number): boolean => (flags & batchMember) !== 0;
/** Whether a job with these `dependency_flags` waited on other jobs. */
export const waitsOnOthers = (flags: number): boolean => (flags & waitsOnJobs) !== 0;

/** `leftovers`' lines from the counts of rows left by deleted jobs. */
export function leftoverLines(counts: number, edges: number): string[] {
  return [
    ...(counts > 0 ? [`job_dependents: ${counts} counts of dependents of jobs not stored`] : []),
    ...(edges > 0 ? [`job_dependencies: ${edges} edges of waiting jobs not stored`] : []),
  ];
}

/** What a failed dependency does to the job waiting on it. */
export type DependencyPolicy = 'cancel' | 'run' | 'wait';

/** An edge's state: still to resolve, or resolved by the dependency's completion or failure. */
export type EdgeState = 'pending' | 'completed' | 'failed';

/** A job named in `depends_on`, as the enqueue checks it. */
export interface DependencyTargetRow {
  id: string;
  seq: number;
  state: string;
  /**
   * The edges made to it so far (`countDependents`, schema/0026_job_dependents.sql; without a
   * count, its edges), what the enqueue checks against limits.max_dependents_per_job.
   */
  dependents: number;
  /**
   * Of `dependents`, those made by keys other than its creator (schema/0032_job_creators.sql;
   * 0 without a count: the edges a job has before its first are its own flow's).
   */
  other_dependents: number;
  /** The API key's name that made it; null: made without a key. */
  created_by: string | null;
}

/** A write unit's new edges to one job: how many, and how many of them another key made (the share of other keys). */
export interface DependentsAdded {
  added: number;
  others: number;
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
  /**
   * Its result's size in bytes when completed and kept; null without one. Edges carry no
   * result: a lease reads those it passes on with `results` (a lease of 1,000 jobs that each
   * wait on the same 100 jobs would otherwise read each result 1,000 times).
   */
  result_bytes: number | null;
  result_content_type: string | null;
}

/** A job's result, as a lease passes it on. */
export interface JobResultRow {
  id: string;
  result: Uint8Array | null;
}

/** One job that depends on a job, and the edge between them. */
export interface DependentRow {
  id: string;
  queue: string;
  type: string;
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

/** A job whose failure a unit left to maintenance (`takeFailures`), and its state now (null: swept). */
export interface KeptFailureRow {
  id: string;
  state: string | null;
}

/** A waiting job released by `releaseCompleted`, with the state it moved to. */
export interface ReleasedRow {
  seq: number;
  id: string;
  queue: string;
  type: string;
  attempt: number;
  state: 'ready' | 'scheduled';
  run_at_ms: number;
}

/** How a batch member ended (or `pending`). */
export type MemberState = 'pending' | 'completed' | 'dead' | 'cancelled';

/** A batch's row (schema/0014_batches.sql). */
export interface BatchRow {
  id: string;
  state: 'open' | 'sealed' | 'ended';
  created_at_ms: number;
  sealed_at_ms: number | null;
  ended_at_ms: number | null;
  members: number;
  pending: number;
  completed: number;
  dead: number;
  cancelled: number;
  on_complete_json: string | null;
  on_success_json: string | null;
  /** The on_death job as requested (schema/0028_batch_death.sql); null: none. */
  on_death_json: string | null;
  complete_job_id: string | null;
  success_job_id: string | null;
  /** The member whose death was counted first; null while none died. */
  first_dead_id: string | null;
  /** The on_death job that first death enqueued. */
  death_job_id: string | null;
  completion_error: string | null;
  /** The API key that created it ('' without one). */
  owner: string;
}

/** Which batches `listBatches` pages through: null filters nothing. */
/**
 * Sorts after every batch id (lowercase hex and '-'; PostgreSQL compares them COLLATE "C"):
 * a listing's `beforeId` that means "from the newest".
 */
export const afterEveryBatchId = '~';

export interface BatchListFilter {
  state: BatchRow['state'] | null;
  owner: string | null;
}

/** A member of a batch, with how it ended and its job's state now (null once the job was swept). */
export interface BatchMemberRow {
  job_id: string;
  position: number;
  member_state: MemberState;
  job_state: string | null;
}

/** A job of a flow (its dependency graph, in both directions). */
export interface FlowJobRow {
  id: string;
  seq: number;
  queue: string;
  type: string;
  state: string;
  /** Its name in the flow that stored it (schema/0029_flow_names.sql); null outside flows. */
  flow_name: string | null;
}

export interface DependencyReads {
  /**
   * One step of a flow's walk (the engine's flow-walk.ts): the jobs next to `ids` through
   * dependencies, either way, once per edge met (repeats, and parents swept since,
   * included), at most `limit` of them. Each id's edges are read by index, so the step
   * costs the edges it returns, whatever the table holds.
   */
  flowNeighbours(p: { ids: readonly string[]; limit: number }): Op<string[]>;
  /** The jobs among `ids` that are stored (those swept are left out), in no particular order. */
  flowRows(ids: readonly string[]): Op<FlowJobRow[]>;
  /** Up to `limit` members of a batch that have not ended, in the order added. */
  pendingMembers(p: { batchId: string; limit: number }): Op<string[]>;
  /** A batch by id. */
  batch(id: string): Op<BatchRow | undefined>;
  /** Up to `limit` members of a batch after `afterPosition` (-1: from the first), in the order added. */
  batchMembers(p: { batchId: string; afterPosition: number; limit: number }): Op<BatchMemberRow[]>;
  /** The batch `jobId` is a member of, and how the member ended, or undefined. */
  membership(jobId: string): Op<{ batch_id: string; state: MemberState } | undefined>;
  /** How many batches have not ended (open or sealed). */
  unendedBatches(): Op<number>;
  /**
   * Up to `limit` batches newest first (by id: UUIDv7), those with an id below `beforeId`
   * (null: from the newest), matching the filter: one bounded range of an index.
   */
  listBatches(p: BatchListFilter & { beforeId: string | null; limit: number }): Op<BatchRow[]>;
  /**
   * The stored jobs among `ids` (one primary-key probe each), in no particular order, each with
   * its count of dependents. In a write on a store other servers share, the jobs are locked
   * first (until commit) and their counts read after: every edge to a stored job is made by a
   * unit that called this, so no other unit adds to those counts until this one commits.
   */
  targets(ids: readonly string[]): Op<DependencyTargetRow[]>;
  /**
   * The jobs `childId` depends on, with the state of each edge and of each job. `childSeq`,
   * when the caller has it (a leased row), is that job's seq: a store may find the edges by
   * it without looking the id up (SQLite does: the lease reads them for every job it hands
   * out in a queue that has had dependencies, most of them with none).
   */
  of(childId: string, childSeq?: number): Op<DependencyEdgeRow[]>;
  /**
   * `of` by seq for many jobs at once (a lease's jobs): every edge of each, tagged with its
   * waiting job's seq, by that seq and then as `of` orders them. Optional: without it the
   * lease calls `of` per job (both stores have it: one statement per lease instead of one per job).
   */
  ofMany?(childSeqs: readonly number[]): Op<(DependencyEdgeRow & { child_seq: number })[]>;
  /** The results of the stored jobs among `ids`, in no particular order (those a lease passes on). */
  results(ids: readonly string[]): Op<JobResultRow[]>;
  /** The queues that have had a job waiting on others (their leases pass results on). */
  queuesWithDependencies(): Op<string[]>;
  /** Up to `limit` jobs that depend on `parentId`, oldest first. */
  dependentsOf(p: { parentId: string; limit: number }): Op<DependentRow[]>;
  /**
   * How many waiting jobs wait on the dead letters of `queue` among `ids` (a pending edge from
   * one of them), each counted once, counted up to `limit`: the jobs a delete of those dead
   * letters cancels (engine/dependencies/release.ts). One parent index range per id.
   */
  waitingOnDead(p: { queue: string; ids: readonly string[]; limit: number }): Op<number>;
  /**
   * Rows a deleted job left behind, one line per table that has some (`job_dependents: N counts
   * of jobs not stored`); empty when none. Every path that deletes a job takes its edges (as the
   * waiting job) and its count of dependents with it. For tests and diagnostics: it reads both
   * tables whole.
   */
  leftovers(): Op<string[]>;
}

export interface Dependencies extends DependencyReads {
  /**
   * Records that `childId`, stored in this transaction with `waitsOnJobs` in its row's
   * dependency_flags (NewJobRow), depends on the edges' jobs, with its policy; marks each
   * edge's job (jobsWaitOnIt) but those whose edge says `parentMarked` (their INSERT, in
   * this transaction, wrote the flag: a job of the same flow).
   */
  add(p: {
    childId: string;
    policy: DependencyPolicy;
    edges: readonly { parentId: string; state: EdgeState; name?: string; parentMarked?: boolean }[];
  }): Op<void>;
  /**
   * Counts new edges to their jobs (limits.max_dependents_per_job), once `add` stored them: each
   * job's count goes up by its number, once per write unit however many of its edges the unit
   * made, and its count of other keys' edges by `others`. A job without a count yet gets the
   * number of its edges (these included) and `others`: the edges
   * a flow made to its own jobs before their rows were stored (`parentMarked`) are not counted
   * here, and they are all a job can have before its first count (at most the limit: the flow's
   * shape is checked), so `targets` reads the edges of a job without a count instead, once.
   * A job's count is kept while it is, and dropped with it by whatever deletes it.
   */
  countDependents(counts: ReadonlyMap<string, DependentsAdded>): Op<void>;
  /** Marks a queue as one that has had a job waiting on others. */
  markQueue(queue: string): Op<void>;
  /** The waiting jobs with a pending edge from `parentId`, in enqueue order. */
  pendingChildren(parentId: string): Op<WaitingChildRow[]>;
  /** Resolves the edge parent → child if it is pending; returns whether it was. */
  resolve(p: { parentId: string; childSeq: number; state: 'completed' | 'failed' }): Op<boolean>;
  /**
   * Resolves as `state` the pending edges from `parentId` to jobs no longer waiting (cancelled
   * before it ended): `failed` when it just failed — what they waited on failed, whoever ended
   * first; `completed` when it completed and is being deleted — its edges then no longer show
   * completed through it (dependencies/shown.ts). Edges to waiting jobs are the release's
   * (`pendingChildren`, `resolve`: their policy decides).
   */
  resolveToEnded(parentId: string, state: 'completed' | 'failed'): Op<void>;
  /**
   * Resolves as failed the pending edges of the waiting job `childSeq`, being cancelled, from
   * jobs that failed already (dead or cancelled: the `wait` policy kept it waiting on them).
   */
  failFromFailed(childSeq: number): Op<void>;
  /** Whether any edge of a job is still pending (one index seek, however many edges it has). */
  anyPending(childSeq: number): Op<boolean>;
  /** A waiting job → ready or scheduled. */
  release(p: { seq: number; state: 'ready' | 'scheduled' }): Op<void>;
  /**
   * The release of many jobs that all just completed, as sets (an ack batch's jobs others wait
   * on): resolves their pending edges to waiting jobs as completed, and moves each waiting job
   * left with no pending edge to ready, or scheduled while its run_at_ms is after `nowMs`.
   * Returns the jobs it moved, by seq; each at most once (the move checks it is waiting).
   * The same end as `pendingChildren`, `resolve`, `anyPending` and `release` per job, in
   * two statements per call instead of three per edge (PostgreSQL: a locking statement sent
   * ahead, and one awaited). Optional: without it the engine releases job by job.
   */
  releaseCompleted?(p: { parentIds: readonly string[]; nowMs: number }): Op<ReleasedRow[]>;
  /** Forgets the edges of a job that is being deleted (one that waited on others: waitsOnJobs). */
  forget(childSeq: number): Op<void>;
  /**
   * Keeps jobs whose failure is still to pass on to the jobs waiting on them
   * (schema/0027_dependency_failures.sql): a unit passes failures on to a bounded number of
   * jobs and leaves the rest to maintenance (engine/dependencies/failures.ts). Only a job with
   * a pending edge from it is kept (one probe of the pending edges from it); a job kept already
   * is kept once.
   */
  keepFailures(jobIds: readonly string[]): Op<void>;
  /**
   * Takes up to `limit` kept jobs, oldest id first, each with its state now (null: swept);
   * they are kept no more once this unit commits. On a store several servers share, two
   * units at once never take the same job.
   */
  takeFailures(limit: number): Op<KeptFailureRow[]>;
  /**
   * Forgets the count of dependents of a job that is being deleted (one others waited on:
   * jobsWaitOnIt; schema/0026_job_dependents.sql), so that the count goes with its job.
   */
  forgetDependents(parentId: string): Op<void>;
  /** Stores a new batch, open or sealed, with no members. */
  createBatch(p: {
    id: string;
    nowMs: number;
    onCompleteJson: string | null;
    onSuccessJson: string | null;
    onDeathJson: string | null;
    /** The API key that created it ('' without one). */
    owner: string;
  }): Op<void>;
  /** How many batches of `owner` have not ended, counted up to `limit` (limits.max_open_batches_per_key). */
  unendedBatchesOf(p: { owner: string; limit: number }): Op<number>;
  /** Adds jobs stored in this transaction to a batch (pending), and marks them (batchMember). */
  addMembers(p: { batchId: string; jobIds: readonly string[] }): Op<void>;
  /** An open batch → sealed; returns whether it was open. */
  seal(p: { batchId: string; nowMs: number }): Op<boolean>;
  /**
   * Counts the end of member `jobId` if it is still pending; returns its batch's id, and
   * whether this was the batch's first death (`first_dead_id` set to `jobId` by this call,
   * so exactly one unit sees it), or null when it was counted already.
   */
  memberEnded(p: {
    jobId: string;
    state: Exclude<MemberState, 'pending'>;
  }): Op<{ batchId: string; firstDeath: boolean } | null>;
  /**
   * A sealed batch with no pending member → ended; returns its row when this call ended it
   * (so exactly one unit does), undefined otherwise.
   */
  endBatch(p: { batchId: string; nowMs: number }): Op<BatchRow | undefined>;
  /**
   * The retention sweep of ended batches: deletes up to `limit` member rows of batches
   * ended before `beforeMs`, then, only when that left none of them, up to `limit` of
   * those batches, oldest first. Member rows never outlive their batch's row: a batch is
   * deleted only once it has no member row left.
   */
  sweepBatches(p: { beforeMs: number; limit: number }): Op<{ members: number; batches: number }>;
  /**
   * The secret the lease tokens of batch members are made with (schema/0031_lease_token_secret.sql):
   * stores `candidate` under `name` unless a row holds one already, and returns the one stored.
   * Servers sharing a store that call it at once all get the same (the first commit's).
   */
  secret(p: { name: string; candidate: Uint8Array }): Op<Uint8Array>;
  /** What a batch's first death enqueued (its on_death job), or why it could not. */
  setDeath(p: { batchId: string; deathJobId: string | null; error: string | null }): Op<void>;
  /** What the end of a batch enqueued. */
  setCompletion(p: {
    batchId: string;
    completeJobId: string | null;
    successJobId: string | null;
    error: string | null;
  }): Op<void>;
}
