/**
 * Ends committed by other servers, for the subscriptions here that name jobs (outcome
 * waits: the SDKs' waitFor / wait_for, `sepp job ID --wait`, the HTTP outcome long-poll),
 * on a store several servers share. Each server's events are its own commits (event-log.ts),
 * so a job acked, dead-lettered or cancelled through another server would end such a wait
 * only at its timeout.
 *
 * While some subscription names jobs, one read every `remoteEndsIntervalMs` of the injected
 * clock (JobReads.ends: one statement, `id = ANY`, at most limits.max_waiters ids, taken in
 * turns when more are named) asks the store where the named jobs are whose end has not been
 * told here. A job found in a final state becomes the event this server would have published
 * had it settled the job itself (`completed` with its result, `dead_lettered` with its error
 * and reason, `cancelled`), marked `fromStore` so that only subscriptions naming it see it.
 * A job seen here not ended (by this read, or by a GetJob of this server's) and then gone
 * from the store ended where its queue keeps no jobs in that state, and its outcome is in the
 * settling server's memory only: the subscriptions naming it alone end with NOT_FOUND,
 * saying so, instead of waiting for their timeout. An id never seen (a batch's id, or a job
 * gone before this server looked) is only asked for again.
 *
 * A job this server settles itself at the moment of a look can be told twice (the look read
 * the committed row before the commit's own event was appended): a wait takes the first.
 *
 * Cost: nothing while no subscription names a job, and nothing on a store no other server
 * shares (no instance is made). At most one read in flight; the next is armed when it ends.
 */

import type { JobEndRow } from '../../store/rows.ts';
import type { ReadUnit } from '../../store/store.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { SeppError } from '../errors.ts';
import type { EngineLimits } from '../settings.ts';
import type { DeadReason, JobInfo } from '../types.ts';
import type { EventLog } from './event-log.ts';
import { eventAbout, type LifecycleEvent } from './lifecycle-event.ts';

/** How often a server with waits reads the ends of the jobs they name from the store. */
const remoteEndsIntervalMs = 250;

const finalStates: ReadonlySet<string> = new Set(['completed', 'dead', 'cancelled']);

/** The event a local settlement would have published for `row`, or null while it has not ended. */
function endEventOf(row: JobEndRow, nowMs: number): LifecycleEvent | null {
  const about = { ...eventAbout(row, nowMs), fromStore: true as const };
  switch (row.state) {
    case 'completed':
      return {
        ...about,
        atMs: row.completed_at_ms ?? nowMs,
        kind: 'completed',
        result: row.result,
        resultContentType: row.result_content_type,
        retained: true,
      };
    case 'dead':
      return {
        ...about,
        atMs: row.failed_at_ms ?? nowMs,
        kind: 'dead_lettered',
        reason: (row.dead_reason ?? 'dead_lettered') as DeadReason,
        error: row.last_error,
      };
    case 'cancelled':
      // Where it was before its cancel is not in the row: its state then is reported.
      return { ...about, atMs: row.cancelled_at_ms ?? nowMs, kind: 'cancelled', previousState: 'cancelled' };
    default:
      return null;
  }
}

function goneError(jobId: string): SeppError {
  return new SeppError(
    'not_found',
    `job ${jobId} ended through another server sharing this PostgreSQL database and is no longer kept ` +
      "(its queue's completed_retention_ms, dead_retention_ms or cancelled_retention_ms is 0; its outcome is " +
      'kept, for limits.finished_outcome_ms, in the memory of the server that settled it only), or it was ' +
      'deleted. To learn outcomes through any server, keep the finished jobs of the queue for a while',
  );
}

export class RemoteEnds {
  private timer: TimerHandle | undefined;
  private reading = false;
  private stopped = false;
  /** Named jobs whose end this server has told (its own commit, or read here). */
  private readonly told = new Set<string>();
  /** Named jobs seen here not ended: gone from the store later, they ended and are not kept. */
  private readonly seen = new Set<string>();
  /** Where the next read starts among the named jobs, when they are more than one read takes. */
  private turn = 0;

  constructor(
    private readonly log: EventLog,
    /** The engine's reads, clock and limits (its context; not imported here: the context holds the log). */
    private readonly ctx: {
      read<T>(unit: ReadUnit<T>): Promise<T>;
      readonly clock: Clock;
      readonly limits: Pick<EngineLimits, 'maxWaiters'>;
    },
  ) {
    log.watchNamedJobs({
      named: () => this.arm(),
      ended: (jobId) => this.told.add(jobId),
    });
  }

  /** A read of this server's found `job`: if it is named and not ended, it was there. */
  saw(job: JobInfo): void {
    if (this.stopped || !this.log.names(job.id) || finalStates.has(job.state)) return;
    this.seen.add(job.id);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private arm(): void {
    if (this.stopped || this.timer !== undefined || this.reading) return;
    this.timer = this.ctx.clock.setTimer(remoteEndsIntervalMs, () => {
      this.timer = undefined;
      void this.look();
    });
  }

  private async look(): Promise<void> {
    const ids = this.asked();
    if (ids.length === 0) return;
    this.reading = true;
    try {
      const rows = await this.ctx.read((view) => view.jobs.ends!(ids));
      if (!this.stopped) this.apply(ids, rows);
    } catch {
      // The store is unavailable: the next read asks again; the waits' own timeouts still hold.
    } finally {
      this.reading = false;
    }
    this.arm();
  }

  /** The named jobs whose end is not told yet, at most limits.max_waiters, in turns. */
  private asked(): string[] {
    for (const set of [this.told, this.seen]) {
      for (const id of set) if (!this.log.names(id)) set.delete(id);
    }
    const ids: string[] = [];
    for (const id of this.log.namedJobs()) if (!this.told.has(id)) ids.push(id);
    const max = this.ctx.limits.maxWaiters;
    if (ids.length <= max) return ids;
    const start = this.turn % ids.length;
    this.turn = start + max;
    return [...ids, ...ids].slice(start, start + max);
  }

  private apply(ids: readonly string[], rows: readonly JobEndRow[]): void {
    const byId = new Map(rows.map((row) => [row.id, row]));
    const nowMs = this.ctx.clock.nowMs();
    for (const id of ids) {
      // Told meanwhile by a commit of this server's, or no longer waited for.
      if (this.told.has(id) || !this.log.names(id)) continue;
      const row = byId.get(id);
      if (row === undefined) {
        if (this.seen.delete(id)) {
          this.told.add(id);
          this.log.endWaitsFor(id, goneError(id));
        }
        continue;
      }
      const event = endEventOf(row, nowMs);
      if (event === null) {
        this.seen.add(id);
        continue;
      }
      this.told.add(id);
      this.log.append(event);
    }
  }
}
