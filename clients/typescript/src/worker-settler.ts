/**
 * How a Worker ends an attempt with the server: its ack or nack retried through
 * outages (UNAVAILABLE) while the lease may still be ours, the nack of a cancelled
 * or given-back job, and the one log line that says how an attempt failed and
 * where its job went. The Worker decides which settlement an attempt gets and
 * emits its events; this says it to the server.
 */
import { backoffDelayMs } from './backoff.ts';
import { JobCancelledError, LeaseLostError, type SeppError, toSeppError } from './errors.ts';
import type { NackResult } from './types.ts';
import { type Active, nackOptions } from './worker-active.ts';
import { clockSleep, type WorkerClock } from './worker-clock.ts';
import { DeadLetter, RetryAfter, type WorkerJob } from './worker-job.ts';
import type { WorkerLogger } from './worker-options.ts';

/** What the settler needs from its Worker. */
export interface SettlerHost {
  readonly workerId: string;
  readonly clock: WorkerClock;
  readonly logger: WorkerLogger;
  readonly reconnectBaseDelayMs: number;
  readonly reconnectMaxDelayMs: number;
  /** Reports an error the worker goes on after (a retried outage, a refused nack). */
  report(error: SeppError): void;
}

export class Settler {
  constructor(private readonly host: SettlerHost) {}

  /**
   * Settlements that fail with UNAVAILABLE are retried while the lease may still be ours;
   * `settle` is told when it is a retry (the failed try may have been applied).
   * The first try has no async frame of its own: one promise and one turn of the
   * microtask queue less per job on the hot path (bench/results/sdk-worker-cpu-2026-12-07.md).
   */
  withRetry<T>(active: Active, settle: (repeated: boolean) => Promise<T>): Promise<T> {
    let first: Promise<T>;
    try {
      first = settle(false);
    } catch (error) {
      return this.retry(active, settle, error);
    }
    return first.catch((error: unknown) => this.retry(active, settle, error));
  }

  /** After a failed try: again after a backoff while the failure is UNAVAILABLE and the lease may be ours. */
  private async retry<T>(
    active: Active,
    settle: (repeated: boolean) => Promise<T>,
    failure: unknown,
  ): Promise<T> {
    const { clock, reconnectBaseDelayMs, reconnectMaxDelayMs } = this.host;
    for (let retry = 0; ; retry++) {
      const e = toSeppError(failure);
      const delayMs = backoffDelayMs(retry, reconnectBaseDelayMs, reconnectMaxDelayMs);
      if (!e.retryable || clock.nowMs() + delayMs >= active.leaseEndsAtMs) throw e;
      this.host.report(e);
      await clockSleep(clock, delayMs).done;
      try {
        return await settle(true);
      } catch (error) {
        failure = error;
      }
    }
  }

  /**
   * Nacks a failed attempt with the directive its error chooses (worker-active.ts
   * `nackOptions`) and logs the failure, with where the job went when the nack answered.
   */
  async fail(active: Active, error: Error): Promise<NackResult> {
    let outcome: NackResult;
    try {
      outcome = await this.withRetry(active, (repeated) =>
        active.lane.transport.nack(active.job, nackOptions(active, error), repeated),
      );
    } catch (thrown) {
      this.logFailure(active.job, error, undefined);
      throw thrown;
    }
    this.logFailure(active.job, error, outcome);
    return outcome;
  }

  /**
   * Ends a cancelled job's attempt with a nack, which the server answers with
   * state `cancelled`. A lease that already ended needs nothing more: the
   * server made the job cancelled then.
   */
  async cancelled(active: Active, error: JobCancelledError): Promise<void> {
    try {
      await this.withRetry(active, (repeated) =>
        active.lane.transport.nack(active.job, { error: error.message, retryAfterMs: 0 }, repeated),
      );
    } catch (thrown) {
      const e = toSeppError(thrown);
      if (!(e instanceof LeaseLostError) && !(e instanceof JobCancelledError)) this.host.report(e);
    }
  }

  /**
   * Gives a job not started back to the queue at once with a give-back: ready again, no
   * attempt counted (its attempt kept, its budget one larger). Sent once, never retried: one
   * that fails leaves the lease to run out (an attempt counted, as before give-backs). To a
   * server without give-backs (`uncounted` false) it is a nack for a retry at once, which
   * counts an attempt as the lease's expiry would, only sooner (retried as any settlement).
   */
  async giveBack(active: Active, uncounted: boolean, why: string): Promise<void> {
    const error = new Error(`given back unstarted: worker ${this.host.workerId} ${why}`);
    const { transport } = active.lane;
    try {
      if (uncounted) await transport.nack(active.job, { error, giveBack: true });
      else
        await this.withRetry(active, (repeated) =>
          transport.nack(active.job, { error, retryAfterMs: 0 }, repeated),
        );
    } catch (thrown) {
      const e = toSeppError(thrown);
      if (!(e instanceof LeaseLostError)) this.host.report(e);
    }
  }

  /** One line per failed attempt: the job, the error, where the job went (and the error's stack, for a throw). */
  private logFailure(job: WorkerJob, error: Error, outcome: NackResult | undefined): void {
    const where =
      outcome === undefined
        ? 'its nack failed, so it runs again once its lease ends'
        : outcome.state === 'dead'
          ? 'dead-lettered'
          : outcome.state === 'cancelled'
            ? 'cancelled'
            : `retried ${outcome.runAt === null ? 'now' : `at ${outcome.runAt.toISOString()}`}`;
    const line =
      `sepp worker ${this.host.workerId}: job ${job.id} (${job.queue}/${job.type}, attempt ${job.attempt} ` +
      `of ${job.maxAttempts}) failed: ${error.message}; ${where}`;
    // RetryAfter and DeadLetter are the handler's own choice, not a surprise.
    if (error instanceof RetryAfter || error instanceof DeadLetter) this.host.logger.info(line);
    else this.host.logger.warn(line, error);
  }
}
