/**
 * Read-only queries for operators: a queue's jobs in one state page by page,
 * dead letters by reason, and jobs by idempotency key. Each is a handful of
 * index range reads, whatever the number of jobs stored.
 *
 * Jobs of a queue and state are listed in enqueue order (seq). The index is
 * (queue, state, type, seq) so that a type filter is one range read; without a
 * filter the page is merged from one range read per type present, found by a
 * loose index scan (one seek per type). Queues have a handful of types; past
 * `mergeTypeLimit` the query falls back to sorting the state's rows, as it does
 * for a state the store keeps in no index by type (`Browse.unindexedByType`:
 * PostgreSQL's leased jobs, whose every read reads them all).
 */
import { type DependencyReads, dependedOn, inBatch, waitsOnOthers } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { JobSummaryRow } from '../../store/rows.ts';
import type { StoreView } from '../../store/store.ts';
import type { JobListQuery, JobSummary, ListOrder } from '../admin-types.ts';
import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { shownEdge } from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import { pageSizeOf } from '../page-size.ts';
import type { DeadReason, JobInfo, JobState, Page } from '../types.ts';
import { deadReasons, jobStates } from '../types.ts';
import { jobInfoFromOutcome, jobInfoFromRow } from './job-rows.ts';

const pageSizeDefault = 50;
const mergeTypeLimit = 256;

export interface DeadLetterSummaryQuery {
  queue: string;
  reason?: DeadReason;
  order?: ListOrder;
  cursor?: string;
  pageSize?: number;
}

export class JobQueries {
  constructor(private readonly ctx: EngineContext) {}

  *listJobs(view: StoreView, query: JobListQuery): Op<Page<JobSummary> & { total: number | null }> {
    this.checkQueue(query.queue);
    if (!jobStates.includes(query.state)) {
      throw new SeppError('invalid_argument', `state must be one of ${jobStates.join(', ')}`);
    }
    if (query.type !== undefined) {
      const problem = checkName('type', query.type, this.ctx.limits);
      if (problem) throw new SeppError('invalid_argument', problem.message);
    }
    const pageSize = this.pageSize(query.pageSize);
    const descending = query.order === 'newest_first';
    const fromSeq = decodeSeqCursor(query.cursor, descending);
    const want = pageSize + 1;
    const base = { queue: query.queue, state: query.state, fromSeq, descending, limit: want };
    const types =
      query.type !== undefined
        ? [query.type]
        : view.browse.unindexedByType.has(query.state)
          ? null
          : yield* this.typesIn(view, query.queue, query.state);
    let seqs: number[];
    if (types === null) {
      seqs = yield* view.browse.seqsAnyType(base);
    } else {
      seqs = [];
      for (const type of types) seqs.push(...(yield* view.browse.seqs({ ...base, type })));
      seqs.sort(descending ? (a, b) => b - a : (a, b) => a - b);
      seqs.length = Math.min(seqs.length, want);
    }
    const more = seqs.length > pageSize;
    seqs.length = Math.min(seqs.length, pageSize);
    const items = yield* summariesInOrder(view, seqs);
    const last = seqs.at(-1);
    const total =
      query.type === undefined
        ? yield* view.counts.inState({ queue: query.queue, state: query.state })
        : null;
    return { items, nextCursor: more && last !== undefined ? encodeCursor(`s${last}`) : null, total };
  }

  /** A page of dead letters, with how many there are of the reason asked for (or of any). */
  *listDeadLetters(view: StoreView, query: DeadLetterSummaryQuery): Op<Page<JobSummary> & { total: number }> {
    this.checkQueue(query.queue);
    if (query.reason !== undefined && !deadReasons.includes(query.reason)) {
      throw new SeppError('invalid_argument', `reason must be one of ${deadReasons.join(', ')}`);
    }
    const pageSize = this.pageSize(query.pageSize);
    const descending = query.order === 'newest_first';
    const from = decodeDeadCursor(query.cursor, descending);
    const rows = yield* view.deadLetters.summaries({
      queue: query.queue,
      reason: query.reason ?? null,
      from,
      descending,
      limit: pageSize + 1,
    });
    const items = rows.slice(0, pageSize).map(summaryFromRow);
    const last = items.at(-1);
    // With a reason: one range of jobs_dead_reason counted, so "Requeue all" can name its count.
    const total =
      query.reason === undefined
        ? yield* view.counts.inState({ queue: query.queue, state: 'dead' })
        : yield* view.deadLetters.countByReason({ queue: query.queue, reason: query.reason });
    return {
      items,
      nextCursor:
        rows.length > pageSize && last ? encodeCursor(`d${last.failedAtMs ?? 0}:${last.seq}`) : null,
      total,
    };
  }

  /**
   * One stored job; once its row is gone, the outcome kept of a job deleted as it
   * finished (`outcomeOnly`, for limits.finishedOutcomeMs); NOT_FOUND after that.
   */
  *getJob(view: StoreView, jobId: string): Op<JobInfo> {
    const row = yield* view.jobs.get(jobId);
    if (row !== undefined) {
      const info = jobInfoFromRow(row);
      if (row.dependency_flags !== 0 && view.dependencies !== undefined) {
        yield* addWorkflowLinks(view.dependencies, info, row.dependency_flags);
      }
      return info;
    }
    const outcome = this.ctx.outcomes.get(jobId, this.ctx.clock.nowMs());
    if (outcome !== undefined) return jobInfoFromOutcome(outcome);
    throw new SeppError(
      'not_found',
      `job ${jobId} does not exist (it may have been acked, cancelled or swept, and its outcome ` +
        `is kept only for limits.finished_outcome_ms, ${formatOutcomeWindow(this.ctx.limits.finishedOutcomeMs)})`,
    );
  }

  /**
   * The job an idempotency key names: the newest stored job with that key, else
   * the job the dedup window remembers (which may have been acked since).
   */
  *findJobByIdempotencyKey(
    view: StoreView,
    queue: string,
    key: string,
  ): Op<{ jobId: string; stored: boolean } | null> {
    const stored = yield* this.jobIdByIdempotencyKey(view, queue, key);
    if (stored !== null) return { jobId: stored, stored: true };
    const remembered = yield* this.rememberedJobId(view, queue, key);
    return remembered === null ? null : { jobId: remembered, stored: false };
  }

  /** The id of the newest stored job with this idempotency key, or null. */
  *jobIdByIdempotencyKey(view: StoreView, queue: string, key: string): Op<string | null> {
    this.checkQueue(queue);
    if (key === '') throw new SeppError('invalid_argument', 'idempotency key is empty');
    return (yield* view.keys.newestJob({ queue, key })) ?? null;
  }

  /** The job an idempotency key still points to in the dedup window (the job may be gone). */
  *rememberedJobId(view: StoreView, queue: string, key: string): Op<string | null> {
    const seen = yield* view.keys.remembered({ queue, key });
    return seen !== undefined && seen.expires_at_ms > this.ctx.clock.nowMs() ? seen.job_id : null;
  }

  /** The job types present in a queue and state, or null when there are too many to merge. */
  private *typesIn(view: StoreView, queue: string, state: JobState): Op<string[] | null> {
    const types: string[] = [];
    let after = '';
    for (;;) {
      const next = yield* view.browse.typeAfter({ queue, state, afterType: after });
      if (next === undefined) return types;
      if (types.length === mergeTypeLimit) return null;
      types.push(next);
      after = next;
    }
  }

  private pageSize(requested: number | undefined): number {
    return pageSizeOf(requested, pageSizeDefault, this.ctx.limits.maxPageSize);
  }

  private checkQueue(queue: string): void {
    const problem = checkName('queue', queue, this.ctx.limits);
    if (problem) throw new SeppError('invalid_argument', problem.message);
  }
}

/** Summaries of the jobs `seqs` names, in that order (a job gone meanwhile is left out). */
export function* summariesInOrder(view: StoreView, seqs: readonly number[]): Op<JobSummary[]> {
  if (seqs.length === 0) return [];
  const bySeq = new Map((yield* view.jobs.summaries(seqs)).map((row) => [row.seq, row]));
  return seqs.flatMap((seq) => {
    const row = bySeq.get(seq);
    return row === undefined ? [] : [summaryFromRow(row)];
  });
}

export function summaryFromRow(row: JobSummaryRow): JobSummary {
  return {
    id: row.id,
    seq: row.seq,
    queue: row.queue,
    type: row.type,
    state: row.state as JobState,
    priority: row.priority,
    contentType: row.content_type,
    payloadBytes: row.payload_bytes,
    attempt: row.attempt,
    maxAttempts: row.attempt_base + row.max_attempts,
    idempotencyKey: row.idempotency_key,
    enqueuedAtMs: row.enqueued_at_ms,
    runAtMs: row.run_at_ms,
    leaseDeadlineMs: row.lease_deadline_ms,
    leasedAtMs: row.leased_at_ms,
    workerId: row.worker_id,
    lastError: row.last_error,
    deadReason: row.dead_reason as DeadReason | null,
    failedAtMs: row.failed_at_ms,
    completedAtMs: row.completed_at_ms,
    expiresAtMs: row.expires_at_ms,
    cancelledAtMs: row.cancelled_at_ms,
    cancelledBy: row.cancelled_by,
    group: row.group_key,
  };
}

// Cursors are opaque to callers: base64url of a tagged position, so a cursor of one
// list handed to another is refused instead of silently misread.
function encodeCursor(position: string): string {
  return Buffer.from(position).toString('base64url');
}

function badCursor(): SeppError {
  return new SeppError('invalid_argument', 'cursor is not one this list issued; start again without it');
}

function decodeSeqCursor(cursor: string | undefined, descending: boolean): number {
  if (cursor === undefined || cursor === '') return descending ? Number.MAX_SAFE_INTEGER : 0;
  const match = /^s(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) throw badCursor();
  return Number(match[1]);
}

function decodeDeadCursor(
  cursor: string | undefined,
  descending: boolean,
): { failedAtMs: number; seq: number } {
  if (cursor === undefined || cursor === '') {
    return descending
      ? { failedAtMs: Number.MAX_SAFE_INTEGER, seq: Number.MAX_SAFE_INTEGER }
      : { failedAtMs: -1, seq: -1 };
  }
  const match = /^d(\d{1,16}):(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) throw badCursor();
  return { failedAtMs: Number(match[1]), seq: Number(match[2]) };
}

/** The outcome window as a person reads it: `5 minutes`, `90 s`, `off`. */
function formatOutcomeWindow(ms: number): string {
  if (ms === 0) return 'off';
  if (ms % 60_000 === 0) return `${ms / 60_000} minute${ms === 60_000 ? '' : 's'}`;
  return `${ms / 1000} s`;
}

/** Dependents GetJob lists (oldest first); the flow (GetFlow) has them all. */
const dependentsShown = 100;

/** A job in a workflow: the jobs it depends on, those that depend on it, its batch. */
function* addWorkflowLinks(deps: DependencyReads, info: JobInfo, flags: number): Op<void> {
  const stateOf = (state: string | null): JobState | null => (state === null ? null : (state as JobState));
  if (waitsOnOthers(flags)) {
    info.dependencies = (yield* deps.of(info.id)).map((edge) => ({
      id: edge.parent_id,
      queue: edge.parent_queue,
      type: edge.parent_type,
      state: stateOf(edge.parent_state),
      edge: shownEdge(edge.edge_state, edge.parent_state),
      name: edge.name,
    }));
  }
  if (dependedOn(flags)) {
    info.dependents = (yield* deps.dependentsOf({ parentId: info.id, limit: dependentsShown })).map(
      (row) => ({
        id: row.id,
        queue: row.queue,
        type: row.type,
        state: stateOf(row.state),
        edge: shownEdge(row.edge_state, info.state),
        name: null,
      }),
    );
  }
  if (inBatch(flags)) {
    const membership = yield* deps.membership(info.id);
    if (membership !== undefined) info.batchId = membership.batch_id;
  }
}
