/**
 * The dashboard: totals (first: what a phone shows without scrolling), server facts, the current rates as numbers and as
 * charts over a chosen window (5 min, 1 h, 24 h), and every queue's counts,
 * rates and waits (refreshed each second; "stale since …" when it cannot be).
 * While the store is unavailable the server still answers: a banner says since when and
 * why, and the counts and queues read from the store are left out.
 */
import { can, query, seg } from '../api.ts';
import { Empty, ErrorBanner, Facts, LiveStatus, Loading, PageHeader } from '../components/common.tsx';
import { type Column, DataTable } from '../components/data-table.tsx';
import { HistoryPanel } from '../components/history-panel.tsx';
import { RateChart, ratesCover, type Series } from '../components/rate-chart.tsx';
import { Segmented } from '../components/segmented.tsx';
import { fmtBytes, fmtDuration, fmtNum, fmtRate, fmtTime } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import {
  jobStates,
  type Overview,
  type QueueInfo,
  type QueueRates,
  type RateWindow,
  type ServerIdentityFacts,
  type Session,
  type StoreFacts,
  type StoreHealth,
} from '../types.ts';

const throughput: readonly Series[] = [
  { key: 'enqueued', label: 'enqueued', color: '#3563e9' },
  { key: 'reserved', label: 'leased', color: '#8e6bd8' },
  { key: 'acked', label: 'acked', color: '#1f9d55' },
];
const failures: readonly Series[] = [
  { key: 'nacked', label: 'failed', color: '#d97706' },
  { key: 'expired', label: 'expired', color: '#a16207' },
  { key: 'dead', label: 'dead-lettered', color: '#d03030' },
];
const windows: { key: RateWindow; label: string }[] = [
  { key: '5m', label: '5 min' },
  { key: '1h', label: '1 h' },
  { key: '24h', label: '24 h' },
];

const wait = (ms: number | null) => (ms === null ? '—' : fmtDuration(ms));

function queueColumns(rates: Record<string, QueueRates>): Column<QueueInfo>[] {
  const r = (q: QueueInfo) => rates[q.name];
  return [
    {
      header: 'Queue',
      rowHeader: true,
      cell: (q) => (
        <>
          <Link href={`/queues/${seg(q.name)}`}>{q.name}</Link>
          {q.paused && <span class="badge badge-paused">paused</span>}
        </>
      ),
    },
    { header: 'Ready', num: true, cell: (q) => fmtNum(q.counts.ready) },
    { header: 'Scheduled', num: true, cell: (q) => fmtNum(q.counts.scheduled) },
    { header: 'Leased', num: true, cell: (q) => fmtNum(q.counts.leased) },
    {
      header: 'Dead',
      num: true,
      cell: (q) =>
        q.counts.dead > 0 ? (
          <Link href={`/dead-letters?queue=${seg(q.name)}`} class="text-danger">
            {fmtNum(q.counts.dead)}
          </Link>
        ) : (
          '0'
        ),
    },
    { header: 'Enqueued /s', num: true, cell: (q) => fmtRate(r(q)?.perSecond.enqueued ?? 0) },
    { header: 'Acked /s', num: true, cell: (q) => fmtRate(r(q)?.perSecond.acked ?? 0) },
    { header: 'Failed /s', num: true, cell: (q) => fmtRate(r(q)?.perSecond.nacked ?? 0) },
    {
      header: 'Wait avg / max',
      num: true,
      title: () => 'from due (enqueued, or its run-at) to leased, over the jobs leased in the window',
      cell: (q) => `${wait(r(q)?.avgWaitMs ?? null)} / ${wait(r(q)?.maxWaitMs ?? null)}`,
    },
    {
      header: 'Reserves waiting',
      num: true,
      title: () => 'reserves waiting for a job of this queue (one waiting on several queues counts in each)',
      cell: (q) => fmtNum(q.waitingWorkers),
    },
    {
      header: 'Oldest ready',
      num: true,
      cell: (q) => (q.oldestReadyAgeMs === null ? '—' : fmtDuration(q.oldestReadyAgeMs)),
    },
  ];
}

/**
 * The waiting figures, defined: the server's figure counts each waiting
 * reserve (a long-poll: a Work stream's request for jobs, or a Reserve call)
 * once; a queue's "Waiting" counts the reserves that would take a job of that
 * queue, so a reserve waiting on several queues is in each of their rows, and
 * one waiting on a queue with no jobs yet is in no row. The rows therefore add
 * up to the total only when every reserve names one listed queue.
 */
/** The store: SQLite with its file sizes; PostgreSQL with where it is and whether the servers hear each other. */
/** Which process answered: servers sharing one PostgreSQL behind a load balancer differ here. */
function identityFacts(identity: ServerIdentityFacts | null, startedAtMs: number): [string, string][] {
  // A viewer is not shown the machine (the operator role is).
  if (identity === null) return [];
  const http = identity.httpAddress === null ? 'off' : identity.httpAddress;
  return [
    ['Host', `${identity.hostName} (pid ${identity.pid})`],
    ['Instance', `${identity.instanceId}, started ${fmtTime(startedAtMs)}`],
    ['Listens on', `gRPC ${identity.grpcAddress}, admin ${identity.adminAddress}, HTTP ${http}`],
  ];
}

function storeFacts(store: StoreFacts, dbBytes: number, walBytes: number): [string, string][] {
  if (store.kind !== 'postgres') {
    return [
      ['Store', 'SQLite (embedded)'],
      ['Database', fmtBytes(dbBytes)],
      ['WAL', fmtBytes(walBytes)],
    ];
  }
  // A viewer is told the kind alone (where it is, its replication and bounds: the operator role up).
  if (store.host === null) return [['Store', 'PostgreSQL']];
  return [
    ['Store', `PostgreSQL ${store.host}`],
    ['Database', `${store.database ?? '—'}, schema ${store.schema ?? '—'}`],
    ['Signals', store.signalsConnected ? 'connected' : 'not connected: polling once a second'],
    ['Replication', replicationText(store)],
  ];
}

/** Whether a failover to a standby can lose acknowledged jobs (docs/replication.md). */
function replicationText(store: StoreFacts): string {
  const standbys = `${store.standbys ?? 0} ${store.standbys === 1 ? 'standby' : 'standbys'}`;
  switch (store.replication) {
    case 'synchronous':
      return `synchronous (${standbys}): a failover loses nothing acknowledged`;
    case 'asynchronous':
      return `asynchronous (${standbys}): a failover can lose the replication lag`;
    case 'none':
      return 'no standby';
    default:
      return '—';
  }
}

/** The store did not answer: since when (the outage's first failure), and the latest error. */
function StoreUnavailableBanner({ health }: { health: StoreHealth }) {
  if (health.available) return null;
  const since = health.unavailableSinceMs === null ? '' : ` since ${fmtTime(health.unavailableSinceMs)}`;
  return (
    <div class="banner banner-error" role="alert" data-testid="store-unavailable">
      <span>
        <strong>The store is unavailable{since}:</strong> {health.lastError}. Counts and queues show again
        once it answers.
      </span>
    </div>
  );
}

function WaitingReserves({ count }: { count: number }) {
  return (
    <span title="long-polls (Work stream requests or Reserve calls) waiting for a job now, each counted once">
      {fmtNum(count)}
    </span>
  );
}

function waitingNote(total: number, listed: number): string {
  const each = `${fmtNum(total)} reserve${total === 1 ? '' : 's'} waiting in all, each counted once`;
  if (listed === total)
    return `Waiting: reserves waiting for a job of the queue; ${each}, and the rows add up to it.`;
  return `Waiting: reserves waiting for a job of the queue. ${each}; the rows add up to ${fmtNum(listed)}, as a reserve waiting on several queues is in each of their rows and one waiting on a queue with no jobs yet is in none (see Workers).`;
}

export function Dashboard({ session }: { session: Session }) {
  const { params } = useLocation();
  const window = (windows.find((w) => w.key === params.get('window'))?.key ?? '1h') as RateWindow;
  const overview = useApi<Overview>(`/api/v1/overview${query({ window })}`, { pollMs: 1000 });
  const { data, error } = overview;
  const listed = data?.queues?.reduce((n, q) => n + q.waitingWorkers, 0) ?? 0;
  return (
    <>
      <PageHeader title="Dashboard">
        <LiveStatus loaded={overview} everyMs={1000} />
        <Segmented
          legend="Rates over"
          options={windows}
          value={window}
          onChoose={(key) =>
            navigate(`/${query({ window: key === '1h' ? '' : key, history: params.get('history') })}`, {
              replace: true,
            })
          }
        />
      </PageHeader>
      <ErrorBanner error={overview.stale ? null : error} />
      {data !== null && <StoreUnavailableBanner health={data.storeHealth} />}
      {data === null ? (
        error === null && <Loading />
      ) : (
        <div class={overview.stale ? 'is-stale' : undefined}>
          <section class="totals" aria-label="Jobs by state, all queues">
            {jobStates.map((state) => (
              <div key={state} class={`total total-${state}`}>
                <span class="total-value" data-testid={`total-${state}`}>
                  {data.totals === null ? '—' : fmtNum(data.totals[state])}
                </span>
                <span class="total-label">{state}</span>
              </div>
            ))}
          </section>
          <section class="card" aria-labelledby="server-title">
            <h2 id="server-title" class="card-title">
              Server
            </h2>
            <Facts
              items={[
                [
                  'Version',
                  data.server.commit
                    ? `${data.server.version} (${data.server.commit.slice(0, 8)})`
                    : data.server.version,
                ],
                ['Uptime', fmtDuration(data.server.uptimeMs)],
                ...identityFacts(data.server.identity, data.server.startedAtMs),
                ['Durability', data.server.durability],
                ['Features', data.server.features.join(', ') || 'none named'],
                ...storeFacts(data.server.store, data.server.dbBytes, data.server.walBytes),
                ['Waiting reserves', <WaitingReserves count={data.waitingWorkers} />],
                [
                  'Wait avg / max',
                  `${wait(data.rates.current.avgWaitMs)} / ${wait(data.rates.current.maxWaitMs)}`,
                ],
              ]}
            />
          </section>
          <div class="charts">
            <RateChart title="Throughput" snapshot={data.rates} series={throughput} />
            <RateChart title="Failures" snapshot={data.rates} series={failures} />
          </div>
          <HistoryPanel />
          <section class="card" aria-labelledby="queues-title">
            <h2 id="queues-title" class="card-title">
              Queues{' '}
              <span class="muted">
                rates and waits, <span data-testid="rates-cover">{ratesCover(data.rates)}</span>
              </span>
            </h2>
            {data.queues === null ? (
              <Empty title="Queues unknown">
                The store is unavailable: the queues show again once it answers.
              </Empty>
            ) : data.queues.length === 0 ? (
              <Empty title="No queues yet">
                A queue appears when its first job is enqueued.{' '}
                {can(session, 'operator') && <Link href="/enqueue">Enqueue a job</Link>}
              </Empty>
            ) : (
              <DataTable
                label="queues"
                columns={queueColumns(data.rates.queues)}
                rows={data.queues}
                rowKey={(q) => q.name}
                wide
              />
            )}
            {data.queues !== null && data.queues.length > 0 && (
              <p class="muted" data-testid="waiting-note">
                {waitingNote(data.waitingWorkers, listed)}
              </p>
            )}
          </section>
        </div>
      )}
    </>
  );
}
