/**
 * Another server's cancels and timeouts of leases, checked against the store before this
 * server's workers are told of them. They come over a channel of the store's (PostgreSQL
 * NOTIFY) that every role able to connect to the database may send on: unchecked, a forged
 * cancel made the worker holding a running job abort it and nack it, an attempt spent, and
 * one per attempt sent the job to the dead letters (attack7). A cancel is passed on when the
 * job is leased in that attempt with a cancel requested; a timeout when that attempt's lease
 * is over (the job is no longer leased in it). Genuine notices are sent after their commit,
 * so the read sees what they tell of.
 *
 * Bounded: one read at a time, in pages of `pageIds` ids (one statement each, `id = ANY`), and
 * at most `maxUnchecked` notices waiting for it; beyond that they are dropped, and the workers
 * learn at their next extend or settlement, as when a signal is lost.
 */
import type { JobEndRow } from '../../store/rows.ts';
import type { CancelSignal, TimeoutSignal } from '../../store/signals.ts';
import type { ReadUnit } from '../../store/store.ts';

/** Notices waiting to be checked, at most (as many as a server keeps to send: signals.ts). */
const maxUnchecked = 10_000;
/** Ids read in one statement. */
const pageIds = 1_000;

type Notice = CancelSignal | TimeoutSignal;

export class CheckedNotices {
  private unchecked = 0;
  private checking: Promise<void> = Promise.resolve();

  constructor(private readonly read: <T>(unit: ReadUnit<T>) => Promise<T>) {}

  /** Tells `deliver` the cancels the store confirms. */
  cancels(notices: readonly CancelSignal[], deliver: (notices: CancelSignal[]) => void): void {
    this.check(
      notices,
      deliver,
      (row, n) => row.state === 'leased' && row.attempt === n.attempt && row.cancelled_at_ms !== null,
    );
  }

  /** Tells `deliver` the timeouts the store confirms. */
  timeouts(notices: readonly TimeoutSignal[], deliver: (notices: TimeoutSignal[]) => void): void {
    this.check(notices, deliver, (row, n) => row.state !== 'leased' || row.attempt !== n.attempt);
  }

  private check<N extends Notice>(
    notices: readonly N[],
    deliver: (notices: N[]) => void,
    real: (row: JobEndRow, notice: N) => boolean,
  ): void {
    if (this.unchecked + notices.length > maxUnchecked) return;
    this.unchecked += notices.length;
    this.checking = this.checking.then(async () => {
      try {
        const rows = await this.rowsOf([...new Set(notices.map((n) => n.jobId))]);
        const confirmed = notices.filter((n) => {
          const row = rows.get(n.jobId);
          return row !== undefined && real(row, n);
        });
        if (confirmed.length > 0) deliver(confirmed);
      } catch {
        // The store is unreachable: the workers learn at their next extend or settlement.
      } finally {
        this.unchecked -= notices.length;
      }
    });
  }

  private async rowsOf(ids: readonly string[]): Promise<Map<string, JobEndRow>> {
    const rows = await this.read(function* (view) {
      const found: JobEndRow[] = [];
      // A store without `ends` is no store other servers share, so it sends no signals.
      if (view.jobs.ends === undefined) return found;
      for (let i = 0; i < ids.length; i += pageIds)
        found.push(...(yield* view.jobs.ends(ids.slice(i, i + pageIds))));
      return found;
    });
    return new Map(rows.map((row) => [row.id, row]));
  }
}
