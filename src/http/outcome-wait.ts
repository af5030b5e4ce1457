/**
 * Waiting for a job's outcome over HTTP (a long-poll): `completed` with its
 * result, `dead` with the last error, or `cancelled`.
 *
 * As the SDKs do it (clients/typescript/src/wait.ts): subscribe to the job's
 * final events from the oldest the server keeps, so an outcome that came just
 * before the wait is found too, and once the subscription has caught up read
 * the job, which answers for a job that ended earlier and is still kept (or,
 * deleted as it finished, with the outcome kept for limits.finished_outcome_ms).
 * Whichever tells first wins. The subscription counts against
 * limits.max_event_subscribers like any Events stream (429 when they are all
 * taken). The wait ends after `waitMs` (at most limits.max_wait_ms) with the
 * job's state and `finished: false`, when the client leaves, or when the
 * server shuts down (the same answer, at once). On a store other servers share, a job
 * another server ends is found by this server's next look (engine/events/remote-ends.ts). `waitMs` 0 looks at the
 * backlog and the job and answers at once.
 */
import type { QueueScope } from '../config/index.ts';
import { SeppError, toSeppError } from '../engine/errors.ts';
import type { EventOwner } from '../engine/events/index.ts';
import type { LifecycleEvent } from '../engine/events/lifecycle-event.ts';
import type { JobInfo, JobState } from '../engine/types.ts';
import { resultToJson } from './job-json.ts';
import type { ApiContext } from './route-spec.ts';

export interface Outcome {
  jobId: string;
  finished: boolean;
  state: JobState;
  atMs: number | null;
  error?: string | null;
  deadReason?: string | null;
  [result: string]: unknown;
}

function outcomeOfEvent(event: LifecycleEvent): Outcome | null {
  const { jobId, atMs } = event;
  switch (event.kind) {
    case 'completed':
      return {
        jobId,
        finished: true,
        state: 'completed',
        atMs,
        ...resultToJson(event.result, event.resultContentType),
      };
    case 'dead_lettered':
      return { jobId, finished: true, state: 'dead', atMs, error: event.error, deadReason: event.reason };
    case 'cancelled':
      return { jobId, finished: true, state: 'cancelled', atMs };
    default:
      return null;
  }
}

function outcomeOfJob(job: JobInfo): Outcome {
  const { id: jobId, state } = job;
  switch (state) {
    case 'completed':
      return {
        jobId,
        finished: true,
        state,
        atMs: job.completedAtMs,
        ...resultToJson(job.result, job.resultContentType),
      };
    case 'dead':
      return {
        jobId,
        finished: true,
        state,
        atMs: job.failedAtMs,
        error: job.lastError,
        deadReason: job.deadReason,
      };
    case 'cancelled':
      return { jobId, finished: true, state, atMs: job.cancelledAtMs };
    default:
      // A leased job with a cancel request is not over until its worker stops.
      return { jobId, finished: false, state, atMs: null };
  }
}

function notKept(jobId: string, cause: SeppError): SeppError {
  return new SeppError(
    'not_found',
    `job ${jobId} was not found: no such job, or it ended and is no longer kept (completed jobs are kept only ` +
      "for their queue's completed_retention_ms, default 0; dead letters for dead_retention_ms; the outcome of a " +
      'job deleted as it finished for limits.finished_outcome_ms, default 5 minutes, not across a restart), and ' +
      'its outcome is no longer in the event backlog',
    { cause },
  );
}

const finalKinds = ['completed', 'dead_lettered', 'cancelled'] as const;

export async function waitForOutcome(
  ctx: ApiContext,
  jobId: string,
  requestedWaitMs: number,
  signal: AbortSignal,
  /** The caller's queues (null: all): the route checked the job's row; its events are held to them too. */
  scope: QueueScope | null = null,
  /** The caller's key, which holds the wait's subscription (grpc.max_event_subscribers_per_key). */
  owner: EventOwner | undefined,
  /** The caller's name: each read of the job counts toward its share of the store's read queue. */
  reader: string,
): Promise<Outcome> {
  const { engine } = ctx;
  const waitMs = Math.min(requestedWaitMs, engine.limits.maxWaitMs);
  // Counted while it reads, not while it waits: a long-poll is not a read in flight (server.ts).
  const read = async (): Promise<Outcome> => {
    const leave = engine.enterRead(reader);
    try {
      return outcomeOfJob(await engine.getJob(jobId));
    } catch (error) {
      const e = toSeppError(error);
      throw e.code === 'not_found' ? notKept(jobId, e) : e;
    } finally {
      leave();
    }
  };
  if (ctx.draining()) return read();

  return new Promise<Outcome>((resolve, reject) => {
    let done = false;
    let subscription: { close(): void } | undefined;
    const cleanups: (() => void)[] = [];
    const finish = (result: Outcome | SeppError) => {
      if (done) return;
      done = true;
      for (const cleanup of cleanups.splice(0)) cleanup();
      subscription?.close();
      if (result instanceof SeppError) reject(result);
      else resolve(result);
    };
    /** Answers with where the job is now (a timeout, a shutdown). */
    const answerNow = () => read().then(finish, (error: unknown) => finish(toSeppError(error)));

    if (waitMs > 0) {
      const timer = ctx.clock.setTimer(waitMs, answerNow);
      cleanups.push(() => timer.cancel());
    }
    cleanups.push(ctx.onDrain(answerNow));
    const onAbort = () => finish(new SeppError('unavailable', 'the client went away'));
    signal.addEventListener('abort', onAbort, { once: true });
    cleanups.push(() => signal.removeEventListener('abort', onAbort));

    try {
      subscription = engine.subscribeEvents(
        {
          queues: [],
          jobIds: [jobId],
          kinds: [...finalKinds],
          ...(scope === null ? {} : { queueAllowed: (queue: string) => scope.allows(queue) }),
        },
        { kind: 'oldest' },
        {
          send: (events, written) => {
            written();
            for (const event of events) {
              const outcome = outcomeOfEvent(event);
              if (outcome !== null) return finish(outcome);
            }
          },
          caughtUp: () => {
            read().then(
              (outcome) => {
                // With no time to wait, the backlog and the job's row were all there was to look at.
                if (outcome.finished || waitMs === 0) finish(outcome);
              },
              (error: unknown) => {
                const e = toSeppError(error);
                // A job deleted on ack is gone, but its event may be published in this same turn: let it come first.
                if (e.code === 'not_found') setImmediate(() => finish(e));
                else finish(e);
              },
            );
          },
          // Ended by the engine: the job is gone after another server ended it (remote-ends.ts),
          // which says so; else (shutdown, fallen behind a very busy backlog) say where the job is.
          end: (error) => (error.code === 'not_found' ? finish(error) : answerNow()),
        },
        owner,
      );
    } catch (error) {
      finish(toSeppError(error));
    }
    if (done) subscription?.close();
  });
}
