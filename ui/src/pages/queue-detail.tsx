/** One queue: counts (each a link to its jobs), effective settings with their sources, pause/resume, purge and delete. */
import { api, can, post, seg } from '../api.ts';
import { Empty, ErrorBanner, LiveStatus, Loading, notify, PageHeader } from '../components/common.tsx';
import { ConfirmDialog, useConfirm } from '../components/confirm-dialog.tsx';
import { newRequestKey } from '../components/filter-actions.tsx';
import { fmtDuration, fmtNum, fmtTime } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';
import { jobStates, type PushStatus, type QueueInfo, type Session } from '../types.ts';
import { SettingSourceCell, settingNote } from './queue-settings.tsx';
import { leasedText, PauseButton } from './queues.tsx';

/** A rate limit as the flow-control card shows it: "100 per 1s, burst 10" or "no limit". */
function rateText(rate: { leases: number; periodMs: number; burst: number }): string {
  return rate.leases === 0
    ? 'no limit'
    : `${fmtNum(rate.leases)} per ${fmtDuration(rate.periodMs)}, burst ${fmtNum(rate.burst)}`;
}

const limitText = (value: number) => (value === 0 ? 'no limit' : fmtNum(value));

/** What flow control holds back (docs/flow-control.md); only for queues that use it. */
function FlowControl({ queue }: { queue: QueueInfo }) {
  const s = queue.settings;
  const limited =
    s.maxLeased !== 0 || s.rateLimit.leases !== 0 || s.groupMaxLeased !== 0 || s.groupRateLimit.leases !== 0;
  if (!limited && queue.readyGroups === 0 && queue.throttledWorkers === 0) return null;
  const rows: [string, string][] = [
    ['Leased now', leasedText(queue)],
    ['Rate limit', rateText(s.rateLimit)],
    ['Throttled reserves', fmtNum(queue.throttledWorkers)],
    ['Groups with ready jobs', `${fmtNum(queue.readyGroups)}${queue.readyGroupsCapped ? '+' : ''}`],
    ['Per group: leased at once', limitText(s.groupMaxLeased)],
    ['Per group: rate limit', rateText(s.groupRateLimit)],
  ];
  return (
    <section class="card" aria-labelledby="flow-title">
      <h2 id="flow-title" class="card-title">
        Flow control
      </h2>
      <div class="table-wrap">
        <table class="table table-compact">
          <tbody>
            {rows.map(([label, value]) => (
              <tr key={label}>
                <th scope="row">{label}</th>
                <td>
                  <code>{value}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {queue.throttledWorkers > 0 && (
        <p class="muted">
          Throttled reserves are workers waiting while ready jobs are held back by a limit: the limit, not the
          number of workers, sets the pace.
        </p>
      )}
    </section>
  );
}

/** Where a push queue delivers and how it goes (docs/http.md#push-delivery); only for queues that push. */
function PushDelivery({ name }: { name: string }) {
  const { data: push } = useApi<PushStatus | null>(`/api/v1/queues/${seg(name)}/push`, { pollMs: 2000 });
  if (push === null || push === undefined) return null;
  const latency =
    push.latency === null
      ? 'no delivery yet'
      : `p50 ${fmtDuration(push.latency.p50Ms)}, p95 ${fmtDuration(push.latency.p95Ms)}, max ${fmtDuration(push.latency.maxMs)} (last ${fmtNum(push.latency.samples)})`;
  const rows: [string, string][] = [
    ['Endpoint', push.url],
    ['Deliveries open', `${fmtNum(push.inFlight)} of at most ${fmtNum(push.maxInFlight)}`],
    ['Delivered', fmtNum(push.delivered)],
    ['Failed attempts', fmtNum(push.failed)],
    ['Last success', push.lastSuccessAtMs === null ? 'never' : fmtTime(push.lastSuccessAtMs)],
    ['Latency', latency],
  ];
  return (
    <section class="card" aria-labelledby="push-title">
      <h2 id="push-title" class="card-title">
        Push delivery {!push.running && <span class="badge badge-paused">stopped</span>}
      </h2>
      <div class="table-wrap">
        <table class="table table-compact">
          <tbody>
            {rows.map(([label, value]) => (
              <tr key={label}>
                <th scope="row">{label}</th>
                <td>
                  <code>{value}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {push.lastErrors.length > 0 && (
        <>
          <h3>Last errors</h3>
          <ul>
            {push.lastErrors.map((e) => (
              <li key={`${e.jobId}:${e.attempt}:${e.atMs}`}>
                <small class="muted">{fmtTime(e.atMs)}</small>{' '}
                <Link href={`/jobs/${seg(e.jobId)}`} class="mono">
                  {e.jobId}
                </Link>{' '}
                (attempt {e.attempt}): {e.error}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

export function QueueDetail({ name, session }: { name: string; session: Session }) {
  const loaded = useApi<QueueInfo>(`/api/v1/queues/${seg(name)}`, { pollMs: 2000 });
  const { data: queue, error, reload } = loaded;
  // Actions only for a queue that is there: a typo in the address offers nothing to do.
  const exists = queue !== null;
  // The purge dialog's request key, made when it opens (filter-actions.tsx).
  const purge = useConfirm<{ requestKey: string }>();
  const remove = useConfirm<true>();
  const action = useAction();
  // Only an empty queue can be deleted (the server checks again).
  const empty = queue !== null && jobStates.every((state) => queue.counts[state] === 0);

  const doDelete = async () => {
    const result = await action.run(() =>
      api<{ deleted: string }>('DELETE', `/api/v1/queues/${seg(name)}`, undefined, { announce: false }),
    );
    remove.close();
    if (result !== undefined) {
      notify(`Deleted queue ${name}.`);
      navigate('/queues');
    }
  };

  // A failed purge keeps its dialog open with the error: pressing again repeats the request under the
  // same key, so a purge the first press started (its answer lost) is not started twice.
  const doPurge = async () => {
    const pending = purge.pending;
    if (pending === null) return;
    const result = await action.run(() =>
      post<{ deleted: number }>(`/api/v1/queues/${seg(name)}/purge`, {
        confirm: name,
        requestKey: pending.requestKey,
      }),
    );
    if (result === undefined) return;
    purge.close();
    notify(`Purged ${fmtNum(result.deleted)} jobs from ${name}.`);
    reload();
  };

  // A failed purge's error shows in its dialog, kept open.
  const pageActionError = purge.pending === null ? action.error : null;

  return (
    <>
      <PageHeader title={`Queue ${name}`}>
        <LiveStatus loaded={loaded} everyMs={2000} />
        {queue && <PauseButton queue={queue} session={session} onDone={reload} />}
        {exists && can(session, 'operator') && (
          <Link class="btn btn-small" href={`/enqueue?queue=${seg(name)}`}>
            Enqueue
          </Link>
        )}
        {exists && can(session, 'admin') && (
          <button
            type="button"
            class="btn btn-small btn-danger"
            onClick={() => purge.ask({ requestKey: newRequestKey() })}
          >
            Purge…
          </button>
        )}
        {can(session, 'admin') && empty && (
          <button type="button" class="btn btn-small btn-danger" onClick={() => remove.ask(true)}>
            Delete queue…
          </button>
        )}
      </PageHeader>
      <p class="breadcrumbs">
        <Link href="/queues">Queues</Link> / {name}
      </p>
      <ErrorBanner
        error={error?.status === 404 || loaded.stale ? pageActionError : (error ?? pageActionError)}
      />
      {queue === null ? (
        error?.status === 404 ? (
          <div class="card">
            <Empty title={`There is no queue ${name}`}>
              A queue exists once a job is enqueued to it or the configuration declares it.{' '}
              <Link href="/queues">All queues</Link>
            </Empty>
          </div>
        ) : (
          error === null && <Loading />
        )
      ) : (
        <>
          <section class="card" aria-labelledby="counts-title">
            <h2 id="counts-title" class="card-title">
              Jobs {queue.paused && <span class="badge badge-paused">paused</span>}
            </h2>
            <div class="state-links">
              {jobStates.map((state) => (
                <Link
                  key={state}
                  class={`state-link total-${state}`}
                  href={
                    state === 'dead'
                      ? `/dead-letters?queue=${seg(name)}`
                      : `/jobs?queue=${seg(name)}&state=${state}`
                  }
                >
                  <span class="total-value">{fmtNum(queue.counts[state])}</span>
                  <span class="total-label">{state}</span>
                </Link>
              ))}
            </div>
            <p class="muted">
              Oldest ready job:{' '}
              {queue.oldestReadyAgeMs === null ? 'none' : `${fmtDuration(queue.oldestReadyAgeMs)} old`} ·
              Streams waiting: {fmtNum(queue.waitingWorkers)}
            </p>
          </section>
          <FlowControl queue={queue} />
          <PushDelivery name={name} />
          <section class="card" aria-labelledby="settings-title">
            <h2 id="settings-title" class="card-title">
              Effective settings{' '}
              <Link class="btn btn-small" href={`/queues/${seg(name)}/settings`}>
                {can(session, 'admin') ? 'Edit settings' : 'Details'}
              </Link>
            </h2>
            <div class="table-wrap">
              {/* On a phone each setting stacks (value, source): a third column off the screen hid the sources. */}
              <table class="table table-compact table-stack" aria-label={`effective settings of ${name}`}>
                <tbody>
                  {queue.settingValues.map((setting) => (
                    <tr key={setting.key}>
                      <th scope="row">
                        <code>{setting.key}</code>
                      </th>
                      <td data-label="Value">
                        <code>{setting.text}</code>
                        {settingNote(setting) !== null && (
                          <small class="muted"> {settingNote(setting)}</small>
                        )}
                      </td>
                      <td data-label="Source">
                        <SettingSourceCell setting={setting} queue={name} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        </>
      )}
      <ConfirmDialog
        open={purge.pending !== null}
        title={`Purge queue ${name}?`}
        confirmLabel="Purge queue"
        typeToConfirm={name}
        danger
        busy={action.busy}
        onCancel={purge.close}
        onConfirm={doPurge}
      >
        <p>
          This deletes every <strong>ready</strong> and <strong>scheduled</strong> job of {name}
          {queue ? ` (${fmtNum(queue.counts.ready + queue.counts.scheduled)} now)` : ''}. Leased jobs finish
          normally; dead letters stay. This cannot be undone.
        </p>
        <ErrorBanner error={purge.pending === null ? null : action.error} onDismiss={action.clear} />
      </ConfirmDialog>
      <ConfirmDialog
        open={remove.pending !== null}
        title={`Delete queue ${name}?`}
        confirmLabel="Delete queue"
        danger
        busy={action.busy}
        onCancel={remove.close}
        onConfirm={doDelete}
      >
        <p>
          {name} holds no jobs. Deleting it removes it from the list; the next job enqueued to {name} creates
          it again, running, with its settings from the configuration.
        </p>
      </ConfirmDialog>
    </>
  );
}
