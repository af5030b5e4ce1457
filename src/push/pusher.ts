/**
 * The worker inside the server that delivers one queue's jobs to its push
 * target. It leases through the engine's public API like any worker
 * (reserve with a long-poll, then ack or nack with the lease's attempt), so
 * fencing, lease expiry and redelivery after a crash work as for every
 * worker: a push in flight when the process dies is delivered again once its
 * lease runs out, with the next attempt number (at-least-once).
 *
 * States: running (a reserve waiting or deliveries open) → stopping (no new
 * reserve; open deliveries get until the deadline, then are aborted and
 * nacked at once) → stopped.
 *
 * Concurrency: at most the target's max_in_flight deliveries; the reserve
 * asks for the free slots only, and the queue's flow control (max_leased,
 * rate limits, groups) hands out no more than it allows, so both apply.
 * Leases last timeout_ms plus a margin, so a delivery always ends (by its
 * timeout) before its lease does.
 */
import type { Agent as HttpAgent } from 'node:http';
import { Agent as PlainAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { PushTarget } from '../config/index.ts';
import type { Engine } from '../engine/engine.ts';
import { toSeppError } from '../engine/errors.ts';
import type { LeasedJob } from '../engine/types.ts';
import { type DeliveryOutcome, deliver, shownUrl } from './delivery.ts';
import { PushStats, type PushStatus } from './stats.ts';

/** How long a lease outlives the delivery's timeout: time to ack or nack after the answer. */
export const leaseMarginMs = 10_000;
/** How long one reserve waits for jobs before asking again (at most limits.max_wait_ms). */
const reserveWaitMs = 30_000;
/** Pause after a reserve that failed (storage unavailable, say), before the next. */
const reserveRetryMs = 1000;
/** Pause after an empty answer that came at once (a reserve that could not wait). */
const emptyPollMs = 100;

/** What telemetry records of each delivery (telemetry implements it; app.ts connects the two). */
export interface PushObserver {
  delivered(queue: string, outcome: DeliveryOutcome['kind'] | string, durationMs: number): void;
}

export interface PusherDeps {
  engine: Engine;
  version: string;
  observer: PushObserver | undefined;
  log: { warn(event: string, fields?: Readonly<Record<string, string | number>>): void };
  nowMs: () => number;
}

interface Open {
  job: LeasedJob;
  abort: AbortController;
}

export class Pusher {
  private target: PushTarget;
  private agent: HttpAgent | HttpsAgent;
  private stopping = false;
  private readonly open = new Map<string, Open>();
  private readonly reserveAbort = new AbortController();
  /** Woken when a delivery ends or the pusher stops (the loop waits for a free slot; stop for none open). */
  private readonly changed = new Set<() => void>();
  private loop: Promise<void> | undefined;
  readonly stats: PushStats;

  constructor(
    readonly queue: string,
    target: PushTarget,
    private readonly deps: PusherDeps,
  ) {
    this.target = target;
    this.agent = agentFor(target);
    this.stats = new PushStats(shownUrl(new URL(target.url)));
  }

  private get queueKey(): string {
    return `queues.${this.queue}.push`;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** A reload changed the target: deliveries from now on use it (open ones finish with the old). */
  update(target: PushTarget): void {
    if (target.url !== this.target.url || target.maxInFlight !== this.target.maxInFlight) {
      // Open deliveries still use the old agent: it is closed once they have had their time.
      const old = this.agent;
      setTimeout(() => old.destroy(), this.target.timeoutMs + leaseMarginMs).unref();
      this.agent = agentFor(target);
    }
    this.target = target;
    this.stats.url = shownUrl(new URL(target.url));
    this.notify();
  }

  /** Stops a delivery of this lease, if one is open (its job was cancelled). */
  cancel(jobId: string, attempt: number): void {
    const open = this.open.get(jobId);
    if (open !== undefined && open.job.attempt === attempt) open.abort.abort('the job was cancelled');
  }

  status(): PushStatus {
    return this.stats.view(this.open.size, !this.stopping, this.target.maxInFlight);
  }

  /**
   * Stops leasing; open deliveries get `graceMs` to finish, then are aborted
   * (and nacked, so their jobs come back at once rather than when the lease ends).
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.reserveAbort.abort();
    this.notify();
    const deadline = setTimeout(() => {
      for (const { abort } of this.open.values()) abort.abort('the server is shutting down');
    }, graceMs);
    deadline.unref();
    await this.loop;
    while (this.open.size > 0) await this.nextChange();
    clearTimeout(deadline);
    this.agent.destroy();
  }

  private nextChange(): Promise<void> {
    return new Promise((resolve) => this.changed.add(resolve));
  }

  private notify(): void {
    const waiting = [...this.changed];
    this.changed.clear();
    for (const wake of waiting) wake();
  }

  private async run(): Promise<void> {
    const { engine } = this.deps;
    while (!this.stopping) {
      const free = this.target.maxInFlight - this.open.size;
      if (free <= 0) {
        await this.nextChange();
        continue;
      }
      let jobs: LeasedJob[];
      const askedAtMs = Date.now();
      try {
        jobs = await engine.reserve(
          {
            queues: [this.queue],
            maxJobs: free,
            leaseMs: this.target.timeoutMs + leaseMarginMs,
            waitMs: Math.min(reserveWaitMs, engine.limits.maxWaitMs),
            workerId: `push:${this.queue}`,
          },
          this.reserveAbort.signal,
        );
      } catch (error) {
        if (this.stopping) break;
        this.deps.log.warn('push.reserve_failed', { queue: this.queue, error: toSeppError(error).message });
        await new Promise((r) => setTimeout(r, reserveRetryMs).unref());
        continue;
      }
      for (const job of jobs) void this.deliverOne(job);
      // Nothing came, and at once: the reserve could not wait (limits.max_wait_ms = 0, or the engine
      // is draining). Poll gently instead of spinning.
      if (jobs.length === 0 && !this.stopping && Date.now() - askedAtMs < emptyPollMs) {
        await new Promise((r) => setTimeout(r, emptyPollMs).unref());
      }
    }
  }

  private async deliverOne(job: LeasedJob): Promise<void> {
    const abort = new AbortController();
    this.open.set(job.id, { job, abort });
    const startedMs = this.deps.nowMs();
    const { engine } = this.deps;
    try {
      const outcome = await deliver({
        job,
        target: this.target,
        queueKey: this.queueKey,
        agent: this.agent,
        version: this.deps.version,
        maxResultBytes: engine.limits.maxResultBytes,
        signal: abort.signal,
        nowMs: this.deps.nowMs,
      });
      const durationMs = this.deps.nowMs() - startedMs;
      this.deps.observer?.delivered(this.queue, outcome.kind === 'ok' ? 'ok' : outcome.reason, durationMs);
      await this.settle(job, outcome, durationMs);
    } catch (error) {
      // deliver() resolves every outcome; a throw here is a bug, and the lease will expire.
      this.deps.log.warn('push.delivery_failed', {
        queue: this.queue,
        job: job.id,
        error: toSeppError(error).message,
      });
    } finally {
      this.open.delete(job.id);
      this.notify();
    }
  }

  private async settle(job: LeasedJob, outcome: DeliveryOutcome, durationMs: number): Promise<void> {
    const { engine } = this.deps;
    const atMs = this.deps.nowMs();
    try {
      if (outcome.kind === 'ok') {
        await engine.ack({
          jobId: job.id,
          attempt: job.attempt,
          ...(outcome.result === null
            ? {}
            : {
                result: outcome.result,
                resultContentType: outcome.resultContentType ?? 'application/octet-stream',
              }),
        });
        this.stats.succeeded(atMs, durationMs, outcome.resultDropped);
        return;
      }
      this.stats.failed(atMs, durationMs, { jobId: job.id, attempt: job.attempt, error: outcome.error });
      await engine.nack({
        jobId: job.id,
        attempt: job.attempt,
        error: outcome.error,
        directive:
          outcome.retryAfterMs !== null
            ? { kind: 'delay', delayMs: outcome.retryAfterMs }
            : outcome.reason === 'aborted' && this.stopping
              ? { kind: 'delay', delayMs: 0 }
              : { kind: 'backoff' },
      });
    } catch (error) {
      // The lease is gone (it ran out, the job was cancelled) or storage is down: the
      // engine's own rules take over (expiry redelivers), and the status page says so.
      this.stats.failed(atMs, durationMs, {
        jobId: job.id,
        attempt: job.attempt,
        error: `could not ${outcome.kind === 'ok' ? 'ack' : 'nack'} after the delivery: ${toSeppError(error).message}`,
      });
    }
  }
}

function agentFor(target: PushTarget): HttpAgent | HttpsAgent {
  const options = { keepAlive: true, maxSockets: target.maxInFlight, maxFreeSockets: target.maxInFlight };
  return target.url.startsWith('https:') ? new HttpsAgent(options) : new PlainAgent(options);
}
