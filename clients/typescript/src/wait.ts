/**
 * Waiting for a job's outcome: `completed` (with its result), `dead` (with
 * the dead letter's error) or `cancelled`.
 *
 * How: subscribe to the job's final events from the oldest the server keeps
 * (so an outcome that happened just before the wait is found too), and once
 * the subscription has caught up read the job with GetJob, which answers for
 * a job that ended earlier and is still retained, or, for one deleted as it
 * finished, with the outcome the server keeps for limits.finished_outcome_ms
 * (`outcomeOnly`). Whichever tells first
 * wins. After a disconnect the subscription resumes; if the server can no
 * longer serve the resume (it restarted, or the backlog moved on) the wait
 * starts over the same way, so no outcome is missed.
 */

import { status } from '@grpc/grpc-js';
import { timerArgument } from './arguments.ts';
import type { Connection } from './connection.ts';
import { connectionClosedByServer, SeppError, toSeppError } from './errors.ts';
import { EventSubscription, type JobEvent } from './events.ts';
import type { Job } from './jobs.ts';
import type { DeadReason, JobState } from './types.ts';

/** How a job ended. */
export type JobOutcome =
  | {
      state: 'completed';
      jobId: string;
      /** The result decoded by its content type (JSON parsed, `text/*` a string, else a Buffer); null without one. */
      result: unknown;
      /** The result's bytes and content type; null without one. */
      resultBytes: Buffer | null;
      resultContentType: string | null;
      /** When it was acked. */
      at: Date;
    }
  | {
      state: 'dead';
      jobId: string;
      /** The last attempt's error (null when an operator dead-lettered it). */
      error: string | null;
      reason: DeadReason | null;
      /** When it went dead. */
      at: Date;
    }
  | {
      state: 'cancelled';
      jobId: string;
      /** When it was cancelled, if known. */
      at: Date | null;
    };

/** How long to wait. */
export interface WaitOptions {
  /** Give up after this long, in ms, with a DEADLINE_EXCEEDED SeppError (the job goes on). Default: no limit. */
  timeoutMs?: number;
  /** Stops waiting (CANCELLED). */
  signal?: AbortSignal;
}

function outcomeOfEvent(event: JobEvent): JobOutcome | null {
  switch (event.kind) {
    case 'completed':
      return {
        state: 'completed',
        jobId: event.jobId,
        result: event.result,
        resultBytes: event.resultBytes,
        resultContentType: event.resultContentType,
        at: event.at,
      };
    case 'dead_lettered':
      return {
        state: 'dead',
        jobId: event.jobId,
        error: event.error,
        reason: event.deadReason,
        at: event.at,
      };
    case 'cancelled':
      return { state: 'cancelled', jobId: event.jobId, at: event.at };
    default:
      return null;
  }
}

function outcomeOfJob(job: Job): JobOutcome | null {
  switch (job.state) {
    case 'completed':
      return {
        state: 'completed',
        jobId: job.id,
        result: job.result,
        resultBytes: job.resultBytes,
        resultContentType: job.resultContentType,
        at: job.completedAt ?? new Date(0),
      };
    case 'dead':
      return {
        state: 'dead',
        jobId: job.id,
        error: job.lastError,
        reason: job.deadReason,
        at: job.failedAt ?? new Date(0),
      };
    // Kept for the queue's cancelled_retention_ms; a leased job with a cancel request is not over yet.
    case 'cancelled':
      return { state: 'cancelled', jobId: job.id, at: job.cancelledAt };
    default:
      return null;
  }
}

/**
 * Runs `enqueue` with the server's event backlog recording, then waits for
 * the job it made. The server records events only while someone subscribes,
 * so a job that finishes between its enqueue and the wait's subscription
 * would otherwise leave no trace on a queue that does not retain completed
 * jobs: a subscription that matches nothing is held from before the enqueue
 * until the wait has caught up.
 */
export async function enqueueThenWait(
  conn: Connection,
  getJob: (id: string) => Promise<Job>,
  enqueue: () => Promise<{ id: string }>,
  options: WaitOptions,
): Promise<JobOutcome> {
  timerArgument(options.timeoutMs, 'timeoutMs');
  const keeper = new EventSubscription(conn, { jobIds: ['sepp-client-backlog-keeper'], reconnect: false });
  try {
    // Caught up (recording on), or failed (events turned off: the wait still reads GetJob).
    await keeper.caughtUp;
    const { id } = await enqueue();
    return await waitForJob(conn, getJob, id, options, () => keeper.close());
  } finally {
    keeper.close();
  }
}

/** How long the look at a job when a wait times out may take before the wait fails without it. */
const lookMs = 1000;

export function waitForJob(
  conn: Connection,
  getJob: (id: string) => Promise<Job>,
  jobId: string,
  options: WaitOptions,
  /** Called once the wait's own subscription has caught up. */
  onCaughtUp?: () => void,
): Promise<JobOutcome> {
  return new Promise<JobOutcome>((resolve, reject) => {
    const timeoutMs = timerArgument(options.timeoutMs, 'timeoutMs');
    const stop = new AbortController();
    let settled = false;
    let lastState: JobState | null = null;
    const finish = (outcome: JobOutcome | SeppError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      stop.abort();
      if (outcome instanceof SeppError) reject(outcome);
      else resolve(outcome);
    };
    const onAbort = () => finish(new SeppError(status.CANCELLED, `stopped waiting for job ${jobId}`));
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            // A last look, not the state seen when the wait began: the job may have moved on, or
            // ended without this wait hearing of it (settled through another server sharing a
            // PostgreSQL database: events are per server). At most lookMs, so a server that does
            // not answer does not hold the timeout back.
            let now = lastState === null ? '' : `; it was ${lastState} when the wait began`;
            const fail = () =>
              finish(
                new SeppError(
                  status.DEADLINE_EXCEEDED,
                  `job ${jobId} did not finish within ${timeoutMs} ms${now}`,
                ),
              );
            const giveUp = setTimeout(fail, lookMs);
            getJob(jobId)
              .then(
                (job) => {
                  const outcome = outcomeOfJob(job);
                  if (outcome !== null) finish(outcome);
                  now = `; it is ${job.state}`;
                },
                (error: unknown) => {
                  if (toSeppError(error).grpcCode === status.NOT_FOUND)
                    now = '; the server no longer has it (deleted, or ended and not kept)';
                },
              )
              .finally(() => {
                clearTimeout(giveUp);
                fail();
              });
          }, timeoutMs);
    if (options.signal?.aborted) {
      onAbort();
      return;
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });

    const check = () => {
      getJob(jobId).then(
        (job) => {
          lastState = job.state;
          const outcome = outcomeOfJob(job);
          if (outcome !== null) finish(outcome);
        },
        (error: unknown) => {
          const e = toSeppError(error);
          if (e.grpcCode === status.NOT_FOUND) {
            // A job deleted on ack (no retention) is NOT_FOUND, but its outcome event was
            // written on the Events stream before this answer: let the iteration take it first.
            setImmediate(
              finish,
              new SeppError(
                status.NOT_FOUND,
                `job ${jobId} was not found: no such job, or it ended and is no longer kept ` +
                  '(completed jobs are kept only for their queue’s completed_retention_ms, default 0; ' +
                  'dead letters for dead_retention_ms; the outcome of a job deleted as it finished for ' +
                  'limits.finished_outcome_ms, default 5 minutes, not across a restart), and its outcome ' +
                  'is no longer in the event backlog',
                { code: 'not_found', cause: e },
              ),
            );
          } else if (!e.retryable && !connectionClosedByServer(e)) finish(e);
          // UNAVAILABLE, or a connection the server closed: the subscription reconnects and
          // checks again once it has caught up.
        },
      );
    };

    const subscribe = () => {
      const subscription = new EventSubscription(conn, {
        jobIds: [jobId],
        kinds: ['completed', 'dead_lettered', 'cancelled'],
        fromOldest: true,
        signal: stop.signal,
        onCaughtUp: () => {
          onCaughtUp?.();
          check();
        },
      });
      (async () => {
        for await (const event of subscription) {
          const outcome = outcomeOfEvent(event);
          if (outcome !== null) {
            finish(outcome);
            return;
          }
        }
      })().catch((error: unknown) => {
        const e = toSeppError(error);
        // The resume cannot be served (restart, backlog moved on): start over from what is kept.
        if (e.grpcCode === status.OUT_OF_RANGE && !settled) subscribe();
        else finish(e);
      });
    };
    subscribe();
  });
}
