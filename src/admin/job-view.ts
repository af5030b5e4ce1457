/**
 * A job as the job detail page shows it: its fields, the payload decoded for
 * people, and a timeline rebuilt from what the row keeps (enqueue, due time,
 * each failed attempt, the current lease, death or completion). The row keeps
 * no record of successful leases before the last one, so the timeline shows
 * failures, not every delivery.
 */
import type { JobInfo } from '../engine/types.ts';
import type { JobDetail, TimelineEvent } from './api-types.ts';
import { viewPayload } from './payload-view.ts';

export type { JobDetail };

export function jobDetail(job: JobInfo): JobDetail {
  const { payload, result, resultContentType, ...rest } = job;
  const contentType = resultContentType ?? 'application/octet-stream';
  return {
    ...rest,
    payload: viewPayload(payload, job.contentType),
    result: result === null ? null : { ...viewPayload(result, contentType), contentType },
    errors: job.errors.map((error) => ({ ...error, stoppedByCancel: stoppedByCancel(job, error) })),
    timeline: timeline(job),
  };
}

/**
 * Whether an attempt's error is the end a cancel gave it — the worker's nack
 * after it was told to stop, or its lease running out — rather than a failure:
 * the job ended cancelled, and this is its last attempt's error, recorded once
 * the cancel had been asked for.
 */
function stoppedByCancel(job: JobInfo, error: JobInfo['errors'][number]): boolean {
  return (
    job.state === 'cancelled' &&
    job.cancelledAtMs !== null &&
    error.attempt === job.attempt &&
    error.atMs >= job.cancelledAtMs
  );
}

/** "40%", "{"step":"upload"}" or both, for the timeline. */
function describeProgress(progress: NonNullable<JobInfo['progress']>): string {
  return [progress.percent === null ? '' : `${progress.percent}%`, progress.json ?? '']
    .filter((part) => part !== '')
    .join(' ');
}

function timeline(job: JobInfo): TimelineEvent[] {
  // A job deleted as it finished (outcomeOnly): its enqueue is no longer known, only its end.
  const events: TimelineEvent[] = job.outcomeOnly
    ? []
    : [
        {
          atMs: job.enqueuedAtMs,
          event: 'enqueued',
          detail: `enqueued to ${job.queue} with priority ${job.priority}`,
        },
      ];
  if (job.runAtMs > job.enqueuedAtMs && job.attempt === 0) {
    events.push({ atMs: job.runAtMs, event: 'due', detail: 'scheduled to run' });
  }
  for (const error of job.errors) {
    events.push(
      stoppedByCancel(job, error)
        ? {
            atMs: error.atMs,
            event: 'attempt_stopped',
            detail: `attempt ${error.attempt} stopped by the cancel: ${error.error}`,
          }
        : { atMs: error.atMs, event: 'attempt_failed', detail: `attempt ${error.attempt}: ${error.error}` },
    );
  }
  if (job.state === 'leased' && job.leasedAtMs !== null) {
    const worker = job.workerId === null ? '' : ` by ${job.workerId}`;
    events.push({ atMs: job.leasedAtMs, event: 'leased', detail: `attempt ${job.attempt} leased${worker}` });
    if (job.leaseDeadlineMs !== null) {
      events.push({
        atMs: job.leaseDeadlineMs,
        event: 'lease_deadline',
        detail: 'the lease ends unless extended',
      });
    }
    if (job.timeoutAtMs !== null) {
      events.push({
        atMs: job.timeoutAtMs,
        event: 'timeout',
        detail: 'the attempt ends failed (reason timeout), extended or not',
      });
    }
  }
  if (job.progress !== null) {
    events.push({ atMs: job.progress.atMs, event: 'progress', detail: describeProgress(job.progress) });
  }
  if ((job.state === 'ready' || job.state === 'scheduled') && job.attempt > 0) {
    events.push({ atMs: job.runAtMs, event: 'due', detail: `attempt ${job.attempt + 1} due` });
  }
  if (job.failedAtMs !== null) {
    events.push({
      atMs: job.failedAtMs,
      event: 'dead',
      detail: `reason ${job.deadReason ?? 'unknown'}`,
    });
  }
  if (job.completedAtMs !== null) {
    if (job.leasedAtMs !== null) {
      const ran = Math.max(0, job.completedAtMs - job.leasedAtMs);
      events.push({
        atMs: job.leasedAtMs,
        event: 'leased',
        detail: `attempt ${job.attempt} started; it ran ${ran} ms`,
      });
    }
    events.push({ atMs: job.completedAtMs, event: 'completed', detail: `acked on attempt ${job.attempt}` });
  }
  if (job.expiresAtMs !== null && (job.state === 'ready' || job.state === 'scheduled')) {
    events.push({ atMs: job.expiresAtMs, event: 'expires', detail: 'not handed out after this time' });
  }
  if (job.cancelledAtMs !== null) {
    const by = job.cancelledBy === null ? '' : ` by ${job.cancelledBy}`;
    events.push(
      job.state === 'leased'
        ? {
            atMs: job.cancelledAtMs,
            event: 'cancel_requested',
            detail: `cancel asked for${by}; the worker was told to stop`,
          }
        : { atMs: job.cancelledAtMs, event: 'cancelled', detail: `cancelled${by}` },
    );
  }
  // Stable sort: events at the same time keep the order above (cause before effect).
  return events.sort((a, b) => a.atMs - b.atMs);
}
