/**
 * Ends committed by other servers, for the subscriptions here that name jobs (outcome
 * waits: the SDKs' waitFor / wait_for, `sepp job ID --wait`, the HTTP outcome long-poll),
 * on a store several servers share. Each server's events are its own commits (event-log.ts),
 * so a job acked, dead-lettered or cancelled through another server would end such a wait
 * only at its timeout.
 *
 * While some subscription names jobs, one read every `remoteEndsIntervalMs` of the injected
 * clock (JobReads.ends: one statement, `id = ANY`, at most limits.max_waiters ids, taken in
 * turns when more are named) asks the store where the named jobs are. A job found in a final
 * state whose end is not told here yet becomes the event this server would have published had
 * it settled the job itself (`completed` with its result, `dead_lettered` with its error and
 * reason, `cancelled`), marked `fromStore` so that only subscriptions naming it see it. Each
 * end is told once (known by its version, `isTold`): a job that ends again later (a dead
 * letter requeued and then settled, even within one look's interval and in the same state and
 * attempt) is told again, so a job stays asked for while named.
 * A job seen here not ended (by a read, or by a GetJob of this server's) and then gone from
 * the store on two looks in a row ended where its queue keeps no jobs in that state, and its
 * outcome is in the settling server's memory only: the subscriptions naming it alone, and
 * whose queues and key admit its queue, end with NOT_FOUND, saying so, instead of waiting for
 * their timeout. (One look is not enough: it may have read between this server's own COMMIT
 * and that commit's event.) An id never seen (a batch's id, or a job gone before this server
 * looked) is only asked for again.
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

/**
 * An end as this server knows it: `read` by a look (the row's version, where the store gives
 * one, and its end time), or committed here and not read back since (`read` null;
 * `committedAtMs`, the time of its event, which this server's clock read at or after the time
 * it wrote in the row).
 */
interface End {
  state: string;
  attempt: number;
  committedAtMs: number | null;
  read: { version: string | undefined; atMs: number | null } | null;
}

/** When `row`, a job in a final state, ended (as its row says). */
function endedAtMs(row: JobEndRow): number | null {
  if (row.state === 'completed') return row.completed_at_ms;
  return row.state === 'dead' ? row.failed_at_ms : row.cancelled_at_ms;
}

/**
 * Whether `row` is the end `told`. An end read before is known by its version (each end
 * counts itself in the row: a later end of the same state and attempt, such as a dead letter
 * requeued and dead-lettered again without a lease, is another version however soon it
 * came), or by its end time where the store gives no version (SQLite). An end committed
 * here is the first row of its state and attempt that ended no later than its event: an end
 * of that state and attempt made elsewhere after it (before the next look read this server's
 * own) ended later, and is told. Only a server whose clock is behind this one's by more than the time
 * between the two ends could make one that is taken for this server's own.
 */
function isTold(told: End, row: JobEndRow): boolean {
  if (told.state !== row.state || told.attempt !== row.attempt) return false;
  if (told.read === null) return (endedAtMs(row) ?? 0) <= (told.committedAtMs ?? 0);
  if (told.read.version !== undefined && row.version !== undefined) return told.read.version === row.version;
  return told.read.atMs === endedAtMs(row);
}

const stateOfKind: Readonly<Record<string, string>> = {
  completed: 'completed',
  dead_lettered: 'dead',
  cancelled: 'cancelled',
};

/**
 * What this server knows of one named job:
 * - `running`: seen not ended (by a look, or a GetJob here), in `queue`; `goneOnce` once a look
 *   found it gone since. A second look finding it gone ends the waits naming it (not_found): the
 *   first may have read between a COMMIT of this server's and that commit's event (the
 *   PostgreSQL writer appends it once the COMMIT has answered), which then tells the end.
 * - `told`: its end `end` is told (read here, or committed here); a later end (a dead letter
 *   requeued and settled again) is told too.
 * - `gone`: gone from the store after its end was told or declared: asked no more.
 */
type Known = { at: 'running'; queue: string; goneOnce: boolean } | { at: 'told'; end: End } | { at: 'gone' };

export class RemoteEnds {
  private timer: TimerHandle | undefined;
  private reading = false;
  private stopped = false;
  /** The named jobs this server knows something of (an id only named is not here). */
  private readonly known = new Map<string, Known>();
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
      ended: (event) => {
        const state = stateOfKind[event.kind];
        if (state !== undefined) {
          this.known.set(event.jobId, {
            at: 'told',
            end: { state, attempt: event.attempt, committedAtMs: event.atMs, read: null },
          });
        }
      },
    });
  }

  /** A read of this server's found `job`: if it is named and not ended, it was there. */
  saw(job: JobInfo): void {
    if (this.stopped || !this.log.names(job.id) || finalStates.has(job.state)) return;
    const known = this.known.get(job.id);
    // Gone stays gone; an end told by a commit here is newer than a read that raced it.
    if (known?.at === 'gone' || (known?.at === 'told' && known.end.read === null)) return;
    this.known.set(job.id, { at: 'running', queue: job.queue, goneOnce: false });
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

  /** The named jobs not known gone, at most limits.max_waiters, in turns. */
  private asked(): string[] {
    for (const id of this.known.keys()) if (!this.log.names(id)) this.known.delete(id);
    const ids: string[] = [];
    for (const id of this.log.namedJobs()) if (this.known.get(id)?.at !== 'gone') ids.push(id);
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
      if (!this.log.names(id)) continue;
      const known = this.known.get(id);
      const row = byId.get(id);
      if (row === undefined) {
        if (known?.at === 'told') this.known.set(id, { at: 'gone' });
        else if (known?.at === 'running' && !known.goneOnce) known.goneOnce = true;
        else if (known?.at === 'running') {
          this.known.set(id, { at: 'gone' });
          this.log.endWaitsFor(id, known.queue, goneError(id));
        }
        continue;
      }
      const event = endEventOf(row, nowMs);
      if (event === null) {
        // Not ended (again): a look read before a commit of this server's told its end keeps it told.
        if (known?.at !== 'told' || known.end.read !== null) {
          this.known.set(id, { at: 'running', queue: row.queue, goneOnce: false });
        }
        continue;
      }
      const read = { version: row.version, atMs: endedAtMs(row) };
      if (known?.at === 'told' && isTold(known.end, row)) {
        known.end.read = read;
        continue;
      }
      this.known.set(id, {
        at: 'told',
        end: { state: row.state, attempt: row.attempt, committedAtMs: null, read },
      });
      this.log.append(event);
    }
  }
}
