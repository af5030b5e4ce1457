/**
 * Actions on the selected jobs of a list: each button names what it does and
 * to how many of the selected jobs it applies (a dead job can be requeued or
 * deleted, a waiting one cancelled or dead-lettered), and the confirmation
 * repeats the count. Each job is changed by its own audited call; the notice
 * says how many changed and why any did not.
 */
import { ApiError, post, seg } from '../api.ts';
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
  run(jobs: JobSummary[]): Promise<void>;
}

const one = (path: string) => (jobs: JobSummary[]) =>
  jobs.reduce<Promise<void>>(async (prev, j) => {
    await prev;
    await post(`/api/v1/jobs/${seg(j.id)}/${path}`);
  }, Promise.resolve());

const actions: readonly BulkAction[] = [
  {
    key: 'requeue',
    label: 'Requeue',
    past: 'Requeued',
    states: ['dead', 'completed', 'cancelled'],
    danger: false,
    body: 'They go back to ready with a fresh attempt budget.',
    run: one('requeue'),
  },
  {
    key: 'dead-letter',
    label: 'Dead-letter',
    past: 'Dead-lettered',
    states: ['ready', 'scheduled'],
    danger: true,
    body: 'They stop being delivered and wait in the dead letters until requeued or deleted.',
    run: one('dead-letter'),
  },
  {
    key: 'cancel',
    label: 'Cancel',
    past: 'Cancelled',
    states: ['ready', 'scheduled', 'leased'],
    danger: true,
    body: "They will not run. Leased ones are running: their workers are told to stop, and they end cancelled. Cancelled jobs are kept for the queue's retention.",
    run: one('cancel'),
  },
  {
    key: 'delete',
    label: 'Delete',
    past: 'Deleted',
    states: ['dead'],
    danger: true,
    body: 'These dead letters are removed for good.',
    async run(jobs) {
      const byQueue = new Map<string, string[]>();
      for (const j of jobs) byQueue.set(j.queue, [...(byQueue.get(j.queue) ?? []), j.id]);
      for (const [queue, jobIds] of byQueue) {
        await post(`/api/v1/queues/${seg(queue)}/dead-letters/delete`, { jobIds });
      }
    },
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
          const done = await action.run(async () => {
            await pending.run(targets);
            return true;
          });
          confirm.close();
          if (done) notify(`${pending.past} ${plural(targets.length)}.`);
          else if (action.error instanceof ApiError)
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
