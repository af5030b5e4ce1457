/**
 * The Workers page in depth (issue 36, item 5): what each worker did over the last
 * 15 minutes (attempts completed and failed, counted by the server) and the jobs it
 * runs now with how long each has run (from the page's list of leased jobs, oldest
 * first; a worker holding more than that list shows says how many more).
 */
import { fmtDuration, fmtNum, shortId } from '../format.ts';
import { Link } from '../router.tsx';
import type { JobSummary, WorkerInfo } from '../types.ts';
import { Time } from './common.tsx';
import type { Column } from './data-table.tsx';

const shownPerWorker = 3;

/** The leased jobs of each worker id, oldest lease first. */
export function jobsByWorker(leases: readonly JobSummary[]): Map<string, JobSummary[]> {
  const by = new Map<string, JobSummary[]>();
  for (const job of leases) {
    if (job.workerId === null) continue;
    const list = by.get(job.workerId) ?? [];
    list.push(job);
    by.set(job.workerId, list);
  }
  for (const list of by.values()) list.sort((a, b) => (a.leasedAtMs ?? 0) - (b.leasedAtMs ?? 0));
  return by;
}

export function activityColumns(running: Map<string, JobSummary[]>, nowMs: number): Column<WorkerInfo>[] {
  return [
    {
      header: 'Done / failed',
      className: 'nowrap',
      num: true,
      title: (w) =>
        `attempts completed / failed in the last ${fmtDuration(w.recentWindowMs)} (since the server started, if later)`,
      cell: (w) => (
        <span data-testid="worker-recent">
          {fmtNum(w.completedRecent)} /{' '}
          <span class={w.failedRecent > 0 ? 'text-danger' : undefined}>{fmtNum(w.failedRecent)}</span>
          <span class="cell-note">last {fmtDuration(w.recentWindowMs)}</span>
        </span>
      ),
    },
    {
      header: 'Running now',
      cell: (w) => {
        const jobs = running.get(w.workerId) ?? [];
        if (w.jobsHeld === 0) return <span data-testid="worker-held">0 jobs</span>;
        const shown = jobs.slice(0, shownPerWorker);
        const more = w.jobsHeld - shown.length;
        return (
          <span data-testid="worker-running">
            <span class="cell-line" data-testid="worker-held">
              {fmtNum(w.jobsHeld)} job{w.jobsHeld === 1 ? '' : 's'}, since{' '}
              <Time ms={w.oldestLeaseAtMs} past />
            </span>
            {shown.map((job) => (
              <span key={job.id} class="cell-line">
                <Link href={`/jobs/${job.id}`} class="mono">
                  {shortId(job.id)}
                </Link>{' '}
                {job.type}, {job.leasedAtMs === null ? '' : fmtDuration(Math.max(0, nowMs - job.leasedAtMs))}
              </span>
            ))}
            {more > 0 && <span class="cell-note">and {fmtNum(more)} more</span>}
          </span>
        );
      },
    },
  ];
}
