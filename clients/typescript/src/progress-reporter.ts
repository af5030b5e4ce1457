/**
 * One running job's progress reports. A handler may report as often as it
 * likes: at most one report is on its way at a time, and reports made
 * meanwhile are merged into the next one (a later percentage or document
 * replaces an earlier one), so a tight loop costs one report per round trip.
 *
 * States: idle → sending (one report in flight; later ones merge into
 * `pending`) → idle; any → closed (the handler returned: pending reports are
 * dropped; one already on its way is still answered, and its failure goes to
 * `onError` like any other — an ack may overtake it, which the Worker knows).
 */
import type { ProgressFields } from './work-transport.ts';

export class ProgressReporter {
  private pending: ProgressFields | undefined;
  /** Callers waiting for `pending` to be stored. */
  private pendingWaiters: (() => void)[] = [];
  private sending = false;
  private closed = false;

  constructor(
    private readonly send: (fields: ProgressFields) => Promise<void>,
    /** A report failed (the Worker tells a late answer, after the job's settlement, from a lost lease). */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Queues a report; resolves once it (or a later one that includes it) is stored, or dropped. Never rejects. */
  report(fields: ProgressFields): Promise<void> {
    if (this.closed) return Promise.resolve();
    const before = this.pending;
    this.pending =
      before === undefined
        ? fields
        : {
            percent: fields.hasPercent ? fields.percent : before.percent,
            hasPercent: fields.hasPercent || before.hasPercent,
            json: fields.json !== '' ? fields.json : before.json,
          };
    return new Promise<void>((resolve) => {
      this.pendingWaiters.push(resolve);
      this.pump();
    });
  }

  /** The job is settled: nothing more is sent, and whoever waits is let go. */
  close(): void {
    this.closed = true;
    this.pending = undefined;
    for (const wake of this.pendingWaiters.splice(0)) wake();
  }

  private pump(): void {
    if (this.sending || this.closed || this.pending === undefined) return;
    const fields = this.pending;
    const waiters = this.pendingWaiters;
    this.pending = undefined;
    this.pendingWaiters = [];
    this.sending = true;
    this.send(fields)
      .catch(this.onError)
      .finally(() => {
        this.sending = false;
        for (const wake of waiters) wake();
        this.pump();
      });
  }
}
