/**
 * Flows and batches as one thing (issue 33): read a flow — the jobs connected to a job
 * through dependencies, either way — and cancel every job of a flow or a batch that has
 * not ended, in one write operation, audited like the other admin acts. The cancel of
 * each job is the cancel by id (cancel.ts): it passes on to what waits on it and to its
 * batch in the same unit.
 */
import type {
  Dependencies,
  DependencyEdgeRow,
  DependencyReads,
  FlowJobRow,
} from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { shownEdge } from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import type { JobState } from '../types.ts';
import type { FlowEdge, FlowGraph, WorkflowCancelResult } from '../workflow-types.ts';

export type { WorkflowCancelResult };

import type { Canceller } from './cancel.ts';
import { maxFlowWalkEdges, walkFlow } from './flow-walk.ts';

/**
 * Jobs one flow read or cancel reaches (the ids its walk met, jobs swept since included); a
 * larger flow is read in part, and cancelled job by job or with CancelJobs.
 */
export const maxFlowGraphJobs = 20_000;
/**
 * The bytes a flow's answer may take when its caller says nothing: gRPC's default message (4
 * MiB), less room for the rest of the answer. The 20,000 jobs alone leave it unbounded: each
 * job may have 100 edges, each with a name of 128 characters.
 */
export const flowAnswerBytesMax = 4 * 1024 * 1024 - 1024;
/** Per job and per edge, besides its strings: field names and quotes in JSON (tags in protobuf), its state. */
const flowEntryBytes = 64;
/** Members one batch cancel reaches (every member a batch may have). */
const maxBatchCancel = 100_000;

export class WorkflowActs {
  constructor(
    private readonly ctx: EngineContext,
    private readonly canceller: Canceller,
    private readonly audit: AuditLog,
  ) {}

  /**
   * The flow of `jobId`: its connected jobs in enqueue order and their edges, as many as
   * `limit` jobs and `answerBytesMax` bytes of answer (each job with all its edges) hold.
   */
  getFlow(jobId: string, limit = maxFlowGraphJobs, answerBytesMax = flowAnswerBytesMax): Promise<FlowGraph> {
    const bound = Math.min(Math.max(Math.trunc(limit), 1), maxFlowGraphJobs);
    const bytesMax = Math.min(answerBytesMax, flowAnswerBytesMax);
    const kind = this.ctx.store.kind;
    return this.ctx.read(function* (view) {
      const deps = capability(view.dependencies, kind);
      return yield* readFlow(deps, jobId, bound, bytesMax);
    });
  }

  /** Cancels every job of `jobId`'s flow that has not ended, in one unit. */
  cancelFlow(jobId: string, audit?: AuditInput): Promise<WorkflowCancelResult> {
    return this.ctx.write(
      function* (this: WorkflowActs, tx: StoreTx): Op<WorkflowCancelResult> {
        const deps = capability(tx.dependencies, this.ctx.store.kind) as Dependencies;
        const walk = yield* walkFlow(deps, jobId, maxFlowGraphJobs);
        const jobs = walk.rows;
        if (jobs.length === 0) throw noFlow(jobId);
        if (walk.jobsLimited || walk.edgesLimited) {
          const why = walk.jobsLimited
            ? `has more than ${maxFlowGraphJobs} jobs`
            : `has more than ${maxFlowWalkEdges} edges to walk (limits one walk reads)`;
          throw SeppError.tooLarge(
            `the flow of job ${jobId} ${why}, more than one call cancels; ` +
              'cancel its jobs in several calls, by id or with CancelJobs',
          );
        }
        // Newest first: a job is cancelled before what it waits on, so a failure passed on never
        // releases a job of the flow (a `run` job) on the way, and each job counts once.
        const ids = jobs.sort((a, b) => b.seq - a.seq).map((j) => j.id);
        const result = yield* this.canceller.cancelEach(tx, ids, audit?.actor ?? null);
        if (audit !== undefined) yield* this.audit.write(tx, audit, { jobs: ids.length, ...result });
        return result;
      }.bind(this),
    );
  }

  /** Cancels every member of a batch that has not ended, in one unit; the batch ends if it was sealed. */
  cancelBatch(batchId: string, audit?: AuditInput): Promise<WorkflowCancelResult> {
    return this.ctx.write(
      function* (this: WorkflowActs, tx: StoreTx): Op<WorkflowCancelResult> {
        const deps = capability(tx.dependencies, this.ctx.store.kind) as Dependencies;
        if ((yield* deps.batch(batchId)) === undefined) {
          throw new SeppError('not_found', `batch ${batchId} does not exist`);
        }
        const ids = (yield* deps.pendingMembers({ batchId, limit: maxBatchCancel })).reverse();
        const result = yield* this.canceller.cancelEach(tx, ids, audit?.actor ?? null);
        if (audit !== undefined) yield* this.audit.write(tx, audit, { members: ids.length, ...result });
        return result;
      }.bind(this),
    );
  }
}

/**
 * A flow is its stored jobs: once they are swept (a completed job goes at its ack unless its
 * queue keeps completed jobs), nothing names it any more, and the message says so.
 */
function noFlow(jobId: string): SeppError {
  return new SeppError(
    'not_found',
    `job ${jobId} does not exist, so it names no flow: a flow is read through jobs still stored ` +
      '(completed jobs are deleted at their ack unless their queue keeps them: completed_retention_ms)',
  );
}

function capability<T extends DependencyReads>(deps: T | undefined, kind: string): T {
  if (deps === undefined) {
    throw new SeppError('failed_precondition', `the ${kind} store keeps no job dependencies or batches`);
  }
  return deps;
}

/**
 * Each job's edges, for `jobs` taken in order: with `ofMany`, read for a chunk of jobs at a time
 * (16, then twice as many each time up to 512), so a flow of 1,000 jobs costs PostgreSQL a few
 * round trips, not 1,000, and a read that stops at its byte bound reads at most as many jobs'
 * edges again as it used.
 */
function edgeReader(
  deps: DependencyReads,
  jobs: readonly FlowJobRow[],
): (job: FlowJobRow) => Op<DependencyEdgeRow[]> {
  const ofMany = deps.ofMany?.bind(deps);
  if (ofMany === undefined) return (job) => deps.of(job.id, job.seq);
  const read = new Map<number, DependencyEdgeRow[]>();
  let next = 0;
  let chunk = 16;
  return function* (job) {
    if (!read.has(job.seq)) {
      read.clear();
      const seqs = jobs.slice(next, next + chunk).map((j) => j.seq);
      next += seqs.length;
      chunk = Math.min(chunk * 2, 512);
      for (const seq of seqs) read.set(seq, []);
      for (const edge of yield* ofMany(seqs)) read.get(edge.child_seq)?.push(edge);
    }
    return read.get(job.seq) ?? [];
  };
}

/** Ids, names and states are ASCII (their rules), so a string's length is its bytes. */
function* readFlow(deps: DependencyReads, jobId: string, bound: number, bytesMax: number): Op<FlowGraph> {
  const walk = yield* walkFlow(deps, jobId, bound);
  const { rows, edgesLimited } = walk;
  if (rows.length === 0) throw noFlow(jobId);
  let truncated = walk.jobsLimited || edgesLimited;
  const candidates = rows.sort((a, b) => a.seq - b.seq);
  const jobs: typeof candidates = [];
  const edges: FlowEdge[] = [];
  let bytes = 0;
  const edgesOf = edgeReader(deps, candidates);
  for (const job of candidates) {
    const own = (yield* edgesOf(job)).map(
      (edge): FlowEdge => ({
        jobId: job.id,
        dependsOn: edge.parent_id,
        state: shownEdge(edge.edge_state, edge.parent_state),
        name: edge.name,
      }),
    );
    let size =
      job.id.length + job.queue.length + job.type.length + (job.flow_name?.length ?? 0) + flowEntryBytes;
    for (const edge of own)
      size += edge.jobId.length + edge.dependsOn.length + (edge.name?.length ?? 0) + flowEntryBytes;
    // At least the first job, whatever its size (at most 100 edges: about 40 KB).
    if (jobs.length > 0 && bytes + size > bytesMax) {
      truncated = true;
      break;
    }
    bytes += size;
    jobs.push(job);
    edges.push(...own);
  }
  // A job stored before names were kept with jobs has the name the edges naming it give it.
  const edgeNames = new Map<string, string>();
  for (const edge of edges) if (edge.name !== null) edgeNames.set(edge.dependsOn, edge.name);
  return {
    jobs: jobs.map((j) => ({
      id: j.id,
      queue: j.queue,
      type: j.type,
      state: j.state as JobState,
      name: j.flow_name ?? edgeNames.get(j.id) ?? null,
    })),
    edges,
    truncated,
    edgesLimited,
  };
}
