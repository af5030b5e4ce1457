/**
 * The jobs page's actions on every job the filter shows: "Cancel all matching"
 * (scheduled, ready or leased jobs; the confirmation names the count, asked
 * of the server at that moment) and "Run all now" (scheduled jobs). Operators
 * and admins only; the server checks again.
 */
import { useState } from 'preact/hooks';
import { can, post, seg } from '../api.ts';
import { fmtNum } from '../format.ts';
import { useAction } from '../hooks.ts';
import { cancellableStates, type JobState, type Session } from '../types.ts';
import { ErrorBanner, notify } from './common.tsx';
import { ConfirmDialog } from './confirm-dialog.tsx';

interface Filter {
  queue: string;
  state: JobState;
  type: string;
  /** '' : any group. */
  group: string;
}

type Pending = { action: 'cancel' | 'run-now'; matched: number };

/** The two actions: the endpoint each posts to, and how its confirmation and notice read. */
const texts = {
  cancel: {
    path: 'cancel',
    title: (n: string, what: string) => `Cancel ${n} ${what}?`,
    confirm: (n: string) => `Cancel ${n} job${n === '1' ? '' : 's'}`,
    dismiss: 'Keep them',
    body: "They will not run. Leased ones are running: their workers are told to stop, and they end cancelled. Cancelled jobs are kept for the queue's retention and can be requeued one by one.",
  },
  'run-now': {
    path: 'update',
    title: (n: string, what: string) => `Run ${n} ${what} now?`,
    confirm: (n: string) => `Run ${n} job${n === '1' ? '' : 's'} now`,
    dismiss: 'Cancel',
    body: 'Every scheduled job that matches becomes ready at once, including retries waiting for their backoff.',
  },
} as const;

export function FilterActions({
  session,
  filter,
  onDone,
}: {
  session: Session;
  filter: Filter;
  onDone(): void;
}) {
  const [pending, setPending] = useState<Pending | null>(null);
  const action = useAction();
  if (!can(session, 'operator') || filter.queue === '') return null;
  const body = {
    states: [filter.state],
    ...(filter.type === '' ? {} : { type: filter.type }),
    ...(filter.group === '' ? {} : { group: filter.group }),
  };
  const base = `/api/v1/queues/${seg(filter.queue)}/jobs`;
  const what = `${filter.state} jobs${filter.type === '' ? '' : ` of type ${filter.type}`}${filter.group === '' ? '' : ` of group ${filter.group}`} in ${filter.queue}`;

  // Both ask the server how many jobs match now, so the confirmation names the count.
  const ask = async (which: Pending['action']) => {
    const counted = await action.run(() =>
      post<{ matched: number }>(`${base}/${texts[which].path}`, { ...body, dryRun: true }),
    );
    if (counted !== undefined) setPending({ action: which, matched: counted.matched });
  };
  const confirm = async () => {
    if (pending === null) return;
    if (pending.action === 'cancel') {
      const done = await action.run(() =>
        post<{ cancelled: number; cancelRequested: number }>(`${base}/cancel`, body),
      );
      if (done !== undefined) {
        const running =
          done.cancelRequested > 0
            ? `; ${done.cancelRequested} running, their workers were told to stop`
            : '';
        notify(`Cancelled ${done.cancelled} ${what}${running}.`);
      }
    } else {
      const done = await action.run(() =>
        post<{ updated: number }>(`${base}/update`, { ...body, runNow: true }),
      );
      if (done !== undefined) notify(`${fmtNum(done.updated)} ${what} run now.`);
    }
    setPending(null);
    onDone();
  };
  const text = pending === null ? null : texts[pending.action];
  const count = pending === null ? '' : fmtNum(pending.matched);

  return (
    <div class="filter-actions">
      {filter.state === 'scheduled' && (
        <button type="button" class="btn btn-small" disabled={action.busy} onClick={() => ask('run-now')}>
          Run all now
        </button>
      )}
      {cancellableStates.includes(filter.state) && (
        <button
          type="button"
          class="btn btn-small btn-danger"
          disabled={action.busy}
          onClick={() => ask('cancel')}
        >
          Cancel all matching
        </button>
      )}
      <ErrorBanner error={pending === null ? action.error : null} onDismiss={action.clear} />
      <ConfirmDialog
        open={pending !== null}
        title={text === null ? '' : text.title(count, what)}
        confirmLabel={text === null ? '' : text.confirm(count)}
        danger={pending?.action === 'cancel'}
        dismissLabel={text?.dismiss ?? 'Cancel'}
        busy={action.busy}
        onCancel={() => setPending(null)}
        onConfirm={confirm}
      >
        <p>{text?.body}</p>
        <ErrorBanner error={pending === null ? null : action.error} onDismiss={action.clear} />
      </ConfirmDialog>
    </div>
  );
}
