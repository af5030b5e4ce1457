/**
 * Push delivery (docs/http.md#push-delivery): one Pusher per queue that the
 * config gives a `[queues.NAME.push]` table, started with the server,
 * reconfigured by a reload, stopped at shutdown. Targets come only from the
 * config file (the SSRF stance is in target-address.ts); what an admin
 * changes at run time is the queue's own settings — pause, max_leased, rate
 * limits, backoff, max_attempts — which govern the pusher as any worker.
 */
import type { PushTarget } from '../config/index.ts';
import { Pusher, type PusherDeps } from './pusher.ts';
import type { PushStatus } from './stats.ts';

export { signatureOf, verifySignature } from './signature.ts';
export type { PushStatus } from './stats.ts';

export class PushService {
  private readonly pushers = new Map<string, Pusher>();
  private readonly stopCancels: () => void;
  private readonly retired = new Set<Promise<void>>();

  constructor(
    targets: Readonly<Record<string, PushTarget>>,
    private readonly deps: PusherDeps,
  ) {
    // A cancelled job's delivery is stopped; its nack then ends the job cancelled.
    this.stopCancels = deps.engine.onCancelRequested((notices) => {
      for (const notice of notices) this.pushers.get(notice.queue)?.cancel(notice.jobId, notice.attempt);
    });
    this.reconfigure(targets);
  }

  /** The queues that push, by name. */
  get queues(): string[] {
    return [...this.pushers.keys()];
  }

  /** Applies the push tables of a (re)loaded config: new ones start, removed ones stop, changed ones switch. */
  reconfigure(targets: Readonly<Record<string, PushTarget>>): void {
    for (const [queue, pusher] of this.pushers) {
      if (targets[queue] !== undefined) continue;
      this.pushers.delete(queue);
      const stopped = pusher.stop(0).finally(() => this.retired.delete(stopped));
      this.retired.add(stopped);
    }
    for (const [queue, target] of Object.entries(targets)) {
      const running = this.pushers.get(queue);
      if (running !== undefined) {
        running.update(target);
        continue;
      }
      const pusher = new Pusher(queue, target, this.deps);
      this.pushers.set(queue, pusher);
      pusher.start();
    }
  }

  /** A push queue's status for the admin UI; null when the queue does not push. */
  status(queue: string): PushStatus | null {
    return this.pushers.get(queue)?.status() ?? null;
  }

  /** Stops every pusher: open deliveries get `graceMs`, then are aborted and their jobs nacked. */
  async stop(graceMs: number): Promise<void> {
    this.stopCancels();
    await Promise.all([...[...this.pushers.values()].map((p) => p.stop(graceMs)), ...this.retired]);
  }
}
