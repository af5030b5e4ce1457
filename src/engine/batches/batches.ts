/**
 * Batches (issue 33): a set of jobs with completion jobs. Jobs are added while the batch
 * is open (and, once sealed, by its own running members); each member's end is counted in
 * the unit that ends it (`memberEnded`, through the context's `jobEnded`), and the unit in
 * which the last member of a sealed batch ends — or the seal, when nothing is pending —
 * ends the batch and enqueues its completion jobs. The batch moves to `ended` in one
 * statement that checks it was sealed with nothing pending, so exactly one unit does it,
 * also across a crash (docs/decisions/0101-workflows-design.md). The unit that counts the
 * first member's death enqueues `on_death` at once, whether the batch is open or sealed:
 * the statement that counts a death names the batch's first dead member only while none
 * is named, so exactly one unit finds its own member there. What the completion jobs are
 * (their checks, their payload, their enqueue) is completions.ts.
 */
import type { BatchMemberRow, BatchRow, Dependencies, MemberState } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import { formatDurationMs as formatDuration } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { type JobIdGenerator, normalizeJobId } from '../jobs/index.ts';
import { namePageSize } from '../name-pages.ts';
import type { EnqueueRequest, EnqueueResult, JobState } from '../types.ts';
import type {
  BatchAddResult,
  BatchInfo,
  BatchListQuery,
  BatchMember,
  BatchPage,
  CreateBatchRequest,
} from '../workflow-types.ts';
import { type BatchCaller, checkOwner } from './batch-access.ts';
import {
  BatchCompletions,
  type EnqueueWithin,
  type StoredCompletion,
  storedCompletion,
} from './completions.ts';
import type { LeaseTokens } from './lease-tokens.ts';

/** Jobs one batch may ever hold. */
export const maxBatchMembers = 100_000;

export interface BatchDeps {
  ctx: EngineContext;
  ids: JobIdGenerator;
  /** Enqueues inside a running unit, each job on its own merits (the Enqueuer's enqueueWithin). */
  enqueueWithin: EnqueueWithin;
  /** Throws while enqueues are refused (a full disk). */
  checkRoom: () => void;
  /** Checks the token a member adds with (lease-tokens.ts). */
  leaseTokens: LeaseTokens;
}

export class Batches {
  private readonly completions: BatchCompletions;

  constructor(private readonly deps: BatchDeps) {
    this.completions = new BatchCompletions(deps.enqueueWithin);
  }

  /**
   * Creates a batch, enqueues its first members and seals it if asked (`seal`, or
   * `sealIfAllStored` when no member was refused), in one unit.
   */
  async create(request: CreateBatchRequest, audit?: AuditInput): Promise<BatchAddResult> {
    const { ctx, ids } = this.deps;
    const onCompleteJson = storedCompletion(ctx, 'on_complete', request.onComplete);
    const onSuccessJson = storedCompletion(ctx, 'on_success', request.onSuccess);
    const onDeathJson = storedCompletion(ctx, 'on_death', request.onDeath);
    const jobs = request.jobs ?? [];
    this.checkJobs(jobs.length, 0);
    if (jobs.length > 0) this.deps.checkRoom();
    return ctx.write(
      function* (this: Batches, tx: StoreTx): Op<BatchAddResult> {
        const store = this.capability(tx);
        if (request.owner !== undefined) yield* this.checkOpenBatches(store, request.owner);
        const id = ids.next(ctx.clock.nowMs());
        yield* store.createBatch({
          id,
          nowMs: ctx.clock.nowMs(),
          onCompleteJson,
          onSuccessJson,
          onDeathJson,
          owner: request.owner ?? '',
        });
        const results = yield* this.addIn(tx, store, id, jobs, audit);
        const seal =
          request.seal === true || (request.sealIfAllStored === true && results.every((result) => result.ok));
        if (seal) yield* this.sealIn(tx, store, id);
        return { batch: infoOf((yield* store.batch(id))!), results };
      }.bind(this),
    );
  }

  /**
   * Adds jobs to a batch: an open one, or a sealed one when `fromMember` names a member
   * of it that has not ended and runs now, `memberToken` being the token of its lease
   * (a running job fanning out into its own batch). Only the worker the lease was handed to
   * holds that token: a key that read the member's id and attempt (GetJob) cannot add
   * (checkMember, lease-tokens.ts). `seal` is the owner's (or an admin's) also then.
   * `sealIfAllStored` seals in the same unit only if no job was refused (ignored with `seal`); an
   * add with it that finds the batch no longer open is the repeat of one that sealed it (its
   * answer lost) when every job is found stored by its key as a member of this batch: it is
   * answered as that add was, else refused as any add to a sealed batch.
   */
  async add(
    batchId: string,
    jobs: readonly EnqueueRequest[],
    options: {
      seal?: boolean;
      sealIfAllStored?: boolean;
      fromMember?: string;
      memberToken?: string;
      caller?: BatchCaller;
    } = {},
    audit?: AuditInput,
  ): Promise<BatchAddResult> {
    const id = checkBatchId(batchId);
    const fromMember = options.fromMember === undefined ? undefined : checkMemberId(options.fromMember);
    const memberToken = fromMember === undefined ? undefined : checkMemberToken(options.memberToken);
    if (jobs.length > 0) this.deps.checkRoom();
    this.checkJobs(jobs.length, 0);
    return this.deps.ctx.write(
      function* (this: Batches, tx: StoreTx): Op<BatchAddResult> {
        const store = this.capability(tx);
        const row = yield* this.find(store, id);
        if (fromMember !== undefined) {
          yield* checkMember(tx, store, id, fromMember, (attempt) =>
            this.deps.leaseTokens.matches(fromMember, attempt, memberToken!),
          );
          // A member adds; sealing stays its owner's (or an admin's): the token of a member's lease
          // let another key's add seal an open batch, ending it before its owner had added all.
          if (options.seal === true || options.sealIfAllStored === true)
            checkOwner(row, options.caller, 'seal');
        } else if (row.state !== 'open') {
          const refusal = new SeppError(
            'failed_precondition',
            `batch ${id} is ${row.state}: jobs are added to an open batch, or to a sealed one by a running member ` +
              '(from_member with the token of its lease, from_member_token)',
          );
          // With no jobs it is found at once: sealed already, as a SealBatch repeated would find it.
          if (options.sealIfAllStored !== true || options.seal === true) throw refusal;
          checkOwner(row, options.caller, 'add jobs to');
          // A throw rolls the unit back, with the enqueues that found the jobs.
          const results = yield* this.deps.enqueueWithin(tx, jobs, audit);
          for (const result of results) {
            const found = result.ok && (result.deduplicated || result.debounced === true);
            if (!found || (yield* store.membership(result.jobId))?.batch_id !== id) throw refusal;
          }
          return { batch: infoOf(row), results };
        } else checkOwner(row, options.caller, 'add jobs to');
        this.checkJobs(jobs.length, row.members);
        const results = yield* this.addIn(tx, store, id, jobs, audit);
        const seal =
          options.seal === true || (options.sealIfAllStored === true && results.every((result) => result.ok));
        if (seal) yield* this.sealIn(tx, store, id);
        return { batch: infoOf((yield* store.batch(id))!), results };
      }.bind(this),
    );
  }

  /** Seals a batch (nothing more is added but by its running members); ends it at once if nothing is pending. */
  async seal(batchId: string, caller?: BatchCaller): Promise<BatchInfo> {
    const id = checkBatchId(batchId);
    return this.deps.ctx.write(
      function* (this: Batches, tx: StoreTx): Op<BatchInfo> {
        const store = this.capability(tx);
        checkOwner(yield* this.find(store, id), caller, 'seal');
        yield* this.sealIn(tx, store, id);
        return infoOf((yield* store.batch(id))!);
      }.bind(this),
    );
  }

  /** A batch and up to `limit` of its members after position `afterPosition` (-1: from the first). */
  async get(
    batchId: string,
    page: { afterPosition?: number; limit?: number } = {},
  ): Promise<{ batch: BatchInfo; members: (BatchMember & { position: number })[] }> {
    const id = checkBatchId(batchId);
    const limit = Math.min(Math.max(page.limit ?? 100, 0), this.deps.ctx.limits.maxPageSize);
    const { kind } = this.deps.ctx.store;
    const retentionMs = this.deps.ctx.limits.batchRetentionMs;
    return this.deps.ctx.read(function* (view) {
      const store = view.dependencies;
      if (store === undefined) throw unsupported(kind);
      const row = yield* store.batch(id);
      if (row === undefined) throw notFound(id, retentionMs);
      const members =
        limit === 0
          ? []
          : yield* store.batchMembers({ batchId: id, afterPosition: page.afterPosition ?? -1, limit });
      return { batch: infoOf(row), members: members.map(memberOf) };
    });
  }

  /** A page of batches, newest first (ListBatches): one bounded range of an index. */
  async list(query: BatchListQuery = {}): Promise<BatchPage> {
    const { ctx } = this.deps;
    const limit = namePageSize(query, ctx.limits);
    const beforeId = batchCursorStart(query.cursor);
    const kind = ctx.store.kind;
    return ctx.read(function* (view) {
      const store = view.dependencies;
      if (store === undefined) throw unsupported(kind);
      // One more than the page: whether another page follows, without a count.
      const rows = yield* store.listBatches({
        state: query.state ?? null,
        owner: query.owner ?? null,
        beforeId,
        limit: limit + 1,
      });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        batches: page.map(infoOf),
        nextCursor: rows.length > limit && last !== undefined ? encodeBatchCursor(last.id) : null,
      };
    });
  }

  /**
   * The retention sweep (in the maintenance pass's write): batches ended before
   * `nowMs - limits.batch_retention_ms` and their member rows, up to `limit` rows of each;
   * returns how many rows went, and whether a chunk was full (more waits).
   */
  *sweep(tx: StoreTx, nowMs: number, limit: number): Op<{ swept: number; more: boolean }> {
    const store = tx.dependencies;
    if (store === undefined) return { swept: 0, more: false };
    const beforeMs = nowMs - this.deps.ctx.limits.batchRetentionMs;
    const { members, batches } = yield* store.sweepBatches({ beforeMs, limit });
    return { swept: members + batches, more: members === limit || batches === limit };
  }

  /**
   * The end of member `jobId` (in the unit that ended it): counted once; the batch's first
   * death enqueues its on_death job; the last end of a sealed batch ends it.
   */
  *memberEnded(tx: StoreTx, jobId: string, end: Exclude<MemberState, 'pending'>): Op<void> {
    const store = tx.dependencies;
    if (store === undefined) return;
    const counted = yield* store.memberEnded({ jobId, state: end });
    if (counted === null) return;
    if (counted.firstDeath) {
      // Its on_death job, if it has one, is enqueued in this unit; the event goes either way.
      const row = (yield* store.batch(counted.batchId))!;
      const now = yield* this.completions.onFirstDeath(tx, store, row, jobId);
      this.recordBatch(tx, 'batch_first_death', now.on_death_json, now);
    }
    yield* this.endIfDone(tx, store, counted.batchId);
  }

  private *addIn(
    tx: StoreTx,
    store: Dependencies,
    batchId: string,
    jobs: readonly EnqueueRequest[],
    audit: AuditInput | undefined,
  ): Op<EnqueueResult[]> {
    if (jobs.length === 0) return [];
    const results = yield* this.deps.enqueueWithin(tx, jobs, audit);
    // A duplicate (an idempotency key seen before) is the original job, and an enqueue a
    // debounced job absorbed is that job: neither joins the batch here.
    const added = results.flatMap((r) => (r.ok && !r.deduplicated && r.debounced !== true ? [r.jobId] : []));
    if (added.length > 0) yield* store.addMembers({ batchId, jobIds: added });
    return results;
  }

  /** Refuses a new batch to an owner that holds limits.max_open_batches_per_key not ended (in the write). */
  private *checkOpenBatches(store: Dependencies, owner: string): Op<void> {
    const limit = this.deps.ctx.limits.maxOpenBatchesPerKey;
    const open = yield* store.unendedBatchesOf({ owner, limit });
    if (open < limit) return;
    const who = owner === '' ? 'callers without an API key hold' : `API key ${owner} holds`;
    throw new SeppError(
      'resource_exhausted',
      `${who} ${limit} batches not ended, the limit per key (limits.max_open_batches_per_key); ` +
        'seal them and let them end, or cancel some, before creating more',
    );
  }

  private *sealIn(tx: StoreTx, store: Dependencies, batchId: string): Op<void> {
    if (yield* store.seal({ batchId, nowMs: this.deps.ctx.clock.nowMs() })) {
      yield* this.endIfDone(tx, store, batchId);
    }
  }

  /** Ends the batch if it is sealed with nothing pending, and enqueues its completion jobs, in `tx`. */
  private *endIfDone(tx: StoreTx, store: Dependencies, batchId: string): Op<void> {
    const row = yield* store.endBatch({ batchId, nowMs: this.deps.ctx.clock.nowMs() });
    if (row === undefined) return;
    const ended = yield* this.completions.onEnd(tx, store, row);
    this.recordBatch(tx, 'batch_ended', row.on_complete_json, ended);
  }

  /**
   * Records a batch's event while someone subscribes: `jobId` is the batch's id, `queue`
   * and `type` those of the completion job it goes with (`json`; empty without one).
   */
  private recordBatch(
    tx: StoreTx,
    kind: 'batch_ended' | 'batch_first_death',
    json: string | null,
    row: BatchRow,
  ): void {
    const { ctx } = this.deps;
    if (!ctx.events.recording) return;
    const job = json === null ? null : (JSON.parse(json) as StoredCompletion);
    ctx.record(tx, {
      sequence: 0,
      atMs: ctx.clock.nowMs(),
      jobId: row.id,
      queue: job?.queue ?? '',
      type: job?.type ?? '',
      attempt: 0,
      kind,
      batch: infoOf(row),
    });
  }

  private capability(tx: StoreTx): Dependencies {
    if (tx.dependencies === undefined) throw unsupported(this.deps.ctx.store.kind);
    return tx.dependencies;
  }

  private *find(store: Dependencies, id: string): Op<BatchRow> {
    const row = yield* store.batch(id);
    if (row === undefined) throw notFound(id, this.deps.ctx.limits.batchRetentionMs);
    return row;
  }

  private checkJobs(adding: number, members: number): void {
    const max = this.deps.ctx.limits.maxBatchJobs;
    if (adding > max) {
      throw SeppError.tooLarge(
        `jobs: ${adding} jobs in one call, the limit is ${max} (limits.max_batch_jobs); add them in several calls`,
      );
    }
    if (members + adding > maxBatchMembers) {
      throw SeppError.tooLarge(
        `jobs: the batch has ${members} members and can hold ${maxBatchMembers}; ` +
          `add at most ${maxBatchMembers - members} more, or start another batch`,
      );
    }
  }
}

export function infoOf(row: BatchRow): BatchInfo {
  return {
    id: row.id,
    state: row.state,
    createdAtMs: row.created_at_ms,
    sealedAtMs: row.sealed_at_ms,
    endedAtMs: row.ended_at_ms,
    members: row.members,
    pending: row.pending,
    completed: row.completed,
    dead: row.dead,
    cancelled: row.cancelled,
    hasOnComplete: row.on_complete_json !== null,
    hasOnSuccess: row.on_success_json !== null,
    hasOnDeath: row.on_death_json !== null,
    completeJobId: row.complete_job_id,
    successJobId: row.success_job_id,
    firstDeadId: row.first_dead_id,
    deathJobId: row.death_job_id,
    completionError: row.completion_error,
    owner: row.owner,
  };
}

function memberOf(row: BatchMemberRow): BatchMember & { position: number } {
  return {
    jobId: row.job_id,
    position: row.position,
    memberState: row.member_state,
    jobState: row.job_state as JobState | null,
  };
}

function checkBatchId(id: string): string {
  const normal = normalizeJobId(id);
  if (normal === null)
    throw new SeppError(
      'invalid_argument',
      `batch_id: ${JSON.stringify(id.slice(0, 64))} is no batch id (a UUID)`,
    );
  return normal;
}

function checkMemberId(id: string): string {
  const normal = normalizeJobId(id);
  if (normal === null)
    throw new SeppError('invalid_argument', `from_member: ${JSON.stringify(id.slice(0, 64))} is no job id`);
  return normal;
}

/**
 * The token an add from a member must carry. Without one — a client that still sends only
 * the attempt (`from_member_attempt`), which any key reading jobs sees — the add is refused.
 */
function checkMemberToken(token: string | undefined): string {
  if (token === undefined || token === '') {
    throw new SeppError(
      'permission_denied',
      "from_member_token: required with from_member, the lease_token of the member's current lease, " +
        'which only its worker is handed (the SDKs pass it for a handler adding to its own batch); ' +
        'from_member_attempt no longer proves a member',
    );
  }
  return token;
}

/**
 * Refuses an add `from_member` unless `jobId` is a pending member of batch `batchId`,
 * leased now, and the add carries its lease's token (`tokenMatches` its attempt): only the
 * worker running that attempt was handed it (a job ready, scheduled or on another attempt,
 * or another job's token, proves nothing).
 */
function* checkMember(
  tx: StoreTx,
  store: Dependencies,
  batchId: string,
  jobId: string,
  tokenMatches: (attempt: number) => boolean,
): Op<void> {
  const membership = yield* store.membership(jobId);
  if (membership?.batch_id !== batchId) {
    throw new SeppError(
      'failed_precondition',
      `from_member: job ${jobId} is no member of batch ${batchId}; only a running member adds to its own batch`,
    );
  }
  if (membership.state !== 'pending') {
    throw new SeppError(
      'failed_precondition',
      `from_member: member ${jobId} of batch ${batchId} has ended (${membership.state}); a member adds only while it runs`,
    );
  }
  const job = yield* tx.jobs.attempt(jobId);
  if (job?.state !== 'leased') {
    throw new SeppError(
      'failed_precondition',
      `from_member: member ${jobId} is not running (it is ${job?.state ?? 'gone'}); a member adds to its batch ` +
        'only from the handler running it, with the token of its lease',
    );
  }
  if (!tokenMatches(job.attempt)) {
    // One answer for a wrong token, another job's and an earlier attempt's: which it was is
    // nothing a caller without the right one should learn.
    throw new SeppError(
      'permission_denied',
      `from_member_token: not the token of member ${jobId}'s current lease: only the worker holding ` +
        'that lease adds to its batch (a lease that expired and was taken again has a new token)',
    );
  }
}

function notFound(id: string, retentionMs: number): SeppError {
  return new SeppError(
    'not_found',
    `batch ${id} does not exist: never created, or ended more than ${formatDuration(retentionMs)} ago ` +
      'and swept (limits.batch_retention_ms)',
  );
}

/** The batch a page starts after (its id): a cursor is `b.` and the last batch id of the page before. */
function batchCursorStart(cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null;
  const id = cursor.startsWith('b.') ? normalizeJobId(cursor.slice(2)) : null;
  if (id === null || encodeBatchCursor(id) !== cursor) {
    throw new SeppError(
      'invalid_argument',
      'page_token is not one this server gave for batches; pass back next_page_token unchanged, or none for the first page',
    );
  }
  return id;
}

function encodeBatchCursor(id: string): string {
  return `b.${id}`;
}

function unsupported(kind: string): SeppError {
  return new SeppError(
    'failed_precondition',
    `the ${kind} store keeps no batches (batches need the SQLite store)`,
  );
}
