/**
 * Waiting reserves woken by what other servers did (a store several servers
 * share, StoreSignals): a server wakes its own waiters in-process when its own
 * commits make jobs ready (waiters.ts); jobs another server made ready reach
 * them through the store's signal, and — since a signal may be lost (a
 * reconnecting listener, a proxy that cannot LISTEN) — through a poll every
 * `pollIntervalMs` of the injected clock: what this server knows of its queues
 * (paused, settings, new queues) read again, the ready counts of the queues
 * someone waits on, and a maintenance pass (promotions, expiries and ticks that
 * were another server's to do, had it not died). Cancels of leased jobs, and
 * attempts ended by their hard timeout, that another server committed go to
 * this server's listeners (the workers connected here) once the store confirms
 * them (checked-notices.ts: anyone who can connect may send on the channel);
 * "jobs ready" wake only queues someone here waits on, once per turn, and an
 * unknown queue is learned with a bounded number of reads per poll (heard-ready.ts);
 * they have no poll: a worker that missed one learns at its next extend or
 * settlement. When the
 * store starts to hear signals (`listening`: its listener connected, at the
 * start or again), what it did not hear is looked for at once, as a poll
 * would: a job another server made ready just before does not wait for the
 * next poll.
 */

import type { CancelSignal, StoreSignals, TimeoutSignal } from '../../store/signals.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import type { EngineContext } from '../context.ts';
import { CheckedNotices } from './checked-notices.ts';
import { HeardReady } from './heard-ready.ts';
import type { WaiterRegistry } from './waiters.ts';

export class RemoteWakeups {
  private timer: TimerHandle | undefined;
  private stopped = false;
  private readonly checked: CheckedNotices;
  private readonly ready: HeardReady;

  constructor(
    private readonly signals: StoreSignals,
    private readonly waiters: WaiterRegistry,
    private readonly ctx: Pick<EngineContext, 'read'> & { clock: Clock },
    private readonly wakeMaintenance: () => void,
    /** Reads what this server knows of its queues again (queues/queue-refresh.ts). */
    private readonly refreshQueues: () => Promise<void>,
    knowsQueue: (queue: string) => boolean,
    /** Tells flow control that a queue has had grouped jobs (another server's signal says so). */
    groupsFound: (queue: string) => void,
    /** Where another server's cancels and timeouts of leases go: this server's Work streams. */
    private readonly leaseNotices: {
      cancelled(notices: readonly CancelSignal[]): void;
      timedOut(notices: readonly TimeoutSignal[]): void;
    },
  ) {
    this.checked = new CheckedNotices((unit) => this.ctx.read(unit));
    this.ready = new HeardReady(waiters, refreshQueues, knowsQueue, groupsFound);
  }

  start(): void {
    this.signals.listen((signal) => {
      if (signal.kind === 'listening') {
        // Signals sent before were not heard; the commits they told of are in the store now.
        void this.lookAtStore();
        return;
      }
      if (signal.kind === 'cancel') {
        this.checked.cancels(signal.notices, (notices) => this.leaseNotices.cancelled(notices));
        return;
      }
      if (signal.kind === 'timeout') {
        this.checked.timeouts(signal.notices, (notices) => this.leaseNotices.timedOut(notices));
        return;
      }
      this.ready.heard(signal.queue, signal.jobs, signal.grouped);
    });
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.ready.stop();
    this.signals.listen(() => {});
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.ctx.clock.setTimer(this.signals.pollIntervalMs, () => {
      this.poll().finally(() => this.schedule());
    });
  }

  private async poll(): Promise<void> {
    this.wakeMaintenance();
    await this.lookAtStore();
    this.ready.polled();
  }

  /** What signals would have said: the queues again, and waiters woken for the ready jobs of theirs. */
  private async lookAtStore(): Promise<void> {
    try {
      await this.refreshQueues();
      const queues = this.waiters.waitedQueues();
      if (queues.length === 0) return;
      const ready = await this.ctx.read(function* (view) {
        const found: [string, number][] = [];
        for (const queue of queues)
          found.push([queue, yield* view.counts.inState({ queue, state: 'ready' })]);
        return found;
      });
      for (const [queue, jobs] of ready) if (jobs > 0) this.waiters.notify(queue, jobs);
    } catch {
      // The store is unreachable: the next poll tries again; the waiters time out meanwhile.
    }
  }
}
