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

import type { AdminStatements } from '../store/sqlite/admin-statements.ts';
import type { AuditInput } from './admin-types.ts';
import type { AuditLog } from './audit.ts';
import type { EngineContext, Write } from './context.ts';
import { isRejection, validateJob } from './enqueue-validation.ts';
import { SeppError } from './errors.ts';
import type { JobState, QueueInfo, StateCounts } from './types.ts';
import { jobStates } from './types.ts';

export class QueueAdmin {
  constructor(
    private readonly ctx: EngineContext,
    private readonly sql: AdminStatements,
    private readonly audit: AuditLog,
    private readonly write: Write,
  ) {}

  /** Reads queue flags into memory, creates declared queues, records effective settings for forensics. */
  load(): void {
    const { sql, queues, clock, db } = this.ctx;
    db.transaction(() => {
      for (const name of queues.declaredNames()) {
        sql.insertQueue.run({ name, created_at_ms: clock.nowMs(), settings_json: '{}' });
      }
      for (const row of sql.allQueues.all()) {
        queues.markExisting(row.name, row.paused === 1);
        sql.updateQueueSettings.run({
          name: row.name,
          settings_json: JSON.stringify(queues.settingsFor(row.name)),
        });
      }
    })();
  }

  listQueues(): QueueInfo[] {
    const { sql, queues, clock } = this.ctx;
    const counts = new Map<string, StateCounts>();
    for (const row of sql.allCounts.all()) {
      let c = counts.get(row.queue);
      if (c === undefined) {
        c = emptyCounts();
        counts.set(row.queue, c);
      }
      c[row.state as JobState] = row.jobs;
    }
    const nowMs = clock.nowMs();
    return queues.names().map((name) => this.describe(name, counts.get(name) ?? emptyCounts(), nowMs));
  }

  /** One queue that exists, as listQueues shows it. */
  queueInfo(queue: string): QueueInfo {
    const counts = emptyCounts();
    for (const row of this.ctx.sql.queueCounts.all(queue)) counts[row.state as JobState] = row.jobs;
    return this.describe(queue, counts, this.ctx.clock.nowMs());
  }

  private describe(name: string, counts: StateCounts, nowMs: number): QueueInfo {
    const { queues, waiters } = this.ctx;
    const view = queues.viewOf(name);
    const flow = this.ctx.flow.stats(name);
    return {
      name,
      paused: queues.isPaused(name),
      counts,
      oldestReadyAgeMs: counts.ready > 0 ? this.oldestReadyAge(name, nowMs, flow.oldestGroupedRunAtMs) : null,
      waitingWorkers: waiters.waitingOn(name),
      throttledWorkers: flow.throttledWaiters,
      readyGroups: flow.readyGroups,
      readyGroupsCapped: flow.readyGroupsCapped,
      settings: view.settings,
      settingSources: view.sources,
      fileSettings: view.fileSettings,
    };
  }

  /**
   * The oldest due time among ready jobs: one index probe per priority for the
   * jobs without a group, never a scan; `groupedRunAtMs` is the grouped jobs' (flow stats).
   */
  private oldestReadyAge(queue: string, nowMs: number, groupedRunAtMs: number | null): number | null {
    let oldest: number | null = groupedRunAtMs;
    for (let priority = 0; priority <= 9; priority++) {
      const runAtMs = this.ctx.sql.oldestReadyAtPriority.get(queue, priority) ?? null;
      if (runAtMs !== null && (oldest === null || runAtMs < oldest)) oldest = runAtMs;
    }
    return oldest === null ? null : Math.max(0, nowMs - oldest);
  }

  async setPaused(
    queue: string,
    paused: boolean,
    audit: AuditInput | undefined,
    allowMissing = false,
  ): Promise<void> {
    checkQueueName(this.ctx, queue);
    if (!allowMissing) checkQueueExists(this.ctx, queue);
    return this.write((tx) => {
      // Deleted meanwhile (earlier in this batch, say): still not created by accident.
      if (!allowMissing && this.sql.queueExists.get(queue) === undefined) throw notFound(queue);
      this.ctx.ensureQueue(tx, queue);
      if (audit !== undefined) this.audit.write(audit, { wasPaused: this.ctx.queues.isPaused(queue) });
      this.ctx.sql.setQueuePaused.run({ name: queue, paused: paused ? 1 : 0 });
      tx.afterCommit(() => this.ctx.queues.markExisting(queue, paused));
      if (!paused) {
        const ready = this.ctx.sql.queueCounts.all(queue).find((c) => c.state === 'ready')?.jobs ?? 0;
        this.ctx.jobsReady(tx, queue, ready);
      }
    });
  }

  /**
   * Deletes a queue that holds no job in any state. Refused (FAILED_PRECONDITION)
   * while it holds jobs, or when the config declares it (it would be back at the
   * next start). Its idempotency keys stay until their window ends, so a
   * producer's retry after the queue is re-created is still recognised.
   */
  async deleteQueue(queue: string, audit: AuditInput | undefined): Promise<void> {
    const { ctx, sql } = this;
    checkQueueName(ctx, queue);
    checkQueueExists(ctx, queue);
    if (ctx.queues.isDeclared(queue)) {
      throw new SeppError(
        'failed_precondition',
        `queue ${queue} is declared in the configuration ([queues.${queue}]); remove it there to delete it`,
      );
    }
    try {
      await this.write((tx) => {
        // The truth is on disk: another write in this batch may have changed the queue.
        if (sql.queueExists.get(queue) === undefined) throw notFound(queue);
        const held = ctx.sql.queueCounts.all(queue).filter((c) => c.jobs > 0);
        if (held.length > 0) {
          const total = held.reduce((sum, c) => sum + c.jobs, 0);
          const detail = held.map((c) => `${c.state} ${c.jobs}`).join(', ');
          const has = (state: string) => held.some((c) => c.state === state);
          const steps = [
            has('ready') || has('scheduled') ? 'purge its waiting jobs' : '',
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
        sql.deleteQueueCounts.run(queue);
        sql.deleteQueue.run(queue);
        ctx.flow.queueDeleted(queue);
        ctx.queues.markDeleting(queue);
        if (audit !== undefined) this.audit.write(audit, { deleted: true });
        tx.afterCommit(() => ctx.queues.forget(queue));
      });
    } catch (error) {
      // Rolled back (or refused): the queue is as it was.
      ctx.queues.undoDeleting(queue);
      throw error;
    }
  }
}

function notFound(queue: string): SeppError {
  return new SeppError('not_found', `queue ${queue} does not exist: no job was ever enqueued to it`);
}

/** NOT_FOUND for a queue nobody has used (no job was ever enqueued to it, and it is not declared). */
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
