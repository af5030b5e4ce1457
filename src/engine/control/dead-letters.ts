/**
 * Dead letters through the protocol: pages of a queue's dead jobs (oldest
 * failure first, optionally of one reason), and requeue or delete of chosen
 * ids. "All" of them (optionally of one reason, or with some error text) is
 * a bulk operation (bulk-operations.ts), so one huge dead-letter queue never
 * becomes one huge transaction.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import { checkIdsPerCall } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import type { JobFilter } from '../control-types.ts';
import { SeppError } from '../errors.ts';
import { jobInfoFromRow } from '../jobs/index.ts';
import { checkQueueName } from '../queues/index.ts';
import type { DeadLetterQuery, DeadLetterSelection, JobInfo, Page } from '../types.ts';
import { afterQueueLookup } from './bulk-filter.ts';

const deadPageDefault = 100;
/** How far `waitingOn` counts the jobs waiting on dead letters (beyond it: `more`). */
const waitingCounted = 1000;

/**
 * A queue whose dead letters can be asked for: declared in the config, or used
 * (a job was enqueued to it, or it was paused) — here or, on a store other servers
 * share, through another server (`ctx.queueExists`, as `view` sees it). Any other name
 * is NOT_FOUND, as queue_service.proto says: most likely a typo, which an empty answer
 * would hide.
 */
function* requireQueue(ctx: EngineContext, view: StoreView, queue: string): Op<void> {
  checkQueueName(ctx, queue);
  if (!ctx.queues.isDeclared(queue) && !(yield* ctx.queueExists(view, queue))) throw missing(queue);
}

/** `then()` once `requireQueue` passed, checked before the call's transaction (afterQueueLookup). */
function afterQueueRequired<T>(ctx: EngineContext, queue: string, then: () => Promise<T>): Promise<T> {
  checkQueueName(ctx, queue);
  if (ctx.queues.isDeclared(queue)) return then();
  return afterQueueLookup(ctx, queue, (found) => {
    if (!found) throw missing(queue);
    return then();
  });
}

/**
 * The ids that can match a job: one with a NUL in it cannot (no job id holds one), and
 * PostgreSQL would refuse it as text (22021) — it matches nothing, as on SQLite.
 */
function matchable(jobIds: readonly string[]): readonly string[] {
  return jobIds.some((id) => id.includes('\0')) ? jobIds.filter((id) => !id.includes('\0')) : jobIds;
}

function missing(queue: string): SeppError {
  return new SeppError(
    'not_found',
    `queue ${JSON.stringify(queue)} does not exist: no job was ever enqueued to it and the config does not declare it; check the name`,
  );
}

export class DeadLetters {
  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
  ) {}

  /**
   * "All" of a queue's dead letters as a bulk filter, or null for a queue the
   * config declares that has never held a job (nothing to change).
   */
  async filterOfAll(selection: Extract<DeadLetterSelection, { all: true }>): Promise<JobFilter | null> {
    return afterQueueRequired(this.ctx, selection.queue, async () => {
      if (!this.ctx.queues.exists(selection.queue)) return null;
      return {
        queue: selection.queue,
        states: ['dead'],
        ...(selection.reason === undefined ? {} : { deadReason: selection.reason }),
        ...(selection.errorText === undefined ? {} : { errorText: selection.errorText }),
        ...(selection.enqueuedBeforeMs === undefined ? {} : { enqueuedBeforeMs: selection.enqueuedBeforeMs }),
      };
    });
  }

  *list(view: StoreView, query: DeadLetterQuery): Op<Page<JobInfo>> {
    // A name no queue can have, or of a queue that does not exist, is a mistake to report, not an empty page.
    yield* requireQueue(this.ctx, view, query.queue);
    const pageSize = Math.min(query.pageSize ?? deadPageDefault, this.ctx.limits.maxPageSize);
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new SeppError(
        'invalid_argument',
        `page_size must be a positive integer (at most ${this.ctx.limits.maxPageSize})`,
      );
    }
    const after = decodeCursor(query.cursor);
    const rows = yield* view.deadLetters.page({
      queue: query.queue,
      reason: query.reason ?? null,
      after,
      limit: pageSize + 1,
    });
    const items = rows.slice(0, pageSize).map(jobInfoFromRow);
    const last = items.at(-1);
    return {
      items,
      nextCursor: rows.length > pageSize && last ? encodeCursor(last.failedAtMs ?? 0, last.seq) : null,
    };
  }

  /**
   * How many jobs wait on chosen dead letters of a queue (under the `wait` policy): those a
   * delete of them cancels (dependencies/release.ts), counted up to 1,000 (`more`: beyond).
   */
  *waitingOn(
    view: StoreView,
    selection: { queue: string; jobIds: readonly string[] },
  ): Op<{ waiting: number; more: boolean }> {
    const { queue, jobIds } = selection;
    yield* requireQueue(this.ctx, view, queue);
    checkIdsPerCall('job_ids', jobIds.length, this.ctx.limits.maxBatchJobs);
    const deps = view.dependencies;
    const ids = matchable(jobIds);
    if (deps === undefined || ids.length === 0) return { waiting: 0, more: false };
    const counted = yield* deps.waitingOnDead({ queue, ids, limit: waitingCounted + 1 });
    return { waiting: Math.min(counted, waitingCounted), more: counted > waitingCounted };
  }

  /** Requeues (fresh attempt budget) or deletes chosen dead letters; returns how many changed. */
  async change(
    selection: { queue: string; jobIds: readonly string[] },
    action: 'requeue' | 'delete',
    audit: AuditInput | undefined,
  ): Promise<number> {
    const { queue, jobIds } = selection;
    // A name no queue can have, or of a queue that does not exist, matches nothing, but it must
    // not reach the audit log (whose target is bounded) or look like a successful change of nothing.
    return afterQueueRequired(this.ctx, queue, () => {
      checkIdsPerCall('job_ids', jobIds.length, this.ctx.limits.maxBatchJobs);
      return this.ctx.write((tx) => this.changeSome(tx, queue, jobIds, action, audit));
    });
  }

  /** Requeues or deletes the chosen dead letters of a queue (ids that are not one change nothing). */
  *changeSome(
    tx: StoreTx,
    queue: string,
    jobIds: readonly string[],
    action: 'requeue' | 'delete',
    audit: AuditInput | undefined,
  ): Op<number> {
    let changed = 0;
    const nowMs = this.ctx.clock.nowMs();
    for (const id of matchable(jobIds)) {
      if (action === 'requeue') {
        if (yield* tx.deadLetters.requeue({ queue, id, nowMs })) changed++;
        continue;
      }
      // A deleted dead letter releases its idempotency key: the same work may be enqueued again.
      // What still waits on it (the `wait` policy) is cancelled: no requeue can release it now.
      const deleted = yield* tx.deadLetters.delete({ queue, id });
      if (deleted === undefined) continue;
      yield* this.ctx.releaseKey(tx, queue, deleted.idempotency_key, deleted.id);
      yield* this.ctx.jobDeleted(tx, {
        seq: deleted.seq,
        id: deleted.id,
        flags: deleted.dependency_flags,
        state: 'dead',
      });
      changed++;
    }
    yield* this.ctx.count(tx, queue, 'dead', action === 'requeue' ? 'ready' : null, changed);
    if (action === 'requeue') {
      this.ctx.jobsReady(tx, queue, changed);
      this.ctx.emit(tx, { kind: 'requeued', queue, count: changed });
    }
    if (audit !== undefined) yield* this.audit.write(tx, audit, { jobIds, changed });
    return changed;
  }
}

function encodeCursor(failedAtMs: number, seq: number): string {
  return Buffer.from(`${failedAtMs}:${seq}`).toString('base64url');
}

function decodeCursor(cursor: string | undefined): { failedAtMs: number; seq: number } {
  if (cursor === undefined || cursor === '') return { failedAtMs: -1, seq: -1 };
  const match = /^(\d+):(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null) throw new SeppError('invalid_argument', 'page_token is not one this server issued');
  return { failedAtMs: Number(match[1]), seq: Number(match[2]) };
}
