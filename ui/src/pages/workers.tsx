/**
 * Every connected worker: who, from where, over which transport, which
 * queues, how many jobs it holds and since when, when it was last heard from;
 * and, for a stuck worker, releasing the leases it holds (audited).
 */
import { can, post, query, seg } from '../api.ts';
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
import { fmtNum } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { JobBrowsePage, JobSummary, Session, WorkerInfo } from '../types.ts';
import { jobColumns } from './job-columns.tsx';

const columns: Column<WorkerInfo>[] = [
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
  { header: 'Jobs held', num: true, cell: (w) => fmtNum(w.jobsHeld) },
  { header: 'Holding since', className: 'nowrap', cell: (w) => <Time ms={w.oldestLeaseAtMs} /> },
  { header: 'Connected', className: 'nowrap', hideNarrow: true, cell: (w) => <Time ms={w.connectedAtMs} /> },
  { header: 'Last seen', className: 'nowrap', cell: (w) => <Time ms={w.lastSeenAtMs} /> },
];

export function Workers({ session }: { session: Session }) {
  const workers = useApi<{ workers: WorkerInfo[]; waitingReserves: number }>('/api/v1/workers', {
    pollMs: 2000,
  });
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
              columns={columns}
              rows={workers.data.workers}
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
