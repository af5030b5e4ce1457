/**
 * What an operator can do to jobs beyond the protocol's calls: requeue one
 * job, dead-letter one job, purge a queue's waiting jobs (which releases
 * their idempotency keys, as any deletion does). Each is a write
 * operation (group commit) and may carry an audit entry written in the same
 * transaction. Changes that can touch very many jobs run in chunks, each its
 * own transaction, so one purge never becomes one huge transaction that
 * stalls every producer and worker behind it.
 */

import type { Op } from '../../store/op.ts';
import type { AttemptRow } from '../../store/rows.ts';
import type { StoreTx, WriteUnit } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { eventAbout } from '../events/index.ts';
import { checkQueueExists, checkQueueName } from '../queues/index.ts';
import type { JobState } from '../types.ts';

/** Rows changed per transaction by chunked changes. */
export const chunkRows = 5000;

export class OperatorActions {
  constructor(
    private readonly ctx: EngineContext,
    private readonly audit: AuditLog,
  ) {}

  /** A dead, completed or cancelled job back to ready now, with a fresh attempt budget. */
  requeueJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.ctx.write((tx) => this.requeueOne(tx, jobId, audit));
  }

  private *requeueOne(
    tx: StoreTx,
    jobId: string,
    audit: AuditInput | undefined,
  ): Op<{ previousState: JobState }> {
    const row = yield* this.find(tx, jobId);
    if (row.state !== 'dead' && row.state !== 'completed' && row.state !== 'cancelled') {
      throw new SeppError(
        'failed_precondition',
        `job ${jobId} is ${row.state}; only dead, completed or cancelled jobs can be requeued`,
      );
    }
    const changed = yield* tx.control.requeue({ seq: row.seq, nowMs: this.ctx.clock.nowMs() });
    yield* this.ctx.count(tx, row.queue, row.state, 'ready', changed ? 1 : 0);
    this.ctx.jobsReady(tx, row.queue, 1);
    this.ctx.emit(tx, { kind: 'requeued', queue: row.queue, count: 1 });
    const outcome = { previousState: row.state };
    if (audit) yield* this.audit.write(tx, audit, outcome);
    return outcome;
  }

  /** A ready or scheduled job to the dead letters now (reason dead_lettered). */
  deadLetterJob(jobId: string, audit?: AuditInput): Promise<{ previousState: JobState }> {
    return this.ctx.write((tx) => this.deadLetterOne(tx, jobId, audit));
  }

  private *deadLetterOne(
    tx: StoreTx,
    jobId: string,
    audit: AuditInput | undefined,
  ): Op<{ previousState: JobState }> {
    const row = yield* this.find(tx, jobId);
    if (row.state !== 'ready' && row.state !== 'scheduled') {
      const why =
        row.state === 'leased'
          ? 'a worker holds its lease; the worker can nack it with dead-letter, or wait for the lease to end'
          : 'only ready or scheduled jobs can be dead-lettered';
      throw new SeppError('failed_precondition', `job ${jobId} is ${row.state}: ${why}`);
    }
    const nowMs = this.ctx.clock.nowMs();
    const changed = yield* tx.control.deadLetter({ seq: row.seq, nowMs });
    yield* this.ctx.count(tx, row.queue, row.state, 'dead', changed ? 1 : 0);
    this.ctx.emit(tx, { kind: 'dead_lettered', queue: row.queue, reason: 'dead_lettered', count: 1 });
    if (this.ctx.events.recording) {
      this.ctx.record(tx, {
        ...eventAbout(row, nowMs),
        kind: 'dead_lettered',
        reason: 'dead_lettered',
        error: null,
      });
    }
    const outcome = { previousState: row.state };
    if (audit) yield* this.audit.write(tx, audit, outcome);
    return outcome;
  }

  /**
   * Deletes every ready and scheduled job of a queue (leased jobs finish normally); returns how many.
   * A bad or unknown queue name throws at once, before anything is written.
   */
  purgeQueue(queue: string, audit?: AuditInput): Promise<{ deleted: number }> {
    checkQueueName(this.ctx, queue);
    checkQueueExists(this.ctx, queue);
    return this.purgeChunks(queue, audit);
  }

  private async purgeChunks(queue: string, audit?: AuditInput): Promise<{ deleted: number }> {
    const tracked = audit === undefined ? undefined : { input: audit, id: undefined };
    let deleted = 0;
    for (const state of ['ready', 'scheduled'] as const) {
      deleted = await this.inChunks(
        tracked,
        deleted,
        (tx) => this.purgeChunk(tx, queue, state),
        (total, done) => ({ deleted: total, done: done && state === 'scheduled' }),
      );
    }
    return { deleted };
  }

  /**
   * Runs `chunk` in one transaction after another until it changes fewer than
   * chunkRows rows; returns `startTotal` plus the rows changed. The audit entry
   * is written with the first chunk (so no row changes without it) and its
   * totals are updated with each later one.
   */
  async inChunks(
    audit: ChunkedAudit | undefined,
    startTotal: number,
    chunk: WriteUnit<number>,
    outcome: (total: number, done: boolean) => Record<string, unknown>,
  ): Promise<number> {
    let total = startTotal;
    for (;;) {
      const changed = await this.ctx.write((tx) => this.chunkWithAudit(tx, chunk, audit, total, outcome));
      total += changed;
      if (changed < chunkRows) return total;
    }
  }

  /** One chunk, with its audit entry written (the first chunk) or updated (the others). */
  private *chunkWithAudit(
    tx: StoreTx,
    chunk: WriteUnit<number>,
    audit: ChunkedAudit | undefined,
    totalBefore: number,
    outcome: (total: number, done: boolean) => Record<string, unknown>,
  ): Op<number> {
    const n = yield* chunk(tx);
    if (audit !== undefined) {
      const details = outcome(totalBefore + n, n < chunkRows);
      if (audit.id === undefined) audit.id = yield* this.audit.write(tx, audit.input, details);
      else yield* this.audit.update(tx, audit.id, audit.input, details);
    }
    return n;
  }

  private *purgeChunk(tx: StoreTx, queue: string, state: 'ready' | 'scheduled'): Op<number> {
    const rows = yield* tx.control.deleteWaitingMany({ queue, state, limit: chunkRows });
    for (const row of rows) yield* this.ctx.releaseKey(tx, queue, row.idempotency_key, row.id);
    yield* this.ctx.count(tx, queue, state, null, rows.length);
    this.ctx.emit(tx, { kind: 'purged', queue, count: rows.length });
    if (this.ctx.events.recording) {
      for (const job of rows) this.recordCancelled(tx, { ...job, queue }, state);
    }
    return rows.length;
  }

  private recordCancelled(
    tx: StoreTx,
    job: { id: string; queue: string; type: string; attempt: number },
    previousState: JobState,
  ): void {
    this.ctx.record(tx, { ...eventAbout(job, this.ctx.clock.nowMs()), kind: 'cancelled', previousState });
  }

  private *find(tx: StoreTx, jobId: string): Op<AttemptRow & { state: JobState }> {
    const row = yield* tx.jobs.attempt(jobId);
    if (row === undefined) throw new SeppError('not_found', `job ${jobId} does not exist`);
    return { ...row, state: row.state as JobState };
  }
}

/** An audit entry that follows a change made in chunks: written with the first, updated with the rest. */
export interface ChunkedAudit {
  readonly input: AuditInput;
  id: number | undefined;
}
