/**
 * Actions on the selected jobs of a list: each button names what it does and
 * to how many of the selected jobs it applies (a dead job can be requeued or
 * deleted, a waiting one cancelled or dead-lettered), and the confirmation
 * repeats the count. Each is one call for the whole selection
 * (POST /api/v1/bulk/selected/{action}: one write, one audit entry with the
 * count). The notice says
 * how many changed and how many were skipped (their state changed meanwhile).
 */
import { ApiError, post } from '../api.ts';
import { fmtNum } from '../format.ts';
import { useAction } from '../hooks.ts';
import type { JobState, JobSummary } from '../types.ts';
import { ErrorBanner, notify } from './common.tsx';
import { ConfirmDialog, useConfirm } from './confirm-dialog.tsx';

interface BulkAction {
  key: string;
  label: string;
  past: string;
  states: readonly JobState[];
  danger: boolean;
  body: string;
  /** Changes the jobs; answers how many changed. */
  run(jobs: JobSummary[]): Promise<number>;
}

/** The whole selection in one call: one write and one audit entry. */
const all = (action: 'requeue' | 'cancel' | 'dead-letter' | 'delete') => async (jobs: JobSummary[]) =>
  (
    await post<{ changed: number; skipped: number }>(`/api/v1/bulk/selected/${action}`, {
      jobIds: jobs.map((j) => j.id),
    })
  ).changed;

const actions: readonly BulkAction[] = [
  {
    key: 'requeue',
    label: 'Requeue',
    past: 'Requeued',
    states: ['dead', 'completed', 'cancelled'],
    danger: false,
    body: 'They go back to ready with a fresh attempt budget.',
    run: all('requeue'),
  },
  {
    key: 'dead-letter',
    label: 'Dead-letter',
    past: 'Dead-lettered',
    states: ['ready', 'scheduled'],
    danger: true,
    body: 'They stop being delivered and wait in the dead letters until requeued or deleted.',
    run: all('dead-letter'),
  },
  {
    key: 'cancel',
    label: 'Cancel',
    past: 'Cancelled',
    states: ['ready', 'scheduled', 'leased'],
    danger: true,
    body: "They will not run. Leased ones are running: their workers are told to stop, and they end cancelled. Cancelled jobs are kept for the queue's retention.",
    run: all('cancel'),
  },
  {
    key: 'delete',
    label: 'Delete',
    past: 'Deleted',
    states: ['dead'],
    danger: true,
    body: 'These dead letters are removed for good.',
    run: all('delete'),
  },
];

const plural = (n: number) => `${fmtNum(n)} job${n === 1 ? '' : 's'}`;

export function BulkJobActions({ selected }: { selected: readonly JobSummary[] }) {
  const confirm = useConfirm<BulkAction>();
  const action = useAction();
  const applicable = (a: BulkAction) => selected.filter((j) => a.states.includes(j.state));
  const pending = confirm.pending;
  const targets = pending === null ? [] : applicable(pending);
  return (
    <>
      {actions.map((a) => {
        const n = applicable(a).length;
        if (n === 0) return null;
        return (
          <button
            key={a.key}
            type="button"
            class={a.danger ? 'btn btn-small btn-danger' : 'btn btn-small'}
            onClick={() => confirm.ask(a)}
          >
            {a.label} {fmtNum(n)}…
          </button>
        );
      })}
      <ErrorBanner error={action.error} onDismiss={action.clear} />
      <ConfirmDialog
        open={pending !== null}
        title={pending === null ? '' : `${pending.label} ${plural(targets.length)}?`}
        confirmLabel={pending === null ? '' : `${pending.label} ${plural(targets.length)}`}
        danger={pending?.danger ?? false}
        busy={action.busy}
        onCancel={confirm.close}
        onConfirm={async () => {
          if (pending === null) return;
          const changed = await action.run(() => pending.run(targets));
          confirm.close();
          if (changed !== undefined) {
            const skipped = targets.length - changed;
            notify(
              `${pending.past} ${plural(changed)}.${skipped > 0 ? ` ${plural(skipped)} had changed state and stayed as ${skipped === 1 ? 'it was' : 'they were'}.` : ''}`,
            );
          } else if (action.error instanceof ApiError)
            notify(`${pending.label} stopped: ${action.error.message}`);
        }}
      >
        <p>
          {pending?.body}
          {targets.length < selected.length &&
            ` ${plural(selected.length - targets.length)} of the selection ${selected.length - targets.length === 1 ? 'is' : 'are'} in another state and stay${selected.length - targets.length === 1 ? 's' : ''} as ${selected.length - targets.length === 1 ? 'it is' : 'they are'}.`}
        </p>
      </ConfirmDialog>
    </>
  );
}
