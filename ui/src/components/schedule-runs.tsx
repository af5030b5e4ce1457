/**
 * A schedule's run history (issue 36, item 5): its last runs as the server keeps
 * them (20 per schedule), each with when it ran, the tick it handled, the outcome and
 * a link to the job it made; and a link to every job the schedule made (the jobs list's
 * `schedule` filter, by the jobs' idempotency keys).
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
  // Only a refused tick's detail is an error; a trigger's ("by alice") or a skip's is information.
  {
    header: 'Detail',
    className: 'detail-cell',
    cell: (r) => (r.outcome === 'rejected' ? <span class="text-danger">{r.detail}</span> : (r.detail ?? '')),
  },
];

export function ScheduleRuns({ name }: { name: string }) {
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
        <Link href={`/jobs${query({ schedule: name })}`} data-testid="schedule-jobs">
          Jobs this schedule made
        </Link>{' '}
        — every one still kept, by its runs' idempotency keys.
      </p>
    </section>
  );
}
