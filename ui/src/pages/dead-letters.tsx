/**
 * Dead letters of a queue by reason, text of the last error and age
 * (enqueued before): requeue or delete one, the selected ones (only rows on
 * screen can be selected; the shared bulk bar), or all of them, each
 * confirmation with its count (a reason's from its index range; error text
 * and age counted by the server, "at least N" when the count stopped).
 * Counts everywhere refresh after every action.
 */
import { useState } from 'preact/hooks';
import { can, post, query, seg } from '../api.ts';
import { AgeField, describeAge } from '../components/age-field.tsx';
import { type BulkAction, BulkActions } from '../components/bulk-actions.tsx';
import {
  Empty,
  ErrorBanner,
  JobIdLink,
  LiveStatus,
  Loading,
  notify,
  PageHeader,
  Pager,
  ReasonBadge,
  RefreshButton,
  Time,
} from '../components/common.tsx';
import { ConfirmDialog, useConfirm } from '../components/confirm-dialog.tsx';
import { type Column, DataTable, useSelection } from '../components/data-table.tsx';
import { type Count, newRequestKey } from '../components/filter-actions.tsx';
import { FilterBar } from '../components/filter-bar.tsx';
import { SelectField } from '../components/select-field.tsx';
import { TextField } from '../components/text-field.tsx';
import { TopErrors } from '../components/top-errors.tsx';
import { useWaitingNote } from '../components/waiting-note.ts';
import { fmtNum, humanize } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { useQueues } from '../queues-data.ts';
import { navigate, useLocation } from '../router.tsx';
import { deadReasons, type JobSummary, type Page, type Session } from '../types.ts';

type Pending =
  | { kind: 'requeue' | 'delete'; ids: string[] }
  /**
   * `count` as shown: "12", "at least 100,000", or null when not known. `requestKey`: the
   * dialog's, sent with each press of its button (filter-actions.tsx).
   */
  | { kind: 'requeue-all' | 'delete-all'; count: string | null; requestKey: string };

const letters = (n: number) => `${fmtNum(n)} dead letter${n === 1 ? '' : 's'}`;

/** What requeue and delete of chosen dead letters (a row's, or the selected ones) say. */
const chosen = {
  requeue: {
    label: 'Requeue',
    past: 'Requeued',
    danger: false,
    body: 'They go back to ready with a fresh attempt budget.',
  },
  delete: {
    label: 'Delete',
    past: 'Deleted',
    danger: true,
    body: 'They are removed for good; jobs still waiting on them (onDependencyFailure: wait) are cancelled.',
  },
} as const;

/** The notice once chosen dead letters were requeued or deleted; none changed says why. */
const doneNotice = (past: string, changed: number) =>
  changed === 0
    ? `${past} no dead letters: they were already requeued or deleted (by someone else, or the retention sweep).`
    : `${past} ${letters(changed)}.`;

const columns: Column<JobSummary>[] = [
  { header: 'Job', rowHeader: true, cell: (j) => <JobIdLink id={j.id} /> },
  { header: 'Type', cell: (j) => j.type },
  { header: 'Reason', cell: (j) => <ReasonBadge reason={j.deadReason} /> },
  { header: 'Failed', className: 'nowrap', cell: (j) => <Time ms={j.failedAtMs} past /> },
  { header: 'Attempts', num: true, cell: (j) => j.attempt },
  {
    header: 'Last error',
    className: 'error-cell',
    title: (j) => j.lastError ?? undefined,
    cell: (j) => j.lastError,
  },
];

export function DeadLetters({ session }: { session: Session }) {
  const { params } = useLocation();
  const queues = useQueues();
  const all = queues.queues;
  const queue = params.get('queue') ?? all.find((q) => q.counts.dead > 0)?.name ?? all[0]?.name ?? '';
  const reason = params.get('reason') ?? '';
  const error = params.get('error') ?? '';
  const age = params.get('enqueuedBeforeMs') ?? '';
  const narrowing = { reason, error, enqueuedBeforeMs: age };
  const [errorForm, setErrorForm] = useState(error);
  const cursor = params.get('cursor') ?? '';
  const { selected, setSelected, paused, pausedBecause } = useSelection();
  const known = all.find((q) => q.name === queue);
  const unknownQueue = queue !== '' && queues.data !== null && known === undefined;

  // Read once the queue list says the queue exists: a queue that is gone answers 404.
  const page = useApi<Page<JobSummary>>(
    known === undefined
      ? null
      : `/api/v1/queues/${seg(queue)}/dead-letters${query({ ...narrowing, cursor, order: 'newest_first', limit: 50 })}`,
    { pollMs: 5000, paused },
  );
  const confirm = useConfirm<Pending>();
  const action = useAction();
  const operator = can(session, 'operator');
  const items = page.data?.items ?? [];
  // With a reason the server counts that reason's dead letters (one index range): "Requeue all N".
  // Error text and age are counted by no index: the server counts them, bounded ("at least N").
  const scanned = error !== '' || age !== '';
  const counted = useApi<Count>(
    scanned && known !== undefined && page.data !== null
      ? `/api/v1/jobs-count${query({ queue, state: 'dead', ...narrowing })}`
      : null,
  );
  const total: string | null = scanned
    ? counted.data === null
      ? null
      : counted.data.exact
        ? fmtNum(counted.data.matched)
        : `at least ${fmtNum(counted.data.matched)}`
    : reason === ''
      ? known === undefined
        ? null
        : fmtNum(known.counts.dead)
      : page.data?.total == null
        ? null
        : fmtNum(page.data.total);

  // A delete of one dead letter says how many jobs wait on it (and are cancelled with it).
  const one =
    confirm.pending?.kind === 'delete' && confirm.pending.ids.length === 1 ? confirm.pending.ids[0] : null;
  const waitingNote = useWaitingNote(queue, one ?? null);

  const run = async (pending: Pending) => {
    const base = `/api/v1/queues/${seg(queue)}/dead-letters`;
    const result = await action.run(() =>
      'ids' in pending
        ? post<{ changed: number }>(`${base}/${pending.kind}`, { jobIds: pending.ids })
        : post<{ changed: number }>(`${base}/${pending.kind}`, {
            ...(reason ? { reason } : {}),
            ...(error ? { error } : {}),
            ...(age ? { enqueuedBeforeMs: Number(age) } : {}),
            ...(pending.kind === 'delete-all' ? { confirm: queue } : {}),
            requestKey: pending.requestKey,
          }),
    );
    // A failed "all" keeps its dialog open with the error: pressing again repeats the request under
    // the same key, so an operation the first press started (its answer lost) is not started twice.
    if (result === undefined && !('ids' in pending)) return;
    confirm.close();
    if (result === undefined) return;
    notify(doneNotice(pending.kind.startsWith('requeue') ? 'Requeued' : 'Deleted', result.changed));
    afterChange();
  };
  // The list changed: the selection goes, and a later page goes back to the first.
  const afterChange = () => {
    setSelected(new Set());
    if (cursor !== '') navigate(`/dead-letters${query({ queue, ...narrowing })}`);
  };
  const bySelection = (kind: 'requeue' | 'delete'): BulkAction<JobSummary> => ({
    key: kind,
    ...chosen[kind],
    run: async (jobs) =>
      (
        await post<{ changed: number }>(`/api/v1/queues/${seg(queue)}/dead-letters/${kind}`, {
          jobIds: jobs.map((j) => j.id),
        })
      ).changed,
  });

  const describe = (p: Pending | null): { title: string; body: string; label: string; danger: boolean } => {
    if (p === null) return { title: '', body: '', label: '', danger: false };
    const count = 'ids' in p ? fmtNum(p.ids.length) : p.count;
    // The reason in quotes after the noun: "dead lettered dead letters" read as a stutter.
    const what = `all ${count === null ? `(more than ${fmtNum(items.length)})` : count} dead letter${count === '1' ? '' : 's'}`;
    const why = [
      reason ? ` with reason “${humanize(reason)}”` : '',
      error ? ` whose last error contains “${error}”` : '',
      age ? `, ${describeAge(age)}` : '',
    ].join('');
    switch (p.kind) {
      case 'requeue':
      case 'delete': {
        const { label, body, danger } = chosen[p.kind];
        const single = p.kind === 'delete' && p.ids.length === 1;
        return {
          title: `${label} ${letters(p.ids.length)}?`,
          body: single ? `It is removed for good.${waitingNote === '' ? '' : ` ${waitingNote}`}` : body,
          label: `${label} ${letters(p.ids.length)}`,
          danger,
        };
      }
      case 'requeue-all':
        return {
          title: `Requeue ${what} of ${queue}${why}?`,
          body: 'Every one goes back to ready with a fresh attempt budget.',
          label: count === null ? 'Requeue all' : `Requeue ${count}`,
          danger: false,
        };
      case 'delete-all':
        return {
          title: `Delete ${what} of ${queue}${why}?`,
          body: 'Every one is removed for good, and jobs still waiting on them (onDependencyFailure: wait) are cancelled. This cannot be undone.',
          label: count === null ? 'Delete all' : `Delete ${count}`,
          danger: true,
        };
    }
  };
  const text = describe(confirm.pending);
  // An action's error shows in its dialog while that is open (kept open by a failed "all").
  const pageActionError = confirm.pending === null ? action.error : null;

  return (
    <>
      <PageHeader title="Dead letters">
        <LiveStatus loaded={page} everyMs={5000} pausedBecause={pausedBecause} />
        <RefreshButton loaded={page} />
        {operator && items.length > 0 && (
          <button
            type="button"
            class="btn btn-small"
            onClick={() => confirm.ask({ kind: 'requeue-all', count: total, requestKey: newRequestKey() })}
          >
            Requeue all{total === null ? '' : ` ${total}`}…
          </button>
        )}
        {can(session, 'admin') && items.length > 0 && (
          <button
            type="button"
            class="btn btn-small btn-danger"
            onClick={() => confirm.ask({ kind: 'delete-all', count: total, requestKey: newRequestKey() })}
          >
            Delete all{total === null ? '' : ` ${total}`}…
          </button>
        )}
      </PageHeader>
      <FilterBar
        label="Dead letter filters"
        active={[reason, error, age].filter((f) => f !== '').length}
        submitLabel="Apply"
        onSubmit={() => navigate(`/dead-letters${query({ queue, ...narrowing, error: errorForm.trim() })}`)}
      >
        <SelectField
          id="dl-queue"
          label="Queue"
          value={queue}
          choices={[
            ...(unknownQueue ? [{ value: queue, label: `${queue} (no such queue)` }] : []),
            ...all.map((q) => ({ value: q.name, label: `${q.name} (${fmtNum(q.counts.dead)})` })),
          ]}
          onChange={(name) => navigate(`/dead-letters${query({ queue: name, ...narrowing })}`)}
        />
        <SelectField
          id="dl-reason"
          label="Reason"
          value={reason}
          any="any reason"
          choices={deadReasons.map((r) => ({ value: r, label: humanize(r) }))}
          onChange={(r) => navigate(`/dead-letters${query({ queue, ...narrowing, reason: r })}`)}
        />
        <TextField
          id="dl-error"
          label="Error contains"
          placeholder="any error"
          value={errorForm}
          onInput={setErrorForm}
        />
        <AgeField
          id="dl-age"
          value={age}
          onChange={(enqueuedBeforeMs) =>
            navigate(`/dead-letters${query({ queue, ...narrowing, enqueuedBeforeMs })}`)
          }
        />
      </FilterBar>
      <ErrorBanner error={page.stale ? pageActionError : (queues.error ?? page.error ?? pageActionError)} />
      {known !== undefined && known.counts.dead > 0 && (
        <TopErrors session={session} queue={queue} onChanged={page.reload} />
      )}
      {unknownQueue ? (
        <div class="card">
          <Empty title={`There is no queue ${queue}`}>Choose a queue above.</Empty>
        </div>
      ) : queue === '' ? (
        queues.data && (
          <div class="card">
            <Empty title="No queues yet" />
          </div>
        )
      ) : page.data === null ? (
        page.error === null && <Loading />
      ) : items.length === 0 ? (
        <div class="card">
          <Empty
            title={`No ${reason ? `${humanize(reason)} ` : ''}dead letters in ${queue}${error ? ` whose last error contains “${error}”` : ''}${age ? `, ${describeAge(age)}` : ''}`}
          >
            Jobs land here when they run out of attempts, their lease expires on the last attempt, or a worker
            or operator dead-letters them.
          </Empty>
          <Pager nextCursor={null} />
        </div>
      ) : (
        <section class={`card${page.stale ? ' is-stale' : ''}`} aria-label={`dead letters of ${queue}`}>
          <DataTable
            label={`dead letters of ${queue}`}
            columns={columns}
            rows={items}
            rowKey={(j) => j.id}
            wide
            {...(operator
              ? {
                  selection: {
                    selected,
                    onChange: setSelected,
                    rowLabel: (id: string) => `Select job ${id}`,
                    actions: (
                      <BulkActions
                        selected={items.filter((j) => selected.has(j.id))}
                        actions={[bySelection('requeue'), bySelection('delete')]}
                        count={letters}
                        labels="selected"
                        done={(a, changed) => doneNotice(a.past, changed)}
                        onDone={afterChange}
                      />
                    ),
                  },
                  rowActions: (job: JobSummary) => (
                    <>
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
                    </>
                  ),
                }
              : {})}
          />
          <Pager nextCursor={page.data.nextCursor} />
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
        <ErrorBanner error={confirm.pending === null ? null : action.error} onDismiss={action.clear} />
      </ConfirmDialog>
    </>
  );
}
