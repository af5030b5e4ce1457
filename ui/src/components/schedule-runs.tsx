/**
 * A schedule's run history (issue 36, item 5): its last runs as the server keeps
 * them (20 per schedule), each with when it ran, the tick it handled, the outcome and
 * a link to the job it made; and a link to the jobs of the schedule's queue and type.
 */
import { query, seg } from '../api.ts';
import { fmtTime, humanize, shortId } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { ScheduleRun } from '../types.ts';
import { Empty, Time } from './common.tsx';
import { type Column, DataTable } from './data-table.tsx';

const columns: Column<ScheduleRun>[] = [
  { header: 'Ran', rowHeader: true, className: 'nowrap', cell: (r) => <Time ms={r.runAtMs} past /> },
  {
    header: 'Tick',
    className: 'nowrap',
    cell: (r) => (r.tickMs === null ? 'manual trigger' : fmtTime(r.tickMs)),
  },
  { header: 'Outcome', cell: (r) => humanize(r.outcome) },
  {
    header: 'Job',
    cell: (r) =>
      r.jobId === null ? (
        '—'
      ) : (
        <Link href={`/jobs/${r.jobId}`} class="mono" title={r.jobId}>
          {shortId(r.jobId)}
        </Link>
      ),
  },
  { header: 'Detail', className: 'error-cell', cell: (r) => r.detail ?? '' },
];

export function ScheduleRuns({ name, queue, type }: { name: string; queue: string; type: string }) {
  const { data, error } = useApi<{ runs: ScheduleRun[] }>(`/api/v1/schedules/${seg(name)}/runs`, {
    pollMs: 5000,
  });
  return (
    <section class="card" aria-labelledby="schedule-runs">
      <h2 id="schedule-runs" class="card-title">
        Last runs <span class="muted">the latest 20 are kept</span>
      </h2>
      {error !== null ? (
        <p class="text-danger">{error.message}</p>
      ) : data === null ? null : data.runs.length === 0 ? (
        <Empty title="No run yet" />
      ) : (
        <DataTable
          label="last runs"
          columns={columns}
          rows={data.runs}
          rowKey={(r) => `${r.runAtMs} ${r.tickMs ?? 't'} ${r.jobId ?? ''}`}
        />
      )}
      <p class="muted">
        <Link href={`/jobs${query({ queue, type })}`} data-testid="schedule-jobs">
          Jobs of {queue} / {type}
        </Link>{' '}
        — its jobs are there, with any others of that queue and type.
      </p>
    </section>
  );
}
