/**
 * The dashboard's history (GET /api/v1/history): per queue and job type, attempts
 * completed and failed, jobs gone dead, failure rate, wait and run time p50/p95,
 * over the last hour, day or week, from what the server stores once a minute (so a
 * restart does not erase it). Its caption says exactly what the numbers cover, and
 * buckets no server covered are drawn as "no data", never as zeros.
 */
import { query } from '../api.ts';
import { fmtClock, fmtDuration, fmtNum } from '../format.ts';
import { useApi } from '../hooks.ts';
import { navigate, useLocation } from '../router.tsx';
import type { HistoryAnswer, HistoryWindow } from '../types.ts';
import { Empty, ErrorBanner, Loading } from './common.tsx';
import { type Column, DataTable } from './data-table.tsx';
import { Segmented } from './segmented.tsx';

const windows: { key: HistoryWindow; label: string; bucket: string }[] = [
  { key: '1h', label: '1 h', bucket: 'one-minute' },
  { key: '24h', label: '24 h', bucket: 'one-hour' },
  { key: '7d', label: '7 d', bucket: 'one-hour' },
];

type Row = HistoryAnswer['types'][number];

function when(ms: number, window: HistoryWindow): string {
  if (window === '1h') return fmtClock(ms);
  const d = new Date(ms);
  return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${fmtClock(ms)}`;
}

/** A percentile: ms, then seconds with a tenth below 10 s (the histograms hold 9 %; whole seconds would hide it). */
const ms = (v: number | null) =>
  v === null ? '—' : v >= 1000 && v < 10_000 ? `${(v / 1000).toFixed(1)} s` : fmtDuration(v);
const pct = (v: number | null) => (v === null ? '—' : `${(v * 100).toFixed(v < 0.1 && v > 0 ? 1 : 0)} %`);

/** Exactly what the figures cover, and where there is no data. */
export function historyCover(h: HistoryAnswer): string {
  const w = windows.find((x) => x.key === h.window)!;
  const span = `${when(h.fromMs, h.window)} – ${when(h.toMs, h.window)}, ${h.buckets.length} ${w.bucket} buckets`;
  if (h.firstDataMs === null) return `${span}: no data (no server ran and counted then).`;
  const total = h.toMs - h.fromMs;
  const parts = [`${span}; data for ${fmtDuration(h.coveredMs)} of ${fmtDuration(total)}`];
  if (h.firstDataMs > h.fromMs) parts.push(`no data before ${when(h.firstDataMs, h.window)}`);
  const gaps = h.buckets.filter((b) => b.startMs > h.firstDataMs! && b.coveredMs === 0 && b.startMs < h.toMs);
  if (gaps.length > 0)
    parts.push(`${gaps.length} bucket${gaps.length === 1 ? '' : 's'} without data after it (no server ran)`);
  return `${parts.join('; ')}.`;
}

const columns: Column<Row>[] = [
  { header: 'Queue', rowHeader: true, cell: (r) => r.queue },
  { header: 'Type', cell: (r) => r.type },
  { header: 'Completed', num: true, cell: (r) => fmtNum(r.completed) },
  {
    header: 'Failed',
    num: true,
    title: () => 'attempts that failed (nack or lease expiry), retried or not',
    cell: (r) => fmtNum(r.failed),
  },
  { header: 'Dead', num: true, cell: (r) => fmtNum(r.dead) },
  {
    header: 'Failure rate',
    num: true,
    title: () => 'failed / (completed + failed) attempts',
    cell: (r) => pct(r.failureRate),
  },
  {
    header: 'Wait p50 / p95',
    num: true,
    title: () => 'from due (enqueued, run-at or retry) to start, of the attempts that ended; within 9 %',
    cell: (r) => `${ms(r.waitP50Ms)} / ${ms(r.waitP95Ms)}`,
  },
  {
    header: 'Run p50 / p95',
    num: true,
    title: () => 'from start to ack or failure; within 9 %',
    cell: (r) => `${ms(r.runP50Ms)} / ${ms(r.runP95Ms)}`,
  },
];

/** One bar per bucket: ended attempts and dead jobs; a bucket nobody covered is hatched "no data". */
function Buckets({ h }: { h: HistoryAnswer }) {
  const max = Math.max(1, ...h.buckets.map((b) => b.completed + b.failed + b.dead));
  return (
    <div
      class="history-bars"
      role="img"
      aria-label={`completed, failed and dead per bucket; ${historyCover(h)}`}
    >
      {h.buckets.map((b) => {
        const n = b.completed + b.failed + b.dead;
        const noData = b.coveredMs === 0;
        const label = noData
          ? `${when(b.startMs, h.window)}: no data`
          : `${when(b.startMs, h.window)}: ${fmtNum(b.completed)} completed, ${fmtNum(b.failed)} failed, ${fmtNum(b.dead)} dead`;
        return (
          <span
            key={b.startMs}
            class={noData ? 'history-bar no-data' : 'history-bar'}
            title={label}
            data-no-data={noData || undefined}
          >
            {!noData && n > 0 && (
              <>
                <span class="history-bar-ok" style={{ height: `${(b.completed / max) * 100}%` }} />
                <span
                  class="history-bar-failed"
                  style={{ height: `${((b.failed + b.dead) / max) * 100}%` }}
                />
              </>
            )}
          </span>
        );
      })}
    </div>
  );
}

export function HistoryPanel() {
  const { path, params } = useLocation();
  const window = windows.find((w) => w.key === params.get('history'))?.key ?? '1h';
  const loaded = useApi<HistoryAnswer>(`/api/v1/history${query({ window })}`, { pollMs: 30_000 });
  const { data, error } = loaded;
  const choose = (key: HistoryWindow) => {
    const next = new URLSearchParams(params);
    if (key === '1h') next.delete('history');
    else next.set('history', key);
    const search = next.toString();
    navigate(`${path}${search === '' ? '' : `?${search}`}`, { replace: true });
  };
  return (
    <section class="card history" aria-labelledby="history-title">
      <div class="history-head">
        <h2 id="history-title" class="card-title">
          History <span class="muted">stored once a minute, kept across restarts</span>
        </h2>
        <Segmented legend="History over" options={windows} value={window} onChoose={choose} />
      </div>
      <ErrorBanner error={error} />
      {data === null ? (
        error === null && <Loading />
      ) : (
        <>
          <p class="muted" data-testid="history-cover">
            {historyCover(data)}
          </p>
          <Buckets h={data} />
          {data.types.length === 0 ? (
            <Empty
              title={data.firstDataMs === null ? 'No data in this window' : 'No job ended in this window'}
            />
          ) : (
            <DataTable
              label="history per queue and type"
              columns={columns}
              rows={[{ queue: 'All queues', type: '', ...data.total }, ...data.types]}
              rowKey={(r) => `${r.queue}\u0000${r.type}`}
              wide
            />
          )}
        </>
      )}
    </section>
  );
}
