/**
 * AckBatch: a Work message's acks (or an AckBatch call's) in one write operation,
 * one outcome per ack, in order. When no queue keeps completed jobs (the common
 * case) the leased jobs are deleted with one store call (SQLite: a statement per
 * 50 acks, store/sqlite/leases.ts) and counted once per queue at the end, in the same
 * savepoint; an ack the delete did not match (not leased at that attempt, or gone)
 * is answered by the Settler afterwards, in order, which reads the job to say why.
 * Only the first ack of each job takes part in the delete; a job named again is
 * answered by the Settler too (not_found once the first deleted it, as one at a time).
 * Batches under 10 acks, and any ack while a queue keeps completed jobs, go through
 * the Settler one by one: below the 10-row statement the multi-row path cost more than
 * it saved (measured: +7 to +11 % per ack in pairs). Once a queue has had a job waiting
 * on others (a server that runs workflows), batches from 2 acks take the batch path: a
 * small batch of jobs others wait on is then kept completed in one statement and what
 * waits on them released as a set, instead of job by job and edge by edge (W5's Worker
 * sends many batches of 5: docs/decisions/0012, (h)). After a batch that kept more jobs
 * than it deleted, the next completes the jobs others wait on before the delete (`keptFirst`).
 */
import { batchMember, dependedOn, inBatch } from '../../store/dependencies.ts';
import type { CompletingAck } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { AckedRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { type DependencyQueues, releaseDependentsOfCompleted } from '../dependencies/index.ts';
import { SeppError } from '../errors.ts';
import type { FinishedOutcome } from '../finished-outcomes.ts';
import type { Ack, SettleOutcome } from '../types.ts';
import { checkAckResult, resultContentTypeOf } from './results.ts';
import { completedOutcome, type KeptJobs, type Settler } from './settle.ts';

/** The smallest batch the multi-row delete serves (its 10-row statement). */
const minBatchAcks = 10;
/** The smallest batch that takes the batch path on a server that runs workflows. */
const minWorkflowBatchAcks = 2;

export class AckBatches {
  /**
   * Which of the batch path's two statements runs first: the delete (jobs nobody waits on),
   * or, after a batch that kept more jobs than it deleted, the completion of the jobs others
   * wait on. Each matches only its own jobs (`dependency_flags` 0, or with jobsWaitOnIt), so
   * the order changes no outcome; it spares the probes of the statement that would miss
   * every ack of a batch of a flow's children (1.4 µs per ack, docs/decisions/0012, (k)).
   * A server without workflows never keeps a job for its dependents: the delete stays first.
   */
  private keptFirst = false;

  constructor(
    private readonly ctx: EngineContext,
    private readonly settler: Settler,
    private readonly dependencyQueues?: DependencyQueues,
  ) {}

  /** Acks each job on its own: one outcome per job, in order. A result too large fails the whole call. */
  async ackBatch(acks: readonly Ack[]): Promise<SettleOutcome[]> {
    const { limits } = this.ctx;
    for (const ack of acks) checkAckResult(ack, limits);
    if (acks.length > limits.maxReserveJobs) {
      throw SeppError.tooLarge(
        `acks: ${acks.length} in one batch, the limit is ${limits.maxReserveJobs} (limits.max_reserve_jobs); split them into several calls`,
      );
    }
    return this.ctx.write((tx) => this.ackEach(tx, acks));
  }

  private *ackEach(tx: StoreTx, acks: readonly Ack[]): Op<SettleOutcome[]> {
    const smallest = this.dependencyQueues?.any === true ? minWorkflowBatchAcks : minBatchAcks;
    if (acks.length < smallest || this.ctx.queues.anyKeepsCompleted) {
      const outcomes: SettleOutcome[] = [];
      for (const ack of acks) outcomes.push(yield* this.settler.tryAck(tx, ack));
      return outcomes;
    }
    // By position: a caller may pass the same object twice.
    const firstPerJob = new Map<string, number>();
    acks.forEach((ack, i) => {
      if (!firstPerJob.has(ack.jobId)) firstPerJob.set(ack.jobId, i);
    });
    const deleted = new Map<string, AckedRow>();
    let completed: Map<string, AckedRow & { dependency_flags: number }> | undefined;
    if (this.keptFirst) {
      // The last batch was mostly jobs others wait on: they are completed first, and the
      // delete probes only the acks the completion passed over (none, in a batch of a flow's children).
      completed = yield* this.completeDependedOn(tx, acks, firstPerJob, deleted);
      const rest: Ack[] = [];
      for (const [jobId, i] of firstPerJob) if (completed?.has(jobId) !== true) rest.push(acks[i]!);
      if (rest.length > 0) for (const row of yield* tx.leases.ackMany(rest)) deleted.set(row.id, row);
    } else {
      for (const row of yield* tx.leases.ackMany([...firstPerJob.values()].map((i) => acks[i]!)))
        deleted.set(row.id, row);
      completed = yield* this.completeDependedOn(tx, acks, firstPerJob, deleted);
    }
    this.keptFirst = (completed?.size ?? 0) > deleted.size;
    const ackedPerQueue = new Map<string, number>();
    const { recording } = this.ctx.events;
    const outcomes: SettleOutcome[] = [];
    const kept: FinishedOutcome[] | null = this.ctx.outcomes.enabled ? [] : null;
    const nowMs = this.ctx.clock.nowMs();
    const ended: AckedRow[] = [];
    // Jobs kept completed for their dependents (workflows): counted and said once per queue at the end.
    // The ends of the jobs completeDependedOnMany kept: run together (releaseDependentsOfCompleted),
    // before any other ack's end so the order between them is the acks'.
    const keptForDependents: KeptJobs = { perQueue: new Map(), rows: ended, ended: [] };
    for (let i = 0; i < acks.length; i++) {
      const ack = acks[i]!;
      const first = firstPerJob.get(ack.jobId) === i;
      const job = first ? deleted.get(ack.jobId) : undefined;
      if (job === undefined) {
        const row = first ? completed?.get(ack.jobId) : undefined;
        if (row !== undefined) {
          outcomes.push(yield* this.settler.keptCompleted(tx, ack, row, keptForDependents));
          continue;
        }
        yield* this.endKept(tx, keptForDependents);
        outcomes.push(
          yield* this.settler.tryAck(tx, ack, first, keptForDependents, first && completed !== undefined),
        );
        continue;
      }
      ackedPerQueue.set(job.queue, (ackedPerQueue.get(job.queue) ?? 0) + 1);
      ended.push(job);
      if (recording) this.settler.recordCompleted(tx, ack, job, false);
      kept?.push(completedOutcome(ack, job, nowMs));
      outcomes.push({ ok: true });
    }
    yield* this.endKept(tx, keptForDependents);
    this.ctx.attemptsEnded(tx, ended, 'completed');
    if (kept !== null && kept.length > 0) {
      const table = this.ctx.outcomes;
      tx.afterCommit(() => {
        for (const outcome of kept) table.add(outcome, nowMs);
      });
    }
    for (const [queue, jobs] of ackedPerQueue) {
      yield* this.ctx.count(tx, queue, 'leased', null, jobs);
      this.ctx.emit(tx, { kind: 'acked', queue, count: jobs });
    }
    for (const [queue, jobs] of keptForDependents.perQueue) {
      yield* this.ctx.count(tx, queue, 'leased', 'completed', jobs);
      this.ctx.emit(tx, { kind: 'acked', queue, count: jobs });
    }
    return outcomes;
  }

  /**
   * The ends of the kept jobs gathered so far: what waits on them released in one store
   * call, then their batches counted, job by job in the acks' order, as `jobEnded` would.
   */
  private *endKept(tx: StoreTx, kept: KeptJobs): Op<void> {
    const jobs = kept.ended;
    if (jobs === undefined || jobs.length === 0) return;
    kept.ended = [];
    yield* releaseDependentsOfCompleted(
      this.ctx,
      tx,
      jobs.filter((job) => dependedOn(job.flags)).map((job) => job.id),
    );
    for (const job of jobs) {
      if (inBatch(job.flags)) yield* this.ctx.jobEnded(tx, { id: job.id, flags: batchMember }, 'completed');
    }
  }

  /**
   * The first acks of their jobs that the delete passed over (every first ack, when this runs
   * before the delete: `keptFirst`), when several: most often jobs
   * others wait on (a flow's children), kept completed for them in one store call
   * (completeDependedOnMany) instead of one statement each. Undefined when not tried (the
   * store has no such call, or one ack at most was left: completeDependedOn serves it); the
   * acks it did not match go on through the Settler, which reads the row to say why.
   */
  private *completeDependedOn(
    tx: StoreTx,
    acks: readonly Ack[],
    firstPerJob: ReadonlyMap<string, number>,
    deleted: ReadonlyMap<string, AckedRow>,
  ): Op<Map<string, AckedRow & { dependency_flags: number }> | undefined> {
    if (tx.leases.completeDependedOnMany === undefined || deleted.size >= firstPerJob.size - 1)
      return undefined;
    const missed: CompletingAck[] = [];
    for (const [jobId, i] of firstPerJob) {
      if (deleted.has(jobId)) continue;
      const ack = acks[i]!;
      missed.push({
        jobId,
        attempt: ack.attempt,
        result: ack.result ?? null,
        resultContentType: resultContentTypeOf(ack),
      });
    }
    const completed = new Map<string, AckedRow & { dependency_flags: number }>();
    for (const row of yield* tx.leases.completeDependedOnMany(missed, this.ctx.clock.nowMs())) {
      completed.set(row.id, row);
    }
    return completed;
  }
}
