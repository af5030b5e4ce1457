/** The dashboard: server facts, totals, live rate charts and every queue's counts (refreshed each second). */
import { can, seg } from '../api.ts';
import { Empty, ErrorBanner, Facts, Loading, PageHeader } from '../components/common.tsx';
import { RateChart, type Series } from '../components/rate-chart.tsx';
import { fmtBytes, fmtDuration, fmtNum } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { Overview, Session } from '../types.ts';

const throughput: readonly Series[] = [
  { key: 'enqueued', label: 'enqueued', color: '#3563e9' },
  { key: 'acked', label: 'acked', color: '#1f9d55' },
];
const failures: readonly Series[] = [
  { key: 'nacked', label: 'nacked', color: '#d97706' },
  { key: 'dead', label: 'dead-lettered', color: '#d03030' },
];

export function Dashboard({ session }: { session: Session }) {
  const { data, error } = useApi<Overview>('/api/v1/overview', { pollMs: 1000 });
  return (
    <>
      <PageHeader title="Dashboard">
        <span class="live" title="Refreshed every second">
          <span class="live-dot" aria-hidden="true" /> live
        </span>
      </PageHeader>
      <ErrorBanner error={error} />
      {data === null ? (
        error === null && <Loading />
      ) : (
        <>
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
                ['Durability', data.server.durability],
                ['Database', fmtBytes(data.server.dbBytes)],
                ['WAL', fmtBytes(data.server.walBytes)],
                ['Waiting streams', fmtNum(data.waitingWorkers)],
              ]}
            />
          </section>
          <section class="totals" aria-label="Jobs by state, all queues">
            {(['ready', 'scheduled', 'leased', 'dead', 'completed'] as const).map((state) => (
              <div key={state} class={`total total-${state}`}>
                <span class="total-value" data-testid={`total-${state}`}>
                  {fmtNum(data.totals[state])}
                </span>
                <span class="total-label">{state}</span>
              </div>
            ))}
          </section>
          <div class="charts">
            <RateChart title="Throughput" snapshot={data.rates} series={throughput} />
            <RateChart title="Failures" snapshot={data.rates} series={failures} />
          </div>
          <section class="card" aria-labelledby="queues-title">
            <h2 id="queues-title" class="card-title">
              Queues
            </h2>
            {data.queues.length === 0 ? (
              <Empty title="No queues yet">
                A queue appears when its first job is enqueued.{' '}
                {can(session, 'operator') && <Link href="/enqueue">Enqueue a job</Link>}
              </Empty>
            ) : (
              <div class="table-wrap">
                <table class="table">
                  <thead>
                    <tr>
                      <th scope="col">Queue</th>
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
                        Oldest ready
                      </th>
                      <th
                        scope="col"
                        class="num"
                        title="Reserve long-polls and Work streams waiting for jobs (an SDK Worker opens two)"
                      >
                        Waiting streams
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.queues.map((q) => (
                      <tr key={q.name}>
                        <th scope="row">
                          <Link href={`/queues/${seg(q.name)}`}>{q.name}</Link>
                          {q.paused && <span class="badge badge-paused">paused</span>}
                        </th>
                        <td class="num">{fmtNum(q.counts.ready)}</td>
                        <td class="num">{fmtNum(q.counts.scheduled)}</td>
                        <td class="num">{fmtNum(q.counts.leased)}</td>
                        <td class="num">
                          {q.counts.dead > 0 ? (
                            <Link href={`/dead-letters?queue=${seg(q.name)}`} class="text-danger">
                              {fmtNum(q.counts.dead)}
                            </Link>
                          ) : (
                            '0'
                          )}
                        </td>
                        <td class="num">
                          {q.oldestReadyAgeMs === null ? '—' : fmtDuration(q.oldestReadyAgeMs)}
                        </td>
                        <td class="num">{fmtNum(q.waitingWorkers)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
        </>
      )}
    </>
  );
}
