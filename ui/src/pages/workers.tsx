/**
 * Every connected worker: who, from where, over which transport, which
 * queues, how many jobs it holds and since when, when it was last heard from;
 * and, for a stuck worker, releasing the leases it holds (audited).
 */
import { can, post, query, seg } from '../api.ts';
import { useNow } from '../clock.ts';
import {
  Empty,
  ErrorBanner,
  LiveStatus,
  Loading,
  notify,
  PageHeader,
  RefreshButton,
  Time,
} from '../components/common.tsx';
import { ConfirmDialog, useConfirm } from '../components/confirm-dialog.tsx';
import { type Column, DataTable } from '../components/data-table.tsx';
import { activityColumns, jobsByWorker } from '../components/worker-activity.tsx';
import { fmtDuration, fmtNum } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { useQueues } from '../queues-data.ts';
import { Link } from '../router.tsx';
import type { JobBrowsePage, JobSummary, QueueInfo, Session, WorkerInfo } from '../types.ts';
import { jobColumns } from './job-columns.tsx';

/**
 * How long a worker holding jobs may go unheard: the longest default lease
 * (`default_lease_ms`) of its queues. A worker that holds a job extends or
 * settles it within its lease (the SDKs extend at a third of it), so one
 * silent for longer is likely stuck. A worker that asked for longer leases
 * than its queues' default is marked early; one holding nothing is never
 * marked (an idle Work stream sends nothing). Null when a queue is unknown.
 */
function leaseMsOf(worker: WorkerInfo, queues: readonly QueueInfo[]): number | null {
  let longest: number | null = null;
  for (const name of worker.queues) {
    const value = queues
      .find((q) => q.name === name)
      ?.settingValues.find((s) => s.key === 'default_lease_ms')?.value;
    if (typeof value === 'number') longest = Math.max(longest ?? 0, value);
  }
  return longest;
}

/** The worker holds jobs and has not been heard from within its lease. */
function silentMs(worker: WorkerInfo, queues: readonly QueueInfo[], nowMs: number): number | null {
  const leaseMs = leaseMsOf(worker, queues);
  const silent = nowMs - worker.lastSeenAtMs;
  return worker.jobsHeld > 0 && leaseMs !== null && silent > leaseMs ? leaseMs : null;
}

function columns(
  queues: readonly QueueInfo[],
  nowMs: number,
  running: Map<string, JobSummary[]>,
): Column<WorkerInfo>[] {
  return [
    { header: 'Worker', rowHeader: true, className: 'mono', cell: (w) => w.workerId },
    {
      header: 'Connection',
      cell: (w) => (
        <>
          <span class="mono">{w.address}</span>
          <span class="time-rel cell-note">
            {w.transport === 'work_stream' ? 'Work stream' : 'Reserve calls'}
          </span>
        </>
      ),
    },
    {
      header: 'Queues',
      cell: (w) =>
        w.queues.map((q, i) => (
          <span key={q}>
            {i > 0 && ', '}
            <Link href={`/queues/${seg(q)}`}>{q}</Link>
          </span>
        )),
    },
    ...activityColumns(running, nowMs),
    {
      header: 'Connected',
      className: 'nowrap',
      hideNarrow: true,
      cell: (w) => <Time ms={w.connectedAtMs} past />,
    },
    {
      header: 'Last seen',
      className: 'nowrap',
      cell: (w) => {
        const leaseMs = silentMs(w, queues, nowMs);
        return (
          <>
            <Time ms={w.lastSeenAtMs} past />
            {leaseMs !== null && (
              <span class="cell-note text-warning" data-testid="worker-silent">
                not heard from within its lease ({fmtDuration(leaseMs)})
              </span>
            )}
          </>
        );
      },
    },
  ];
}

export function Workers({ session }: { session: Session }) {
  const workers = useApi<{ workers: WorkerInfo[]; waitingReserves: number }>('/api/v1/workers', {
    pollMs: 2000,
  });
  const queues = useQueues();
  const now = useNow(1000);
  const leases = useApi<JobBrowsePage>(`/api/v1/jobs${query({ state: 'leased', limit: 100 })}`, {
    pollMs: 5000,
  });
  const confirm = useConfirm<JobSummary>();
  const action = useAction();
  const operator = can(session, 'operator');
  const pending = confirm.pending;
  const last = pending !== null && pending.attempt >= pending.maxAttempts;

  return (
    <>
      <PageHeader title="Workers">
        <LiveStatus loaded={workers} everyMs={2000} />
        <RefreshButton loaded={workers} />
      </PageHeader>
      <ErrorBanner
        error={workers.stale ? action.error : (workers.error ?? action.error)}
        onDismiss={action.clear}
      />
      {workers.data === null ? (
        workers.error === null && <Loading />
      ) : (
        <section class={`card${workers.stale ? ' is-stale' : ''}`} aria-labelledby="workers-title">
          <h2 id="workers-title" class="card-title">
            Connected now <span class="muted">{fmtNum(workers.data.workers.length)}</span>
          </h2>
          {workers.data.workers.length === 0 ? (
            <Empty title="No worker is connected">
              Workers appear here while their Work stream is open, or for 5 minutes after each Reserve call.
            </Empty>
          ) : (
            <DataTable
              label="connected workers"
              columns={columns(queues.queues, now, jobsByWorker(leases.data?.items ?? []))}
              rows={workers.data.workers}
              rowClass={(w) => (silentMs(w, queues.queues, now) === null ? undefined : 'row-warning')}
              rowKey={(w) => `${w.transport} ${w.address} ${w.workerId} ${w.connectedAtMs}`}
              wide
            />
          )}
        </section>
      )}
      <section class={`card${leases.stale ? ' is-stale' : ''}`} aria-labelledby="leases-title">
        <h2 id="leases-title" class="card-title">
          Leases held{' '}
          <span class="muted">
            {leases.data?.total === null || leases.data === null ? '' : fmtNum(leases.data.total)}
          </span>
        </h2>
        {leases.data === null ? null : leases.data.items.length === 0 ? (
          <Empty title="No job is leased" />
        ) : (
          <DataTable
            label="leased jobs"
            columns={jobColumns('leased', true)}
            rows={leases.data.items}
            rowKey={(j) => j.id}
            wide
            {...(operator
              ? {
                  rowActions: (j: JobSummary) => (
                    <button
                      type="button"
                      class="btn btn-small"
                      aria-label={`Release the lease of job ${j.id}`}
                      onClick={() => confirm.ask(j)}
                    >
                      Release lease…
                    </button>
                  ),
                }
              : {})}
          />
        )}
        {leases.data !== null && leases.data.nextCursor !== null && (
          <p class="muted">
            The first 100 are shown; <Link href="/jobs?state=leased">all leased jobs</Link>.
          </p>
        )}
      </section>
      <ConfirmDialog
        open={pending !== null}
        title="Release this lease?"
        confirmLabel="Release lease"
        danger
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={async () => {
          if (pending === null) return;
          const result = await action.run(() =>
            post<{ state: string }>(`/api/v1/jobs/${seg(pending.id)}/release-lease`),
          );
          confirm.close();
          if (result !== undefined)
            notify(`Lease released: job …${pending.id.slice(-8)} is ${result.state} now.`);
        }}
      >
        <p>
          Job <span class="mono">{pending?.id}</span> is held by {pending?.workerId ?? 'a worker'} (attempt{' '}
          {pending?.attempt} of {pending?.maxAttempts}). Releasing ends the lease now, as its expiry would:{' '}
          {last
            ? 'this is its last attempt, so it goes to the dead letters (reason lease expired).'
            : 'the attempt counts and the job is ready for another worker.'}{' '}
          The worker is refused when it next extends, acks or nacks.
        </p>
      </ConfirmDialog>
    </>
  );
}
