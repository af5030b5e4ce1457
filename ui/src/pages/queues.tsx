/** Every queue: counts by state, paused or not, with pause and resume at hand. */
import { can, post, seg } from '../api.ts';
import { Empty, ErrorBanner, Loading, notify, PageHeader } from '../components/common.tsx';
import { fmtDuration, fmtNum } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { QueueInfo, Session } from '../types.ts';

export function PauseButton({
  queue,
  session,
  onDone,
}: {
  queue: QueueInfo;
  session: Session;
  onDone: () => void;
}) {
  const action = useAction();
  if (!can(session, 'operator')) return null;
  const verb = queue.paused ? 'resume' : 'pause';
  return (
    <>
      <button
        type="button"
        class={queue.paused ? 'btn btn-primary btn-small' : 'btn btn-small'}
        disabled={action.busy}
        aria-label={`${queue.paused ? 'Resume' : 'Pause'} queue ${queue.name}`}
        onClick={async () => {
          const done = await action.run(() => post(`/api/v1/queues/${seg(queue.name)}/${verb}`));
          if (done !== undefined) {
            notify(`Queue ${queue.name} ${queue.paused ? 'resumed' : 'paused'}.`);
            onDone();
          }
        }}
      >
        {queue.paused ? 'Resume' : 'Pause'}
      </button>
      <ErrorBanner error={action.error} onDismiss={action.clear} />
    </>
  );
}

/** Leased jobs, and the queue's max_leased when it has one: "2 / 3". */
export function leasedText(q: QueueInfo): string {
  const limit = q.settings.maxLeased;
  return typeof limit === 'number' && limit > 0
    ? `${fmtNum(q.counts.leased)} / ${fmtNum(limit)}`
    : fmtNum(q.counts.leased);
}

export function Queues({ session }: { session: Session }) {
  const { data, error, reload } = useApi<{ queues: QueueInfo[] }>('/api/v1/queues', { pollMs: 2000 });
  return (
    <>
      <PageHeader title="Queues" />
      <ErrorBanner error={error} />
      {data === null ? (
        error === null && <Loading />
      ) : data.queues.length === 0 ? (
        <div class="card">
          <Empty title="No queues yet">
            A queue appears when its first job is enqueued, or when it is declared in the configuration.
          </Empty>
        </div>
      ) : (
        <div class="card table-wrap">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Queue</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">
                  Ready
                </th>
                <th scope="col" class="num">
                  Scheduled
                </th>
                <th scope="col" class="num">
                  Leased
                </th>
                <th scope="col" class="num">
                  Dead
                </th>
                <th scope="col" class="num">
                  Completed
                </th>
                <th scope="col" class="num">
                  Oldest ready
                </th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.queues.map((q) => (
                <tr key={q.name}>
                  <th scope="row">
                    <Link href={`/queues/${seg(q.name)}`}>{q.name}</Link>
                  </th>
                  <td>
                    {q.paused ? (
                      <span class="badge badge-paused">paused</span>
                    ) : (
                      <span class="badge badge-active">active</span>
                    )}
                  </td>
                  <td class="num">{fmtNum(q.counts.ready)}</td>
                  <td class="num">{fmtNum(q.counts.scheduled)}</td>
                  <td class="num">{leasedText(q)}</td>
                  <td class="num">{fmtNum(q.counts.dead)}</td>
                  <td class="num">{fmtNum(q.counts.completed)}</td>
                  <td class="num">{q.oldestReadyAgeMs === null ? '—' : fmtDuration(q.oldestReadyAgeMs)}</td>
                  <td class="actions">
                    <PauseButton queue={q} session={session} onDone={reload} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
