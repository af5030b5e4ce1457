/** Dead letters of a queue by reason: requeue or delete one, the selected ones, or all of them. */
import { useEffect, useState } from 'preact/hooks';
import { can, post, query, seg } from '../api.ts';
import {
  Empty,
  ErrorBanner,
  Loading,
  notify,
  PageHeader,
  Pager,
  ReasonBadge,
} from '../components/common.tsx';
import { ConfirmDialog, useConfirm } from '../components/confirm-dialog.tsx';
import { fmtNum, fmtTime, humanize, shortId } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { deadReasons, type JobSummary, type Page, type QueueInfo, type Session } from '../types.ts';

type Pending = { kind: 'requeue' | 'delete'; ids: string[] } | { kind: 'requeue-all' | 'delete-all' };

export function DeadLetters({ session }: { session: Session }) {
  const { params } = useLocation();
  const queues = useApi<{ queues: QueueInfo[] }>('/api/v1/queues');
  const all = queues.data?.queues ?? [];
  const queue = params.get('queue') ?? all.find((q) => q.counts.dead > 0)?.name ?? all[0]?.name ?? '';
  const reason = params.get('reason') ?? '';
  const [cursor, setCursor] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  useEffect(() => {
    setCursor(null);
    setSelected(new Set());
  }, [queue, reason]);

  const path =
    queue === ''
      ? null
      : `/api/v1/queues/${seg(queue)}/dead-letters${query({ reason, cursor, order: 'newest_first', limit: 50 })}`;
  const page = useApi<Page<JobSummary>>(path);
  const confirm = useConfirm<Pending>();
  const action = useAction();
  const operator = can(session, 'operator');
  const items = page.data?.items ?? [];

  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };

  const run = async (pending: Pending) => {
    const base = `/api/v1/queues/${seg(queue)}/dead-letters`;
    const result = await action.run(() =>
      'ids' in pending
        ? post<{ changed: number }>(`${base}/${pending.kind}`, { jobIds: pending.ids })
        : post<{ changed: number }>(`${base}/${pending.kind}`, {
            ...(reason ? { reason } : {}),
            ...(pending.kind === 'delete-all' ? { confirm: queue } : {}),
          }),
    );
    confirm.close();
    if (result === undefined) return;
    const verb = pending.kind.startsWith('requeue') ? 'Requeued' : 'Deleted';
    notify(`${verb} ${fmtNum(result.changed)} dead letter${result.changed === 1 ? '' : 's'}.`);
    setSelected(new Set());
    setCursor(null);
    page.reload();
  };

  const describe = (
    pending: Pending | null,
  ): { title: string; body: string; label: string; danger: boolean } => {
    if (pending === null) return { title: '', body: '', label: '', danger: false };
    const which = reason ? `${humanize(reason)} ` : '';
    switch (pending.kind) {
      case 'requeue':
        return {
          title: `Requeue ${pending.ids.length} dead letter${pending.ids.length === 1 ? '' : 's'}?`,
          body: 'They go back to ready with a fresh attempt budget.',
          label: 'Requeue',
          danger: false,
        };
      case 'delete':
        return {
          title: `Delete ${pending.ids.length} dead letter${pending.ids.length === 1 ? '' : 's'}?`,
          body: 'They are removed for good.',
          label: 'Delete',
          danger: true,
        };
      case 'requeue-all':
        return {
          title: `Requeue all ${which}dead letters of ${queue}?`,
          body: 'Every one goes back to ready with a fresh attempt budget.',
          label: 'Requeue all',
          danger: false,
        };
      case 'delete-all':
        return {
          title: `Delete all ${which}dead letters of ${queue}?`,
          body: 'Every one is removed for good. This cannot be undone.',
          label: 'Delete all',
          danger: true,
        };
    }
  };
  const text = describe(confirm.pending);

  return (
    <>
      <PageHeader title="Dead letters">
        {operator && items.length > 0 && (
          <button type="button" class="btn btn-small" onClick={() => confirm.ask({ kind: 'requeue-all' })}>
            Requeue all…
          </button>
        )}
        {can(session, 'admin') && items.length > 0 && (
          <button
            type="button"
            class="btn btn-small btn-danger"
            onClick={() => confirm.ask({ kind: 'delete-all' })}
          >
            Delete all…
          </button>
        )}
      </PageHeader>
      <div class="card">
        <div class="filters">
          <div class="field">
            <label for="dl-queue">Queue</label>
            <select
              id="dl-queue"
              value={queue}
              onChange={(e) => navigate(`/dead-letters${query({ queue: e.currentTarget.value, reason })}`)}
            >
              {all.map((q) => (
                <option key={q.name} value={q.name}>
                  {q.name} ({fmtNum(q.counts.dead)})
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="dl-reason">Reason</label>
            <select
              id="dl-reason"
              value={reason}
              onChange={(e) => navigate(`/dead-letters${query({ queue, reason: e.currentTarget.value })}`)}
            >
              <option value="">any reason</option>
              {deadReasons.map((r) => (
                <option key={r} value={r}>
                  {humanize(r)}
                </option>
              ))}
            </select>
          </div>
        </div>
      </div>
      <ErrorBanner error={queues.error ?? page.error ?? action.error} />
      {queue === '' ? (
        queues.data && (
          <div class="card">
            <Empty title="No queues yet" />
          </div>
        )
      ) : page.data === null ? (
        page.error === null && <Loading />
      ) : items.length === 0 ? (
        <div class="card">
          <Empty title={`No ${reason ? `${humanize(reason)} ` : ''}dead letters in ${queue}`}>
            Jobs land here when they run out of attempts, their lease expires on the last attempt, or a worker
            or operator dead-letters them.
          </Empty>
        </div>
      ) : (
        <section class="card" aria-label={`dead letters of ${queue}`}>
          {operator && (
            <div class="selection-bar">
              <span aria-live="polite">{selected.size} selected</span>
              <button
                type="button"
                class="btn btn-small"
                disabled={selected.size === 0}
                onClick={() => confirm.ask({ kind: 'requeue', ids: [...selected] })}
              >
                Requeue selected
              </button>
              <button
                type="button"
                class="btn btn-small btn-danger"
                disabled={selected.size === 0}
                onClick={() => confirm.ask({ kind: 'delete', ids: [...selected] })}
              >
                Delete selected
              </button>
            </div>
          )}
          <div class="table-wrap">
            <table class="table table-wide table-stack">
              <thead>
                <tr>
                  {operator && (
                    <th scope="col">
                      <input
                        type="checkbox"
                        aria-label="Select all on this page"
                        checked={items.length > 0 && items.every((j) => selected.has(j.id))}
                        onChange={(e) =>
                          setSelected(e.currentTarget.checked ? new Set(items.map((j) => j.id)) : new Set())
                        }
                      />
                    </th>
                  )}
                  <th scope="col">Job</th>
                  <th scope="col">Type</th>
                  <th scope="col">Reason</th>
                  <th scope="col">Failed</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last error</th>
                  {operator && (
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {items.map((job) => (
                  <tr key={job.id}>
                    {operator && (
                      <td>
                        <input
                          type="checkbox"
                          aria-label={`Select job ${job.id}`}
                          checked={selected.has(job.id)}
                          onChange={() => toggle(job.id)}
                        />
                      </td>
                    )}
                    <th data-label="Job" scope="row">
                      <Link href={`/jobs/${job.id}`} class="mono" title={job.id}>
                        {shortId(job.id)}
                      </Link>
                    </th>
                    <td data-label="Type">{job.type}</td>
                    <td data-label="Reason">
                      <ReasonBadge reason={job.deadReason} />
                    </td>
                    <td data-label="Failed" class="nowrap">
                      {fmtTime(job.failedAtMs)}
                    </td>
                    <td data-label="Attempts" class="num">
                      {job.attempt}
                    </td>
                    <td data-label="Last error" class="error-cell" title={job.lastError ?? ''}>
                      {job.lastError ?? null}
                    </td>
                    {operator && (
                      <td class="actions">
                        <button
                          type="button"
                          class="btn btn-small"
                          aria-label={`Requeue job ${job.id}`}
                          onClick={() => confirm.ask({ kind: 'requeue', ids: [job.id] })}
                        >
                          Requeue
                        </button>
                        <button
                          type="button"
                          class="btn btn-small btn-danger"
                          aria-label={`Delete job ${job.id}`}
                          onClick={() => confirm.ask({ kind: 'delete', ids: [job.id] })}
                        >
                          Delete
                        </button>
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager
            nextCursor={page.data.nextCursor}
            atFirst={cursor === null}
            onNext={setCursor}
            onFirst={() => setCursor(null)}
          />
        </section>
      )}
      <ConfirmDialog
        open={confirm.pending !== null}
        title={text.title}
        confirmLabel={text.label}
        danger={text.danger}
        busy={action.busy}
        {...(confirm.pending?.kind === 'delete-all' ? { typeToConfirm: queue } : {})}
        onCancel={confirm.close}
        onConfirm={() => confirm.pending && run(confirm.pending)}
      >
        <p>{text.body}</p>
      </ConfirmDialog>
    </>
  );
}
