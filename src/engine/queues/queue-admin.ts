/**
 * Queues as operators see them: counts by state, paused flag, oldest ready
 * age and waiting workers; pausing, resuming and deleting; and the checks that
 * a queue an operator names is one a queue can have, and one that exists.
 *
 * A queue comes into being with its first job. An operator's action never
 * creates one by accident: pausing or resuming a queue nobody has used is
 * NOT_FOUND unless the caller asks for it (`allowMissing`, e.g. to pause a
 * queue before its producers start), so a typo leaves no phantom queue.
 */

import type { Op } from '../../store/op.ts';
import type { StoreTx, StoreView } from '../../store/store.ts';
import type { AuditInput } from '../admin-types.ts';
import type { AuditLog } from '../audit/index.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import type { FlowControl } from '../flow-control/index.ts';
import { isRejection, validateJob } from '../jobs/index.ts';
import { type NamePageQuery, pickNamePage } from '../name-pages.ts';
import type { JobState, Page, QueueInfo, StateCounts } from '../types.ts';
import { jobStates } from '../types.ts';

export class QueueAdmin {
  constructor(
    private readonly ctx: EngineContext,
    private readonly flow: FlowControl,
    /** The long-polls waiting on each queue (the leases room's waiters). */
    private readonly waiters: { waitingOn(queue: string): number },
    private readonly audit: AuditLog,
    /**
     * Adds to the registry the stored queues it misses (queue-lookup.ts `findAll`): another
     * server's new queue is listed at once. Absent: the registry is listed as it is.
     */
    private readonly findNewQueues?: (view: StoreView) => Op<void>,
  ) {}

  /**
   * As the engine opens (a write unit): creates declared queues, records every queue's
   * effective settings for forensics, and reads the queues and their paused flags
   * into memory once that commit is durable.
   */
  *load(tx: StoreTx): Op<void> {
    const { queues, clock } = this.ctx;
    for (const name of queues.declaredNames()) {
      yield* tx.queues.create({ name, createdAtMs: clock.nowMs(), settingsJson: '{}' });
    }
    const all = yield* tx.queues.all();
    for (const row of all) {
      yield* tx.queues.recordSettings({
        name: row.name,
        settingsJson: JSON.stringify(queues.settingsFor(row.name)),
      });
    }
    tx.afterCommit(() => {
      for (const row of all) queues.markExisting(row.name, row.paused);
    });
  }

  /** Every queue (at most limits.max_queues of them), in name order. */
  *listQueues(view: StoreView): Op<QueueInfo[]> {
    if (this.findNewQueues !== undefined) yield* this.findNewQueues(view);
    return yield* this.describeQueues(view, this.ctx.queues.names());
  }

  /**
   * One page of queues in name order (name-pages.ts): what ListQueues and the admin
   * API answer, so an answer holds at most limits.max_page_size queues however many
   * there are.
   */
  *queuePage(view: StoreView, query: NamePageQuery): Op<Page<QueueInfo>> {
    const { queues, limits } = this.ctx;
    if (this.findNewQueues !== undefined) yield* this.findNewQueues(view);
    const page = pickNamePage('queues', queues.existingNames(), query, limits);
    return { items: yield* this.describeQueues(view, page.names), nextCursor: page.nextCursor };
  }

  /** The named queues that exist, described, in the order given. */
  *describeQueues(view: StoreView, names: readonly string[]): Op<QueueInfo[]> {
    const nowMs = this.ctx.clock.nowMs();
    const infos: QueueInfo[] = [];
    for (const name of names) {
      if (!this.ctx.queues.exists(name)) continue;
      const counts = emptyCounts();
      for (const row of yield* view.counts.ofQueue(name)) counts[row.state as JobState] = row.jobs;
      infos.push(yield* this.describe(view, name, counts, nowMs));
    }
    return infos;
  }

  /** Every queue's jobs by state: one read of the maintained counters, nothing else (totals, gauges). */
  *queueCounts(view: StoreView): Op<Map<string, StateCounts>> {
    const counts = new Map<string, StateCounts>();
    for (const name of this.ctx.queues.existingNames()) counts.set(name, emptyCounts());
    for (const row of yield* view.counts.all()) {
      const c = counts.get(row.queue);
      if (c !== undefined) c[row.state as JobState] = row.jobs;
    }
    return counts;
  }

  /** One queue that exists, as listQueues shows it. */
  *queueInfo(view: StoreView, queue: string): Op<QueueInfo> {
    const counts = emptyCounts();
    for (const row of yield* view.counts.ofQueue(queue)) counts[row.state as JobState] = row.jobs;
    return yield* this.describe(view, queue, counts, this.ctx.clock.nowMs());
  }

  private *describe(view: StoreView, name: string, counts: StateCounts, nowMs: number): Op<QueueInfo> {
    const { queues } = this.ctx;
    const settings = queues.viewOf(name);
    const flow = yield* this.flow.stats(view, name);
    return {
      name,
      paused: queues.isPaused(name),
      counts,
      oldestReadyAgeMs:
        counts.ready > 0 ? yield* this.oldestReadyAge(view, name, nowMs, flow.oldestGroupedRunAtMs) : null,
      waitingWorkers: this.waiters.waitingOn(name),
      throttledWorkers: flow.throttledWaiters,
      readyGroups: flow.readyGroups,
      readyGroupsCapped: flow.readyGroupsCapped,
      settings: settings.settings,
      settingSources: settings.sources,
      fileSettings: settings.fileSettings,
    };
  }

  /**
   * The oldest due time among ready jobs: one index probe per priority for the
   * jobs without a group, never a scan; `groupedRunAtMs` is the grouped jobs' (flow stats).
   */
  private *oldestReadyAge(
    view: StoreView,
    queue: string,
    nowMs: number,
    groupedRunAtMs: number | null,
  ): Op<number | null> {
    const ungrouped = yield* view.queues.oldestUngroupedReadyMs(queue);
    let oldest = groupedRunAtMs;
    if (ungrouped !== null && (oldest === null || ungrouped < oldest)) oldest = ungrouped;
    return oldest === null ? null : Math.max(0, nowMs - oldest);
  }

  async setPaused(
    queue: string,
    paused: boolean,
    audit: AuditInput | undefined,
    allowMissing = false,
  ): Promise<void> {
    checkQueueName(this.ctx, queue);
    // Known here: no await, so the write joins the batch of this turn as it always did.
    if (!allowMissing && !this.ctx.queues.exists(queue) && !(await this.ctx.queueExistsNow(queue))) {
      throw notFound(queue);
    }
    return this.ctx.write((tx) => this.pauseOrResume(tx, queue, paused, audit, allowMissing));
  }

  private *pauseOrResume(
    tx: StoreTx,
    queue: string,
    paused: boolean,
    audit: AuditInput | undefined,
    allowMissing: boolean,
  ): Op<void> {
    // Deleted meanwhile (earlier in this batch, say): still not created by accident.
    if (!allowMissing && !(yield* tx.queues.exists(queue))) throw notFound(queue);
    yield* this.ctx.ensureQueue(tx, queue);
    if (audit !== undefined)
      yield* this.audit.write(tx, audit, { wasPaused: this.ctx.queues.isPaused(queue) });
    yield* tx.queues.setPaused({ name: queue, paused });
    tx.afterCommit(() => this.ctx.queues.markExisting(queue, paused));
    if (!paused) {
      const ready = yield* tx.counts.inState({ queue, state: 'ready' });
      this.ctx.jobsReady(tx, queue, ready);
    }
  }

  /**
   * Deletes a queue that holds no job in any state. Refused (FAILED_PRECONDITION)
   * while it holds jobs, or when the config declares it (it would be back at the
   * next start). Its idempotency keys stay until their window ends, so a
   * producer's retry after the queue is re-created is still recognised.
   */
  async deleteQueue(queue: string, audit: AuditInput | undefined): Promise<void> {
    const { ctx } = this;
    checkQueueName(ctx, queue);
    if (!ctx.queues.exists(queue) && !(await ctx.queueExistsNow(queue))) throw notFound(queue);
    if (ctx.queues.isDeclared(queue)) {
      throw new SeppError(
        'failed_precondition',
        `queue ${queue} is declared in the configuration ([queues.${queue}]); remove it there to delete it`,
      );
    }
    try {
      await ctx.write((tx) => this.deleteEmpty(tx, queue, audit));
    } catch (error) {
      // Rolled back (or refused): the queue is as it was.
      ctx.queues.undoDeleting(queue);
      throw error;
    }
  }

  private *deleteEmpty(tx: StoreTx, queue: string, audit: AuditInput | undefined): Op<void> {
    const { ctx } = this;
    // The truth is on disk: another write in this batch may have changed the queue.
    if (!(yield* tx.queues.exists(queue))) throw notFound(queue);
    const held = (yield* tx.counts.ofQueue(queue)).filter((c) => c.jobs > 0);
    if (held.length > 0) {
      const total = held.reduce((sum, c) => sum + c.jobs, 0);
      const detail = held.map((c) => `${c.state} ${c.jobs}`).join(', ');
      const has = (state: string) => held.some((c) => c.state === state);
      const steps = [
        // "waiting" is a state of its own (jobs waiting on other jobs), which a purge leaves alone.
        has('ready') || has('scheduled') ? 'purge its ready and scheduled jobs' : '',
        has('waiting') ? 'cancel its jobs waiting on other jobs (by id, or their flow or batch)' : '',
        has('dead') ? 'delete its dead letters' : '',
        has('leased') ? 'let its leased jobs finish' : '',
        has('completed') ? 'wait for its completed jobs to pass their retention' : '',
        has('cancelled') ? 'wait for its cancelled jobs to pass their retention' : '',
      ].filter((step) => step !== '');
      throw new SeppError(
        'failed_precondition',
        `queue ${queue} holds ${total} job${total === 1 ? '' : 's'} (${detail}); only an empty queue can ` +
          `be deleted: ${steps.join(', ')} first`,
      );
    }
    yield* tx.queues.delete(queue);
    this.flow.queueDeleted(queue);
    ctx.queues.markDeleting(queue);
    if (audit !== undefined) yield* this.audit.write(tx, audit, { deleted: true });
    tx.afterCommit(() => ctx.queues.forget(queue));
  }
}

function notFound(queue: string): SeppError {
  return new SeppError('not_found', `queue ${queue} does not exist: no job was ever enqueued to it`);
}

/**
 * NOT_FOUND for a queue nobody has used (no job was ever enqueued to it, and it is not
 * declared), as the registry knows: a caller on a store other servers share asks
 * `ctx.queueExistsNow` first, so a queue another server just made is known by then.
 */
export function checkQueueExists(ctx: EngineContext, queue: string): void {
  if (!ctx.queues.exists(queue)) throw notFound(queue);
}

/**
 * Refuses a queue name no queue can have (INVALID_ARGUMENT) or, under
 * strict_queues, one that is not declared (NOT_FOUND): an operator's typo is a
 * mistake to report, not an empty answer.
 */
export function checkQueueName(ctx: EngineContext, queue: string): void {
  const problem = validateJob({ queue, type: 'x', payload: new Uint8Array() }, 0, ctx.queues, ctx.limits);
  if (isRejection(problem) && (problem.reason === 'invalid_name' || problem.reason === 'unknown_queue')) {
    throw new SeppError(
      problem.reason === 'unknown_queue' ? 'not_found' : 'invalid_argument',
      problem.message,
    );
  }
}

function emptyCounts(): StateCounts {
  return Object.fromEntries(jobStates.map((s) => [s, 0])) as StateCounts;
}
