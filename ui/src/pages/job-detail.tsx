/**
 * One job: its fields, progress, decoded payload and result, metadata,
 * attempts with errors, timeline, and what an operator can do to it. While
 * the job has not finished the page reads it again every second, so its
 * progress and outcome show up live (one small read per second per open
 * page; simpler and cheaper than holding an event stream per page).
 */
import type { ComponentChildren } from 'preact';
import { useEffect } from 'preact/hooks';
import { can, post, query, seg } from '../api.ts';
import {
  CopyId,
  Empty,
  ErrorBanner,
  Facts,
  Loading,
  notify,
  PageHeader,
  ReasonBadge,
  StateBadge,
  Time,
} from '../components/common.tsx';
import { ConfirmDialog, useConfirm } from '../components/confirm-dialog.tsx';
import { fmtBytes, humanize, shortId } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';
import type { JobDetail as Job, Session } from '../types.ts';

type Action = 'cancel' | 'delete' | 'requeue' | 'dead-letter' | 'release-lease';

const actionText: Record<Action, { label: string; title: string; body: string; danger: boolean }> = {
  cancel: {
    label: 'Cancel job',
    title: 'Cancel this job?',
    body: 'The job is deleted and will not run. This cannot be undone.',
    danger: true,
  },
  delete: {
    label: 'Delete',
    title: 'Delete this job?',
    body: 'The job is removed for good. This cannot be undone.',
    danger: true,
  },
  'release-lease': {
    label: 'Release lease',
    title: 'Release this lease?',
    body: 'The lease ends now, as its expiry would: the attempt counts, and the job is ready for another worker (or dead, with reason lease expired, if this was its last attempt). The worker is refused when it next extends, acks or nacks.',
    danger: true,
  },
  requeue: {
    label: 'Requeue',
    title: 'Requeue this job?',
    body: 'The job goes back to ready with a fresh attempt budget and runs again.',
    danger: false,
  },
  'dead-letter': {
    label: 'Dead-letter',
    title: 'Move this job to the dead letters?',
    body: 'The job stops being delivered and waits in the dead letters (reason: dead_lettered) until requeued or deleted.',
    danger: true,
  },
};

function allowedActions(job: Job): Action[] {
  switch (job.state) {
    case 'ready':
    case 'scheduled':
      return ['dead-letter', 'cancel'];
    case 'dead':
    case 'completed':
      return ['requeue', 'delete'];
    case 'leased':
      return ['release-lease'];
    default:
      return [];
  }
}

/** How often an unfinished job is read again, in ms. */
const livePollMs = 1000;

function ProgressCard({ progress }: { progress: NonNullable<Job['progress']> }) {
  return (
    <section class="card" aria-labelledby="job-progress">
      <h2 id="job-progress" class="card-title">
        Progress{' '}
        <span class="muted">
          reported <Time ms={progress.atMs} />
        </span>
      </h2>
      {progress.percent !== null && (
        <div class="progress">
          <div
            class="progress-bar"
            role="progressbar"
            aria-valuemin={0}
            aria-valuemax={100}
            aria-valuenow={progress.percent}
          >
            <span style={{ width: `${progress.percent}%` }} />
          </div>
          <strong>{Math.round(progress.percent * 10) / 10}%</strong>
        </div>
      )}
      {progress.json !== null && <pre class="payload">{prettyJson(progress.json)}</pre>}
    </section>
  );
}

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The timeline shows each error's first line; the attempts table below has all of it. */
function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

export function JobDetail({ id, session }: { id: string; session: Session }) {
  const { data: job, error, reload } = useApi<Job>(`/api/v1/jobs/${seg(id)}`, { pollMs: 5000 });
  const confirm = useConfirm<Action>();
  const action = useAction();
  const live = job !== null && job.state !== 'completed' && job.state !== 'dead';
  useEffect(() => {
    if (!live) return;
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, livePollMs);
    return () => window.clearInterval(timer);
  }, [live, reload]);

  const run = async (which: Action) => {
    // A dead job is deleted as a dead letter; a completed one by the cancel call (it removes any job not leased).
    const result = await action.run(() =>
      which === 'delete' && job?.state === 'dead'
        ? post(`/api/v1/queues/${seg(job.queue)}/dead-letters/delete`, { jobIds: [id] })
        : post(`/api/v1/jobs/${seg(id)}/${which === 'delete' ? 'cancel' : which}`),
    );
    confirm.close();
    if (result === undefined) return;
    if (which === 'cancel' || which === 'delete') {
      notify(`Job ${shortId(id)} ${which === 'cancel' ? 'cancelled' : 'deleted'}.`);
      // Back to the list the job was in.
      navigate(
        job?.state === 'dead'
          ? `/dead-letters${query({ queue: job.queue })}`
          : `/jobs${query({ queue: job?.queue, state: job?.state })}`,
      );
    } else {
      const done: Record<string, string> = {
        requeue: 'requeued',
        'dead-letter': 'moved to the dead letters',
        'release-lease': 'released from its lease',
      };
      notify(`Job ${shortId(id)} ${done[which]}.`);
      reload();
    }
  };

  const pending = confirm.pending === null ? null : actionText[confirm.pending];
  return (
    <>
      <PageHeader title={`Job ${shortId(id)}`}>
        {job &&
          can(session, 'operator') &&
          allowedActions(job).map((a) => (
            <button
              key={a}
              type="button"
              class={actionText[a].danger ? 'btn btn-small btn-danger' : 'btn btn-small btn-primary'}
              onClick={() => confirm.ask(a)}
            >
              {actionText[a].label}
            </button>
          ))}
        <button type="button" class="btn btn-small" onClick={reload}>
          Refresh
        </button>
      </PageHeader>
      {job && (
        <p class="breadcrumbs">
          <Link href={`/queues/${seg(job.queue)}`}>{job.queue}</Link> /{' '}
          <Link href={`/jobs${query({ queue: job.queue, state: job.state })}`}>{job.state}</Link> /{' '}
          <span class="mono">{id}</span>
        </p>
      )}
      <ErrorBanner error={error ?? action.error} onDismiss={action.error ? action.clear : undefined} />
      {job === null ? (
        error === null && <Loading />
      ) : (
        <>
          {job.state === 'leased' && (
            <div class="banner banner-info">
              A worker holds this job's lease; it can be changed once the worker settles it or the lease ends.
              A stuck worker's lease can be released.
            </div>
          )}
          <section class="card" aria-labelledby="job-facts">
            <h2 id="job-facts" class="card-title">
              Job <StateBadge state={job.state} /> <ReasonBadge reason={job.deadReason} />
            </h2>
            <Facts
              items={[
                ['Id', <CopyId id={job.id} />],
                ['Queue', <Link href={`/queues/${seg(job.queue)}`}>{job.queue}</Link>],
                ['Type', job.type],
                ['Priority', String(job.priority)],
                ...(job.group !== null ? [['Group', job.group] as [string, string]] : []),
                ['Attempt', `${job.attempt} of ${job.maxAttempts}`],
                ['Enqueued', <Time ms={job.enqueuedAtMs} />],
                ['Due', <Time ms={job.runAtMs} />],
                ...(job.leaseDeadlineMs !== null
                  ? [['Lease ends', <Time ms={job.leaseDeadlineMs} />] as [string, ComponentChildren]]
                  : []),
                ...(job.workerId !== null ? [['Worker', job.workerId] as [string, string]] : []),
                ...(job.failedAtMs !== null
                  ? [['Failed', <Time ms={job.failedAtMs} />] as [string, ComponentChildren]]
                  : []),
                ...(job.completedAtMs !== null
                  ? [['Completed', <Time ms={job.completedAtMs} />] as [string, ComponentChildren]]
                  : []),
                ['Idempotency key', job.idempotencyKey ?? '—'],
                ['Trace', job.traceparent ?? '—'],
              ]}
            />
          </section>
          {job.result !== null && (
            <section class="card" aria-labelledby="job-result">
              <h2 id="job-result" class="card-title">
                Result{' '}
                <span class="muted">
                  {job.result.contentType} · {fmtBytes(job.result.bytes)} · shown as {job.result.view}
                </span>
              </h2>
              {job.result.truncated && <p class="muted">Only the first 64 KiB are shown.</p>}
              {job.result.bytes === 0 ? (
                <Empty title="Empty result" />
              ) : (
                <pre class="payload">{job.result.text}</pre>
              )}
            </section>
          )}
          {job.progress !== null && <ProgressCard progress={job.progress} />}
          <section class="card" aria-labelledby="job-payload">
            <h2 id="job-payload" class="card-title">
              Payload{' '}
              <span class="muted">
                {job.contentType} · {fmtBytes(job.payload.bytes)} · shown as {job.payload.view}
              </span>
            </h2>
            {job.payload.truncated && <p class="muted">Only the first 64 KiB are shown.</p>}
            {job.payload.bytes === 0 ? (
              <Empty title="Empty payload" />
            ) : (
              <pre class="payload">{job.payload.text}</pre>
            )}
          </section>
          <div class="two-col">
            <section class="card" aria-labelledby="job-metadata">
              <h2 id="job-metadata" class="card-title">
                Metadata
              </h2>
              {Object.keys(job.metadata).length === 0 ? (
                <Empty title="No metadata" />
              ) : (
                <table class="table table-compact">
                  <tbody>
                    {Object.entries(job.metadata).map(([k, v]) => (
                      <tr key={k}>
                        <th scope="row">{k}</th>
                        <td class="mono">{v}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
            <section class="card" aria-labelledby="job-timeline">
              <h2 id="job-timeline" class="card-title">
                Timeline
              </h2>
              <ol class="timeline">
                {job.timeline.map((event, i) => (
                  <li key={i} class={`timeline-${event.event}`}>
                    <Time ms={event.atMs} />
                    <span>
                      <strong>{humanize(event.event)}</strong> — {firstLine(event.detail)}
                    </span>
                  </li>
                ))}
              </ol>
            </section>
          </div>
          <section class="card" aria-labelledby="job-errors">
            <h2 id="job-errors" class="card-title">
              Attempts with errors
            </h2>
            {job.errors.length === 0 ? (
              <Empty title="No failed attempts" />
            ) : (
              <div class="table-wrap">
                <table class="table table-stack">
                  <thead>
                    <tr>
                      <th scope="col" class="num">
                        Attempt
                      </th>
                      <th scope="col">Failed at</th>
                      <th scope="col">Error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {job.errors.map((e) => (
                      <tr key={e.attempt}>
                        <td data-label="Attempt" class="num">
                          {e.attempt}
                        </td>
                        <td data-label="Failed at" class="nowrap">
                          <Time ms={e.atMs} />
                        </td>
                        <td data-label="Error">
                          <pre class="error-text">{e.error}</pre>
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
        </>
      )}
      <ConfirmDialog
        open={pending !== null}
        title={pending?.title ?? ''}
        confirmLabel={pending?.label ?? ''}
        danger={pending?.danger ?? false}
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={() => confirm.pending && run(confirm.pending)}
      >
        <p>{pending?.body}</p>
      </ConfirmDialog>
    </>
  );
}
