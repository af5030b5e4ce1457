/**
 * Dead letters through the protocol: pages of a queue's dead jobs (oldest
 * failure first, optionally of one reason), and requeue or delete of chosen
 * ids or of all of them. "All" runs in chunks, so one huge dead-letter queue
 * never becomes one huge transaction.
 */

import type { AdminStatements } from '../store/sqlite/admin-statements.ts';
import type { AuditInput } from './admin-types.ts';
import type { AuditLog } from './audit.ts';
import type { EngineContext, Write } from './context.ts';
import { SeppError } from './errors.ts';
import { jobInfoFromRow } from './job-rows.ts';
import { chunkRows, type OperatorActions } from './operator-actions.ts';
import { checkQueueName } from './queue-admin.ts';
import type { DeadLetterQuery, DeadLetterSelection, JobInfo, Page } from './types.ts';

const deadPageDefault = 100;

/**
 * A queue whose dead letters can be asked for: declared in the config, or used
 * (a job was enqueued to it, or it was paused). Any other name is NOT_FOUND,
 * as queue_service.proto says: most likely a typo, which an empty answer would hide.
 */
function requireQueue(ctx: EngineContext, queue: string): void {
  checkQueueName(ctx, queue);
  if (!ctx.queues.exists(queue) && !ctx.queues.isDeclared(queue)) {
    throw new SeppError(
      'not_found',
      `queue ${JSON.stringify(queue)} does not exist: no job was ever enqueued to it and the config does not declare it; check the name`,
    );
  }
}

export class DeadLetters {
  constructor(
    private readonly ctx: EngineContext,
    private readonly adminSql: AdminStatements,
    private readonly actions: OperatorActions,
    private readonly audit: AuditLog,
    private readonly write: Write,
  ) {}

  list(query: DeadLetterQuery): Page<JobInfo> {
    // A name no queue can have, or of a queue that does not exist, is a mistake to report, not an empty page.
    requireQueue(this.ctx, query.queue);
    const pageSize = Math.min(query.pageSize ?? deadPageDefault, this.ctx.limits.maxPageSize);
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new SeppError(
        'invalid_argument',
        `page_size must be a positive integer (at most ${this.ctx.limits.maxPageSize})`,
      );
    }
    const after = decodeCursor(query.cursor);
    const params = {
      queue: query.queue,
      after_failed_at_ms: after.failedAtMs,
      after_seq: after.seq,
      limit: pageSize + 1,
    };
    const rows =
      query.reason === undefined
        ? this.ctx.sql.deadPage.all(params)
        : this.ctx.sql.deadPageByReason.all({ ...params, reason: query.reason });
    const items = rows.slice(0, pageSize).map(jobInfoFromRow);
    const last = items.at(-1);
    return {
      items,
      nextCursor: rows.length > pageSize && last ? encodeCursor(last.failedAtMs ?? 0, last.seq) : null,
    };
  }

  /** Requeues (fresh attempt budget) or deletes dead letters; returns how many changed. */
  async change(
    selection: DeadLetterSelection,
    action: 'requeue' | 'delete',
    audit: AuditInput | undefined,
  ): Promise<number> {
    const { sql } = this.ctx;
    const { queue } = selection;
    // A name no queue can have, or of a queue that does not exist, matches nothing, but it must
    // not reach the audit log (whose target is bounded) or look like a successful change of nothing.
    requireQueue(this.ctx, queue);
    if ('jobIds' in selection) {
      if (selection.jobIds.length > this.ctx.limits.maxBatchJobs) {
        throw new SeppError(
          'resource_exhausted',
          `job_ids: at most ${this.ctx.limits.maxBatchJobs} per call`,
        );
      }
      return this.write((tx) => {
        let changed = 0;
        const nowMs = this.ctx.clock.nowMs();
        for (const id of selection.jobIds) {
          if (action === 'requeue') {
            changed += sql.requeueDeadById.run({ queue, id, now_ms: nowMs }).changes;
            continue;
          }
          // A deleted dead letter releases its idempotency key: the same work may be enqueued again.
          const deleted = sql.deleteDeadById.get({ queue, id });
          if (deleted === undefined) continue;
          this.ctx.releaseKey(queue, deleted.idempotency_key, deleted.id);
          changed++;
        }
        this.ctx.count(queue, 'dead', action === 'requeue' ? 'ready' : null, changed);
        if (action === 'requeue') {
          this.ctx.jobsReady(tx, queue, changed);
          this.ctx.emit(tx, { kind: 'requeued', queue, count: changed });
        }
        if (audit !== undefined) this.audit.write(audit, { jobIds: selection.jobIds, changed });
        return changed;
      });
    }
    const { reason } = selection;
    return this.actions.inChunks(
      audit === undefined ? undefined : { input: audit, id: undefined },
      0,
      (tx) => {
        const nowMs = this.ctx.clock.nowMs();
        let n: number;
        if (action === 'requeue') {
          n = (
            reason === undefined
              ? sql.requeueDeadChunk.run({ queue, now_ms: nowMs, limit: chunkRows })
              : this.adminSql.requeueDeadChunkByReason.run({ queue, reason, now_ms: nowMs, limit: chunkRows })
          ).changes;
          this.ctx.count(queue, 'dead', 'ready', n);
          this.ctx.jobsReady(tx, queue, n);
          this.ctx.emit(tx, { kind: 'requeued', queue, count: n });
        } else {
          const rows =
            reason === undefined
              ? sql.deleteDeadChunk.all({ queue, limit: chunkRows })
              : this.adminSql.deleteDeadChunkByReason.all({ queue, reason, limit: chunkRows });
          for (const row of rows) this.ctx.releaseKey(queue, row.idempotency_key, row.id);
          n = rows.length;
          this.ctx.count(queue, 'dead', null, n);
        }
        return n;
      },
      (changed, done) => ({ all: true, ...(reason === undefined ? {} : { reason }), changed, done }),
    );
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
