/**
 * The queues, a page at a time (limits.max_page_size each, the server's `nextPageToken`
 * followed with the pager): counts by state, paused or not, with pause and resume at hand.
 */
import { can, post, query, seg } from '../api.ts';
import { Empty, ErrorBanner, LiveStatus, Loading, notify, PageHeader, Pager } from '../components/common.tsx';
import { type Column, DataTable } from '../components/data-table.tsx';
import { fmtDuration, fmtNum } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, useLocation } from '../router.tsx';
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

const columns: Column<QueueInfo>[] = [
  { header: 'Queue', rowHeader: true, cell: (q) => <Link href={`/queues/${seg(q.name)}`}>{q.name}</Link> },
  {
    header: 'Status',
    cell: (q) =>
      q.paused ? (
        <span class="badge badge-paused">paused</span>
      ) : (
        <span class="badge badge-active">active</span>
      ),
  },
  { header: 'Ready', num: true, cell: (q) => fmtNum(q.counts.ready) },
  { header: 'Scheduled', num: true, cell: (q) => fmtNum(q.counts.scheduled) },
  { header: 'Waiting', num: true, hideNarrow: true, cell: (q) => fmtNum(q.counts.waiting) },
  { header: 'Leased', num: true, cell: (q) => leasedText(q) },
  { header: 'Dead', num: true, cell: (q) => fmtNum(q.counts.dead) },
  { header: 'Completed', num: true, hideNarrow: true, cell: (q) => fmtNum(q.counts.completed) },
  { header: 'Cancelled', num: true, hideNarrow: true, cell: (q) => fmtNum(q.counts.cancelled) },
  {
    header: 'Oldest ready',
    num: true,
    cell: (q) => (q.oldestReadyAgeMs === null ? '—' : fmtDuration(q.oldestReadyAgeMs)),
  },
];

export function Queues({ session }: { session: Session }) {
  const cursor = useLocation().params.get('cursor') ?? '';
  const loaded = useApi<{ queues: QueueInfo[]; nextPageToken: string | null }>(
    `/api/v1/queues${query({ page_token: cursor })}`,
    { pollMs: 2000 },
  );
  const { data, error, reload } = loaded;
  return (
    <>
      <PageHeader title="Queues">
        <LiveStatus loaded={loaded} everyMs={2000} />
      </PageHeader>
      <ErrorBanner error={loaded.stale ? null : error} />
      {data === null ? (
        error === null && <Loading />
      ) : data.queues.length === 0 ? (
        <div class="card">
          <Empty title="No queues yet">
            A queue appears when its first job is enqueued, or when it is declared in the configuration.
          </Empty>
        </div>
      ) : (
        <section class={`card${loaded.stale ? ' is-stale' : ''}`}>
          <DataTable
            label="queues"
            columns={columns}
            rows={data.queues}
            rowKey={(q) => q.name}
            rowActions={(q) => <PauseButton queue={q} session={session} onDone={reload} />}
          />
          <Pager nextCursor={data.nextPageToken} />
        </section>
      )}
    </>
  );
}
