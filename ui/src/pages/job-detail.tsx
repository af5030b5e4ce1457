/**
 * One job: its fields, progress, decoded payload and result, metadata,
 * attempts with errors, timeline, and what an operator can do to it. While
 * the job has not finished the page reads it again every second, so its
 * progress and outcome show up live (one small read per second per open
 * page; simpler and cheaper than holding an event stream per page).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { can, post, query, seg } from '../api.ts';
import { ChangeGroup } from '../components/change-group.tsx';
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
import { useWaitingNote } from '../components/waiting-note.ts';
import { fmtBytes, fmtDuration, fmtTime, humanize, localTimes, shortId } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';

/** Timeline events that name a time to come (the others have happened). */
const futureEvents: ReadonlySet<string> = new Set(['due', 'lease_deadline', 'timeout', 'expires']);

import type { JobDetail as Job, Session } from '../types.ts';
import { AttemptErrors, ProgressCard, WorkflowCard } from './job-sections.tsx';

type Action = 'cancel' | 'requeue' | 'dead-letter' | 'run-now' | 'priority' | 'delete' | 'release-lease';

const actionText: Record<Action, { label: string; title: string; body: string; danger: boolean }> = {
  cancel: {
    label: 'Cancel job',
    title: 'Cancel this job?',
    body: "The job will not run. It is kept as cancelled (with your name) for the queue's retention, and can be requeued.",
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
  'run-now': {
    label: 'Run now',
    title: 'Run this job now?',
    body: 'The job becomes ready at once, ahead of its run time (or of its retry backoff).',
    danger: false,
  },
  priority: {
    label: 'Change priority',
    title: 'Change the priority',
    body: 'Jobs with a higher priority are handed out first (9 first).',
    danger: false,
  },
  delete: {
    label: 'Delete',
    title: 'Delete this dead letter?',
    body: 'It is removed for good, and its idempotency key can be used again. This cannot be undone.',
    danger: true,
  },
};

/** What a running job's cancel says instead: the worker has to stop first. */
const cancelLeased =
  'The worker running it is told to stop at once. The job ends cancelled when the worker stops or its lease ends; it is not retried.';

function allowedActions(job: Job): Action[] {
  switch (job.state) {
    case 'ready':
      return ['priority', 'dead-letter', 'cancel'];
    case 'waiting':
      return ['cancel'];
    case 'scheduled':
      return ['run-now', 'priority', 'dead-letter', 'cancel'];
    case 'leased':
      return job.cancelledAtMs === null ? ['cancel', 'release-lease'] : ['release-lease'];
    case 'dead':
      return ['requeue', 'delete'];
    case 'completed':
    case 'cancelled':
      return ['requeue'];
    default:
      return [];
  }
}

function request(job: Job, which: Action, priority: number): [string, unknown] {
  const path = `/api/v1/jobs/${seg(job.id)}`;
  switch (which) {
    case 'run-now':
      return [`${path}/update`, { runNow: true }];
    case 'priority':
      return [`${path}/update`, { priority }];
    case 'delete':
      return [`/api/v1/queues/${seg(job.queue)}/dead-letters/delete`, { jobIds: [job.id] }];
    default:
      return [`${path}/${which}`, {}];
  }
}

const done: Record<Action, (id: string) => string> = {
  cancel: (id) => `Job ${id} cancelled.`,
  requeue: (id) => `Job ${id} requeued.`,
  'dead-letter': (id) => `Job ${id} moved to the dead letters.`,
  'run-now': (id) => `Job ${id} is ready now.`,
  priority: (id) => `Job ${id}'s priority changed.`,
  delete: (id) => `Dead letter ${id} deleted.`,
  'release-lease': (id) => `Job ${id} released from its lease.`,
};

/** How often an unfinished job is read again, in ms. */
const livePollMs = 1000;

/** The timeline shows each error's first line; the attempts table below has all of it. */
function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

/**
 * When a finished job's last attempt started and how long it ran: a completed job
 * ran from its lease to its ack; a dead one from its last lease to its failure
 * (when it went dead by that attempt: not for a job dead-lettered or expired while waiting).
 */
function finishedRun(job: Job): [string, ComponentChildren][] {
  if (job.leasedAtMs === null || job.attempt === 0) return [];
  const endMs =
    job.state === 'completed'
      ? job.completedAtMs
      : job.state === 'dead' &&
          (job.deadReason === 'attempts_exhausted' || job.deadReason === 'lease_expired')
        ? job.failedAtMs
        : null;
  if (endMs === null) return [];
  return [
    ['Started', <Time ms={job.leasedAtMs} past />],
    ['Ran', <span data-testid="job-ran">{fmtDuration(Math.max(0, endMs - job.leasedAtMs))}</span>],
  ];
}

export function JobDetail({ id, session }: { id: string; session: Session }) {
  // An unfinished job is read every second (its progress and outcome show live), a finished one every 5 s.
  const [live, setLive] = useState(true);
  const {
    data: job,
    error,
    reload,
  } = useApi<Job>(`/api/v1/jobs/${seg(id)}`, {
    pollMs: live ? livePollMs : 5000,
  });
  const confirm = useConfirm<Action>();
  const action = useAction();
  const finished =
    job !== null && (job.state === 'completed' || job.state === 'dead' || job.state === 'cancelled');
  useEffect(() => setLive(!finished), [finished]);

  const [priority, setPriority] = useState(0);

  const run = async (which: Action) => {
    if (job === null) return;
    const [path, body] = request(job, which, priority);
    const result = await action.run(() => post(path, body));
    confirm.close();
    if (result === undefined) return;
    if (which === 'delete') {
      notify(done.delete(shortId(id)));
      navigate(`/dead-letters${query({ queue: job.queue })}`);
      return;
    }
    notify(
      which === 'cancel' && job.state === 'leased'
        ? `Cancel of job ${shortId(id)} asked: its worker was told to stop.`
        : done[which](shortId(id)),
    );
    reload();
  };

  const pending = confirm.pending === null ? null : actionText[confirm.pending];
  const waitingNote = useWaitingNote(
    job?.queue ?? '',
    confirm.pending === 'delete' && job !== null ? job.id : null,
  );
  return (
    <>
      <PageHeader title={`Job ${shortId(id)}`}>
        {job && can(session, 'operator') && <ChangeGroup job={job} action={action} onChanged={reload} />}
        {job &&
          can(session, 'operator') &&
          allowedActions(job).map((a) => (
            <button
              key={a}
              type="button"
              class={actionText[a].danger ? 'btn btn-small btn-danger' : 'btn btn-small btn-primary'}
              onClick={() => {
                setPriority(job.priority);
                confirm.ask(a);
              }}
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
          {job.outcomeOnly && (
            <div class="banner banner-info">
              This job was deleted as it finished (its queue keeps no {job.state} jobs): only its outcome is
              kept, for a few minutes (limits.finished_outcome_ms), not its payload or metadata.
            </div>
          )}
          {job.state === 'leased' && (
            <div class="banner banner-info">
              {job.cancelledAtMs === null
                ? "A worker holds this job's lease; it can be changed once the worker settles it or the lease ends. Cancelling it tells the worker to stop; a stuck worker's lease can be released."
                : `Cancel asked ${job.cancelledBy === null ? '' : `by ${job.cancelledBy} `}at ${fmtTime(job.cancelledAtMs)}: the worker was told to stop. The job ends cancelled when it does, or when its lease ends.`}
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
                ['Enqueued', <Time ms={job.enqueuedAtMs} past />],
                ['Due', <Time ms={job.runAtMs} />],
                ...(job.leaseDeadlineMs !== null
                  ? [['Lease ends', <Time ms={job.leaseDeadlineMs} />] as [string, ComponentChildren]]
                  : []),
                ...(job.timeoutAtMs !== null
                  ? [['Times out', <Time ms={job.timeoutAtMs} />] as [string, ComponentChildren]]
                  : []),
                ...(job.timeoutMs !== null
                  ? [['Timeout', fmtDuration(job.timeoutMs)] as [string, string]]
                  : []),
                ...(job.debounceKey !== null ? [['Debounce key', job.debounceKey] as [string, string]] : []),
                ...(job.debounceUntilMs !== null
                  ? [['Debounced until', <Time ms={job.debounceUntilMs} />] as [string, ComponentChildren]]
                  : []),
                ...(job.workerId !== null ? [['Worker', job.workerId] as [string, string]] : []),
                ...(job.failedAtMs !== null
                  ? [['Failed', <Time ms={job.failedAtMs} past />] as [string, ComponentChildren]]
                  : []),
                ...finishedRun(job),
                ...(job.completedAtMs !== null
                  ? [['Completed', <Time ms={job.completedAtMs} past />] as [string, ComponentChildren]]
                  : []),
                ...(job.expiresAtMs !== null
                  ? [['Expires', <Time ms={job.expiresAtMs} />] as [string, ComponentChildren]]
                  : []),
                ...(job.cancelledAtMs !== null
                  ? [
                      [
                        'Cancelled',
                        `${fmtTime(job.cancelledAtMs)}${job.cancelledBy === null ? '' : ` by ${job.cancelledBy}`}`,
                      ] as [string, string],
                    ]
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
          <WorkflowCard job={job} />
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
                    <Time ms={event.atMs} past={!futureEvents.has(event.event)} />
                    <span>
                      <strong>{humanize(event.event)}</strong> — {localTimes(firstLine(event.detail))}
                    </span>
                  </li>
                ))}
              </ol>
            </section>
          </div>
          <AttemptErrors errors={job.errors} />
        </>
      )}
      <ConfirmDialog
        open={pending !== null}
        title={pending?.title ?? ''}
        confirmLabel={pending?.label ?? ''}
        danger={pending?.danger ?? false}
        dismissLabel={confirm.pending === 'cancel' ? 'Keep it' : 'Cancel'}
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={() => confirm.pending && run(confirm.pending)}
      >
        <p>{confirm.pending === 'cancel' && job?.state === 'leased' ? cancelLeased : pending?.body}</p>
        {waitingNote !== '' && <p>{waitingNote}</p>}
        {confirm.pending === 'priority' && (
          <div class="field">
            <label for="job-priority">Priority</label>
            <select
              id="job-priority"
              value={String(priority)}
              onChange={(e) => setPriority(Number(e.currentTarget.value))}
            >
              {[9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map((p) => (
                <option key={p} value={String(p)}>
                  {p}
                </option>
              ))}
            </select>
          </div>
        )}
      </ConfirmDialog>
    </>
  );
}
