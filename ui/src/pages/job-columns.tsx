/** Which columns a job list shows, by the state it lists: what an operator needs to see for jobs in that state. */

import { seg } from '../api.ts';
import { JobIdLink, ReasonBadge, StateBadge, Time } from '../components/common.tsx';
import type { Column } from '../components/data-table.tsx';
import { fmtBytes } from '../format.ts';
import { Link } from '../router.tsx';
import type { BrowseState, JobSummary } from '../types.ts';

type C = Column<JobSummary>;

const id: C = { header: 'Job', rowHeader: true, cell: (j) => <JobIdLink id={j.id} /> };
const queue: C = { header: 'Queue', cell: (j) => <Link href={`/queues/${seg(j.queue)}`}>{j.queue}</Link> };
const typeColumn: C = { header: 'Type', cell: (j) => j.type };
const group: C = { header: 'Group', cell: (j) => j.group ?? <span class="muted">—</span> };
const state: C = { header: 'State', cell: (j) => <StateBadge state={j.state} /> };
const priority: C = { header: 'Priority', num: true, hideNarrow: true, cell: (j) => j.priority };
const attempt: C = { header: 'Attempt', num: true, cell: (j) => `${j.attempt}/${j.maxAttempts}` };
const enqueued: C = {
  header: 'Enqueued',
  className: 'nowrap',
  cell: (j) => <Time ms={j.enqueuedAtMs} past />,
};
const due: C = { header: 'Due', className: 'nowrap', cell: (j) => <Time ms={j.runAtMs} /> };
const size: C = { header: 'Size', num: true, hideNarrow: true, cell: (j) => fmtBytes(j.payloadBytes) };
const lastError: C = {
  header: 'Last error',
  className: 'error-cell',
  title: (j) => j.lastError ?? undefined,
  cell: (j) => j.lastError,
};
const worker: C = {
  header: 'Worker',
  className: 'mono',
  cell: (j) => j.workerId ?? <span class="muted">—</span>,
};
const leaseEnds: C = {
  header: 'Lease ends',
  className: 'nowrap',
  cell: (j) => <Time ms={j.leaseDeadlineMs} />,
};
/** When the running attempt started: its age is how long it has run. */
const started: C = { header: 'Started', className: 'nowrap', cell: (j) => <Time ms={j.leasedAtMs} past /> };
const reason: C = { header: 'Reason', cell: (j) => <ReasonBadge reason={j.deadReason} /> };
const failed: C = { header: 'Failed', className: 'nowrap', cell: (j) => <Time ms={j.failedAtMs} past /> };
const completed: C = {
  header: 'Completed',
  className: 'nowrap',
  cell: (j) => <Time ms={j.completedAtMs} past />,
};

/** `groups`: show the job's group after its type (when some job on the page has one). */
export function jobColumns(listState: BrowseState | null, allQueues: boolean, groups = false): C[] {
  const where = allQueues ? [queue] : [];
  const type = groups ? [typeColumn, group] : [typeColumn];
  switch (listState) {
    case 'ready':
      return [id, ...where, ...type, priority, attempt, enqueued, size];
    case 'scheduled':
      return [id, ...where, ...type, due, attempt, priority, enqueued];
    case 'retrying':
      return [id, ...where, ...type, due, attempt, lastError];
    case 'leased':
      return [id, ...where, ...type, worker, started, leaseEnds, attempt];
    case 'dead':
      return [id, ...where, ...type, reason, failed, attempt, lastError];
    case 'completed':
      return [id, ...where, ...type, completed, attempt];
    default:
      return [id, ...where, ...type, state, attempt, due, lastError];
  }
}
