/**
 * "Jobs ready" that other servers signal (StoreSignals), bounded in what they cost. On
 * PostgreSQL the channel is anyone's who can connect (docs/postgres.md): before this, each
 * signal for a queue the server did not know made it read its queues again, and 5,000
 * forged ones for made-up queues cost a server ~0.69 s of CPU (attack7). Now:
 *
 * - a known queue nobody here waits on costs nothing: there is nobody to wake. Only that it
 *   has grouped jobs is kept (flow control must know before it leases them; a set no larger
 *   than the queues);
 * - signals for one queue heard in one turn (one read of the connection holds many) wake
 *   its waiters once, for the jobs they add up to;
 * - a queue this server does not know (another server made it; a reserve skips a queue it
 *   does not know, so the signal is how it learns of it before the next poll) is learned by
 *   reading the queues again: one read at a time, the signals heard meanwhile waiting for
 *   it, and at most `refreshesPerPoll` such reads that find none of the queues they were
 *   asked for between two polls of the engine (the poll reads them anyway; a read that finds
 *   one was a genuine signal's and spends nothing). Waiters on the queues heard are woken after the read; at most
 *   `maxHeardUnknown` names are kept for it (a flood of made-up names fills them; a queue
 *   not kept is known after the read all the same, and its waiters are woken by the poll).
 *
 * A forged signal for a queue someone waits on still wakes its waiters, once per turn: they
 * look, find nothing, and wait again (the same as a genuine signal whose jobs another
 * server's workers took first).
 */
import type { WaiterRegistry } from './waiters.ts';

/** Reads of the queues that signals may ask for between two polls. */
export const refreshesPerPoll = 4;
/** Names of unknown queues kept to wake their waiters after the read, at most. */
export const maxHeardUnknown = 1_000;

export class HeardReady {
  /** Jobs signalled this turn per known queue, to wake its waiters for. */
  private readonly due = new Map<string, number>();
  /** Jobs signalled per queue not known yet, to wake its waiters for once the queues are read. */
  private readonly unknown = new Map<string, number>();
  private refreshing = false;
  private refreshesLeft = refreshesPerPoll;
  private stopped = false;

  constructor(
    private readonly waiters: Pick<WaiterRegistry, 'waitingOn' | 'notify'>,
    /** Reads what this server knows of its queues again (queues/queue-refresh.ts). */
    private readonly refreshQueues: () => Promise<void>,
    private readonly knowsQueue: (queue: string) => boolean,
    /** Tells flow control that a queue has had grouped jobs. */
    private readonly groupsFound: (queue: string) => void,
  ) {}

  heard(queue: string, jobs: number, grouped: boolean): void {
    if (this.stopped) return;
    if (!this.knowsQueue(queue)) {
      // The read learns its groups too.
      const before = this.unknown.get(queue);
      if (before !== undefined || this.unknown.size < maxHeardUnknown)
        this.unknown.set(queue, (before ?? 0) + jobs);
      this.refreshSoon();
      return;
    }
    // Grouped jobs are leased only by a lease that takes turns: know it before waking.
    if (grouped) this.groupsFound(queue);
    if (this.waiters.waitingOn(queue) === 0) return;
    if (this.due.size === 0) queueMicrotask(() => this.wake());
    this.due.set(queue, (this.due.get(queue) ?? 0) + jobs);
  }

  /** The engine polled the store (its queues read, its waiters woken for ready jobs): reads are allowed again. */
  polled(): void {
    this.refreshesLeft = refreshesPerPoll;
    if (!this.refreshing) this.unknown.clear();
  }

  stop(): void {
    this.stopped = true;
    this.due.clear();
    this.unknown.clear();
  }

  private wake(): void {
    const due = [...this.due];
    this.due.clear();
    for (const [queue, jobs] of due) this.waiters.notify(queue, jobs);
  }

  private refreshSoon(): void {
    if (this.refreshing || this.refreshesLeft === 0 || this.stopped) return;
    this.refreshesLeft--;
    void this.refresh();
  }

  private async refresh(): Promise<void> {
    this.refreshing = true;
    const heard = [...this.unknown];
    this.unknown.clear();
    try {
      // A queue another server made: learn of it (and whether it is paused) first.
      await this.refreshQueues();
      for (const [queue, jobs] of heard) this.waiters.notify(queue, jobs);
      // A read that found a queue it was asked for was no flood's: its own read is given back
      // (only it: a flood's reads before it stay spent; a poll during the read refilled them).
      // Without this, a server that meets more than refreshesPerPoll new queues between two
      // polls learned the rest only at the next poll.
      if (heard.some(([queue]) => this.knowsQueue(queue)))
        this.refreshesLeft = Math.min(refreshesPerPoll, this.refreshesLeft + 1);
    } catch {
      // The store is unreachable: the poll tries again; the waiters time out meanwhile.
    } finally {
      this.refreshing = false;
    }
    // Heard during the read: a queue it found needs no other.
    for (const [queue, jobs] of this.unknown) {
      if (!this.knowsQueue(queue)) continue;
      this.unknown.delete(queue);
      this.waiters.notify(queue, jobs);
    }
    if (this.unknown.size > 0) this.refreshSoon();
  }
}
