/**
 * The bulk bar's actions on the selected rows of a list, for every list page
 * that has a selection. Each button names what it does; the confirmation
 * repeats the count; the notice says how many changed and how many were
 * skipped (their state changed meanwhile). Two ways to label the buttons:
 * - `counted` (lists of mixed states, Jobs): a button shows only when some
 *   selected rows are ones it applies to, with their count (a dead job can be
 *   requeued or deleted, a waiting one cancelled or dead-lettered);
 * - `selected` (lists of one state, Dead letters): every button is always
 *   there, "Requeue selected", disabled while nothing is selected (the
 *   selection bar already says how many are).
 * `BulkJobActions` is the Jobs page's: each action is one call for the whole
 * selection (POST /api/v1/bulk/selected/{action}: one write, one audit entry
 * with the count).
 */
import { ApiError, post } from '../api.ts';
import { fmtNum } from '../format.ts';
import { useAction } from '../hooks.ts';
import type { JobState, JobSummary } from '../types.ts';
import { ErrorBanner, notify } from './common.tsx';
import { ConfirmDialog, useConfirm } from './confirm-dialog.tsx';

/** An action of the bulk bar on rows of type T. */
export interface BulkAction<T> {
  key: string;
  /** The verb on its button and in its confirmation: "Requeue". */
  label: string;
  /** The verb in the notice: "Requeued". */
  past: string;
  /** The selected rows it applies to; every one when absent. */
  appliesTo?(row: T): boolean;
  danger: boolean;
  /** What the confirmation says it does. */
  body: string;
  /** Changes the rows; answers how many changed. */
  run(rows: T[]): Promise<number>;
}

/** Applies to jobs in these states. */
const inStates =
  (...states: JobState[]) =>
  (job: JobSummary) =>
    states.includes(job.state);

/** The whole selection in one call: one write and one audit entry. */
const all = (action: 'requeue' | 'cancel' | 'dead-letter' | 'delete') => async (jobs: JobSummary[]) =>
  (
    await post<{ changed: number; skipped: number }>(`/api/v1/bulk/selected/${action}`, {
      jobIds: jobs.map((j) => j.id),
    })
  ).changed;

const jobActions: readonly BulkAction<JobSummary>[] = [
  {
    key: 'requeue',
    label: 'Requeue',
    past: 'Requeued',
    appliesTo: inStates('dead', 'completed', 'cancelled'),
    danger: false,
    body: 'They go back to ready with a fresh attempt budget.',
    run: all('requeue'),
  },
  {
    key: 'dead-letter',
    label: 'Dead-letter',
    past: 'Dead-lettered',
    appliesTo: inStates('ready', 'scheduled'),
    danger: true,
    body: 'They stop being delivered and wait in the dead letters until requeued or deleted.',
    run: all('dead-letter'),
  },
  {
    key: 'cancel',
    label: 'Cancel',
    past: 'Cancelled',
    appliesTo: inStates('ready', 'scheduled', 'leased'),
    danger: true,
    body: "They will not run. Leased ones are running: their workers are told to stop, and they end cancelled. Cancelled jobs are kept for the queue's retention.",
    run: all('cancel'),
  },
  {
    key: 'delete',
    label: 'Delete',
    past: 'Deleted',
    appliesTo: inStates('dead'),
    danger: true,
    body: 'These dead letters are removed for good; jobs still waiting on them (onDependencyFailure: wait) are cancelled.',
    run: all('delete'),
  },
];

const plural = (n: number) => `${fmtNum(n)} job${n === 1 ? '' : 's'}`;

/** The Jobs page's bulk bar: each action applies to the selected jobs in its states. */
export function BulkJobActions({ selected }: { selected: readonly JobSummary[] }) {
  return <BulkActions selected={selected} actions={jobActions} count={plural} />;
}

/** The notice once an action is done: how many changed, and how many stayed because they had changed state. */
const doneNotice = (count: (n: number) => string, past: string, changed: number, asked: number) => {
  const skipped = asked - changed;
  return `${past} ${count(changed)}.${skipped > 0 ? ` ${count(skipped)} had changed state and stayed as ${skipped === 1 ? 'it was' : 'they were'}.` : ''}`;
};

export function BulkActions<T>({
  selected,
  actions,
  count,
  labels = 'counted',
  done = (action, changed, asked) => doneNotice(count, action.past, changed, asked),
  onDone,
}: {
  selected: readonly T[];
  actions: readonly BulkAction<T>[];
  /** A number of rows as the page names them: "3 jobs", "1 dead letter". */
  count(n: number): string;
  labels?: 'counted' | 'selected';
  /** The notice once an action changed `changed` of the `asked` rows it applied to. */
  done?(action: BulkAction<T>, changed: number, asked: number): string;
  /** After an action that answered (the page may clear its selection, go to its first page). */
  onDone?(changed: number): void;
}) {
  const confirm = useConfirm<BulkAction<T>>();
  const action = useAction();
  const applicable = (a: BulkAction<T>) => selected.filter((row) => a.appliesTo?.(row) ?? true);
  const pending = confirm.pending;
  const targets = pending === null ? [] : applicable(pending);
  const others = selected.length - targets.length;
  return (
    <>
      {actions.map((a) => {
        const n = applicable(a).length;
        if (labels === 'counted' && n === 0) return null;
        return (
          <button
            key={a.key}
            type="button"
            class={a.danger ? 'btn btn-small btn-danger' : 'btn btn-small'}
            disabled={n === 0}
            onClick={() => confirm.ask(a)}
          >
            {labels === 'counted' ? `${a.label} ${fmtNum(n)}…` : `${a.label} selected`}
          </button>
        );
      })}
      <ErrorBanner error={action.error} onDismiss={action.clear} />
      <ConfirmDialog
        open={pending !== null}
        title={pending === null ? '' : `${pending.label} ${count(targets.length)}?`}
        confirmLabel={pending === null ? '' : `${pending.label} ${count(targets.length)}`}
        danger={pending?.danger ?? false}
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={async () => {
          if (pending === null) return;
          const changed = await action.run(() => pending.run(targets));
          confirm.close();
          if (changed !== undefined) {
            notify(done(pending, changed, targets.length));
            onDone?.(changed);
          } else if (action.error instanceof ApiError)
            notify(`${pending.label} stopped: ${action.error.message}`);
        }}
      >
        <p>
          {pending?.body}
          {others > 0 &&
            ` ${count(others)} of the selection ${others === 1 ? 'is' : 'are'} in another state and stay${others === 1 ? 's' : ''} as ${others === 1 ? 'it is' : 'they are'}.`}
        </p>
      </ConfirmDialog>
    </>
  );
}
