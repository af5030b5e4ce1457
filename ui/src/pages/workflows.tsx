/**
 * Workflows (issue 33): a flow's page — the graph of the jobs connected to a job through
 * dependencies, their counts by state and a table of them — and a batch's page — its
 * state, how far its members got, its completion jobs and its members page by page. An
 * operator cancels either as one act. Both read again every 2 s until everything ended.
 */
import type { ComponentChildren } from 'preact';
import { useMemo } from 'preact/hooks';
import { can, post, seg } from '../api.ts';
import {
  CopyId,
  Empty,
  ErrorBanner,
  Facts,
  JobIdLink,
  Loading,
  notify,
  PageHeader,
  Pager,
  StateBadge,
  Time,
} from '../components/common.tsx';
import { ConfirmDialog, useConfirm } from '../components/confirm-dialog.tsx';
import { FlowGraphView } from '../components/flow-graph.tsx';
import { layoutFlow } from '../flow-layout.ts';
import { shortId } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, useLocation } from '../router.tsx';
import type { BatchPage, FlowGraph, JobState, Session, WorkflowCancelResult } from '../types.ts';

const livePollMs = 2000;
/** The flow's table lists this many jobs; the graph and the counts cover all of them. */
const tableRows = 200;
const unended: ReadonlySet<JobState> = new Set(['waiting', 'scheduled', 'ready', 'leased']);
const stateOrder: readonly JobState[] = [
  'waiting',
  'scheduled',
  'ready',
  'leased',
  'completed',
  'dead',
  'cancelled',
];

function cancelled(result: WorkflowCancelResult): string {
  const asked = result.cancelRequested === 0 ? '' : `, ${result.cancelRequested} running asked to stop`;
  return `${result.cancelled} cancelled${asked}`;
}

/** What a job waits on, by name (or short id): the first five and how many more. */
function describeWaits(deps: readonly string[], names: ReadonlyMap<string, string>): string {
  if (deps.length === 0) return '—';
  const shown = deps.slice(0, 5).map((dep) => names.get(dep) ?? shortId(dep));
  return deps.length > 5 ? `${shown.join(', ')} and ${deps.length - 5} more` : shown.join(', ');
}

/** The confirmation of a cancel of a whole flow or batch. */
function CancelDialog(props: {
  what: 'flow' | 'batch';
  open: boolean;
  busy: boolean;
  onCancel(): void;
  onConfirm(): void;
  children: ComponentChildren;
}) {
  return (
    <ConfirmDialog
      open={props.open}
      title={`Cancel this ${props.what}?`}
      confirmLabel={`Cancel ${props.what}`}
      dismissLabel="Keep it"
      danger
      busy={props.busy}
      onCancel={props.onCancel}
      onConfirm={props.onConfirm}
    >
      {props.children}
    </ConfirmDialog>
  );
}

function StateCountsLine({ counts, label }: { counts: Partial<Record<JobState, number>>; label: string }) {
  return (
    <ul class="state-counts" aria-label={label}>
      {stateOrder
        .filter((state) => (counts[state] ?? 0) > 0)
        .map((state) => (
          <li key={state}>
            <StateBadge state={state} /> <strong>{counts[state]}</strong>
          </li>
        ))}
    </ul>
  );
}

export function FlowPage({ id, session }: { id: string; session: Session }) {
  const loaded = useApi<FlowGraph>(`/api/v1/jobs/${seg(id)}/flow`, { pollMs: livePollMs });
  const { data: flow, error, reload } = loaded;
  const confirm = useConfirm<'cancel'>();
  const action = useAction();
  const layout = useMemo(() => (flow === null ? null : layoutFlow(flow)), [flow]);
  const counts: Partial<Record<JobState, number>> = {};
  for (const job of flow?.jobs ?? []) counts[job.state] = (counts[job.state] ?? 0) + 1;
  const open = (flow?.jobs ?? []).filter((j) => unended.has(j.state)).length;
  const names = new Map<string, string>();
  const waitsOn = new Map<string, string[]>();
  for (const job of flow?.jobs ?? []) if (job.name !== null) names.set(job.id, job.name);
  for (const edge of flow?.edges ?? []) {
    waitsOn.set(edge.jobId, [...(waitsOn.get(edge.jobId) ?? []), edge.dependsOn]);
  }

  const cancel = async () => {
    const result = await action.run(() =>
      post<WorkflowCancelResult>(`/api/v1/jobs/${seg(id)}/flow/cancel`, {}),
    );
    confirm.close();
    if (result === undefined) return;
    notify(`Flow of job ${shortId(id)}: ${cancelled(result)}.`);
    reload();
  };

  return (
    <>
      <PageHeader title={`Flow of job ${shortId(id)}`}>
        {flow !== null && open > 0 && can(session, 'operator') && (
          <button type="button" class="btn btn-small btn-danger" onClick={() => confirm.ask('cancel')}>
            Cancel flow
          </button>
        )}
        <button type="button" class="btn btn-small" onClick={reload}>
          Refresh
        </button>
      </PageHeader>
      <p class="breadcrumbs">
        <Link href={`/jobs/${seg(id)}`}>job {shortId(id)}</Link> / flow
      </p>
      <ErrorBanner error={error ?? action.error} onDismiss={action.error ? action.clear : undefined} />
      {flow === null || layout === null ? (
        error === null && <Loading />
      ) : (
        <>
          <section class="card" aria-labelledby="flow-graph-title">
            <h2 id="flow-graph-title" class="card-title">
              {flow.jobs.length.toLocaleString('en-US')} jobs
              {flow.edgesLimited ? (
                <span class="muted"> (the first of more: its walk stopped at 100,000 edges)</span>
              ) : (
                flow.truncated && <span class="muted"> (the first of more)</span>
              )}
              <span class="muted"> · {open === 0 ? 'all ended' : `${open} not ended`}</span>
            </h2>
            <StateCountsLine counts={counts} label="jobs by state" />
            <FlowGraphView layout={layout} currentId={id} />
            <p class="muted flow-legend">
              An arrow goes from a job to the jobs that wait on it: solid once it completed, dashed while
              pending, red where it failed.
            </p>
          </section>
          <section class="card" aria-labelledby="flow-jobs-title">
            <h2 id="flow-jobs-title" class="card-title">
              Jobs{' '}
              {flow.jobs.length > tableRows && (
                <span class="muted">the first {tableRows}, in enqueue order</span>
              )}
            </h2>
            <div class="table-wrap">
              <table class="table table-stack" aria-label="the flow's jobs">
                <thead>
                  <tr>
                    <th scope="col">Job</th>
                    <th scope="col">Name</th>
                    <th scope="col">Queue</th>
                    <th scope="col">Type</th>
                    <th scope="col">State</th>
                    <th scope="col">Waits on</th>
                  </tr>
                </thead>
                <tbody>
                  {flow.jobs.slice(0, tableRows).map((job) => (
                    <tr key={job.id} class={job.id === id ? 'row-current' : undefined}>
                      <td data-label="Job">
                        <JobIdLink id={job.id} />
                      </td>
                      <td data-label="Name">{names.get(job.id) ?? '—'}</td>
                      <td data-label="Queue">
                        <Link href={`/queues/${seg(job.queue)}`}>{job.queue}</Link>
                      </td>
                      <td data-label="Type">{job.type}</td>
                      <td data-label="State">
                        <StateBadge state={job.state} />
                      </td>
                      <td data-label="Waits on">{describeWaits(waitsOn.get(job.id) ?? [], names)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
        </>
      )}
      <CancelDialog
        what="flow"
        open={confirm.pending !== null}
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={cancel}
      >
        <p>
          Every job of the flow that has not ended ({open}) is cancelled: waiting, scheduled and ready ones at
          once; the workers of running ones are told to stop. Ended jobs stay as they are.
        </p>
      </CancelDialog>
    </>
  );
}

/** The bar of a batch: completed, dead and cancelled members as parts of all of them. */
function BatchProgress({ batch }: { batch: BatchPage['batch'] }) {
  const ended = batch.members - batch.pending;
  const part = (n: number) => `${batch.members === 0 ? 0 : (100 * n) / batch.members}%`;
  return (
    <div class="progress">
      <div
        class="progress-bar batch-bar"
        role="progressbar"
        aria-label="members ended"
        aria-valuemin={0}
        aria-valuemax={batch.members}
        aria-valuenow={ended}
      >
        <span class="batch-bar-completed" style={{ width: part(batch.completed) }} />
        <span class="batch-bar-dead" style={{ width: part(batch.dead) }} />
        <span class="batch-bar-cancelled" style={{ width: part(batch.cancelled) }} />
      </div>
      <strong data-testid="batch-ended">
        {ended} of {batch.members} ended
      </strong>
    </div>
  );
}

export function BatchPageView({ id, session }: { id: string; session: Session }) {
  const { params } = useLocation();
  const cursor = params.get('cursor');
  const path = `/api/v1/batches/${seg(id)}?limit=50${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
  const { data, error, reload } = useApi<BatchPage>(path, { pollMs: livePollMs });
  const confirm = useConfirm<'cancel'>();
  const action = useAction();
  const batch = data?.batch ?? null;

  const cancel = async () => {
    const result = await action.run(() =>
      post<WorkflowCancelResult>(`/api/v1/batches/${seg(id)}/cancel`, {}),
    );
    confirm.close();
    if (result === undefined) return;
    notify(`Batch ${shortId(id)}: ${cancelled(result)}.`);
    reload();
  };

  const completion = (jobId: string | null, has: boolean, when: string) =>
    jobId !== null ? <JobIdLink id={jobId} /> : <span class="muted">{has ? when : 'none'}</span>;

  return (
    <>
      <PageHeader title={`Batch ${shortId(id)}`}>
        {batch !== null && batch.state !== 'ended' && batch.pending > 0 && can(session, 'operator') && (
          <button type="button" class="btn btn-small btn-danger" onClick={() => confirm.ask('cancel')}>
            Cancel batch
          </button>
        )}
        <Link href="/batches" class="btn btn-small">
          All batches
        </Link>
        <button type="button" class="btn btn-small" onClick={reload}>
          Refresh
        </button>
      </PageHeader>
      <ErrorBanner error={error ?? action.error} onDismiss={action.error ? action.clear : undefined} />
      {data === null || batch === null ? (
        error === null && <Loading />
      ) : (
        <>
          <section class="card" aria-labelledby="batch-facts">
            <h2 id="batch-facts" class="card-title">
              Batch <span class={`badge badge-batch-${batch.state}`}>{batch.state}</span>
            </h2>
            <BatchProgress batch={batch} />
            <ul class="state-counts" aria-label="members by outcome">
              <li>
                <span class="badge badge-waiting">pending</span> <strong>{batch.pending}</strong>
              </li>
              <li>
                <StateBadge state="completed" /> <strong>{batch.completed}</strong>
              </li>
              <li>
                <StateBadge state="dead" /> <strong>{batch.dead}</strong>
              </li>
              <li>
                <StateBadge state="cancelled" /> <strong>{batch.cancelled}</strong>
              </li>
            </ul>
            <Facts
              items={[
                ['Id', <CopyId id={batch.id} />],
                ['Created', <Time ms={batch.createdAtMs} past />],
                [
                  'Sealed',
                  batch.sealedAtMs === null ? (
                    <span class="muted">open: jobs may still be added</span>
                  ) : (
                    <Time ms={batch.sealedAtMs} past />
                  ),
                ],
                ['Ended', <Time ms={batch.endedAtMs} past />],
                ['On complete', completion(batch.completeJobId, batch.hasOnComplete, 'when the batch ends')],
                [
                  'On success',
                  completion(
                    batch.successJobId,
                    batch.hasOnSuccess,
                    batch.state === 'ended'
                      ? 'not run: not every member completed'
                      : 'if every member completes',
                  ),
                ],
                [
                  'On death',
                  completion(
                    batch.deathJobId,
                    batch.hasOnDeath,
                    batch.firstDeadId === null ? 'when the first member dies' : 'not enqueued: see the error',
                  ),
                ],
                ...(batch.firstDeadId === null
                  ? []
                  : [['First dead', <JobIdLink id={batch.firstDeadId} />] as [string, ComponentChildren]]),
                ...(batch.completionError === null
                  ? []
                  : [
                      ['Completion error', <span class="error-text">{batch.completionError}</span>] as [
                        string,
                        ComponentChildren,
                      ],
                    ]),
              ]}
            />
          </section>
          <section class="card" aria-labelledby="batch-members">
            <h2 id="batch-members" class="card-title">
              Members <span class="muted">in the order they were added</span>
            </h2>
            {data.members.length === 0 ? (
              <Empty title="No members" />
            ) : (
              <div class="table-wrap">
                <table class="table table-stack" aria-label="the batch's members">
                  <thead>
                    <tr>
                      <th scope="col" class="num">
                        #
                      </th>
                      <th scope="col">Job</th>
                      <th scope="col">Outcome</th>
                      <th scope="col">Job state</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.members.map((member) => (
                      <tr key={member.jobId}>
                        <td data-label="#" class="num">
                          {member.position + 1}
                        </td>
                        <td data-label="Job">
                          <JobIdLink id={member.jobId} />
                        </td>
                        <td data-label="Outcome">
                          {member.memberState === 'pending' ? (
                            <span class="badge badge-waiting">pending</span>
                          ) : (
                            <StateBadge state={member.memberState} />
                          )}
                        </td>
                        <td data-label="Job state">
                          {member.jobState === null ? (
                            <span class="muted">swept</span>
                          ) : (
                            <StateBadge state={member.jobState} />
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager nextCursor={data.nextCursor} />
          </section>
        </>
      )}
      <CancelDialog
        what="batch"
        open={confirm.pending !== null}
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={cancel}
      >
        <p>
          Every member that has not ended ({batch?.pending ?? 0}) is cancelled; the workers of running ones
          are told to stop.{' '}
          {batch?.state === 'sealed'
            ? 'The batch then ends, and its on-complete job (if any) runs; its on-success job does not.'
            : 'The batch is still open: it ends once it is sealed.'}
        </p>
      </CancelDialog>
    </>
  );
}
