/**
 * The jobs page's actions on every job the filter matches, whatever the
 * filter (one queue or all, state, type, group, error text, metadata, age):
 * "Requeue all", "Cancel all", "Run all now" and (admins) "Delete all". Each
 * asks the server how many jobs match before the confirmation names the count
 * ("at least N" when the count stopped early, with how far it looked), then
 * starts one server-side bulk operation and shows its progress until it ends,
 * with a Stop button. The server checks the role again. Each confirmation
 * names its start with a request key of its own, so pressing its button again
 * after a failure starts no second operation.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { can, get, post, seg } from '../api.ts';
import { serverNowMs } from '../clock.ts';
import { fmtNum, fmtRelative, fmtTime } from '../format.ts';
import { readTimeoutMs, staleAfterMs, useAction } from '../hooks.ts';
import type { BrowseState, Session } from '../types.ts';
import { describeAge } from './age-field.tsx';
import { ErrorBanner, notify } from './common.tsx';
import { ConfirmDialog } from './confirm-dialog.tsx';

/** The list's filter, as its URL has it ('' : any). */
export interface ListFilter {
  queue: string;
  state: string;
  type: string;
  group: string;
  error: string;
  meta: string;
  /** Only jobs enqueued before this time (ms since the epoch, as text); '' or absent: any. */
  enqueuedBeforeMs?: string;
  /** Only jobs this schedule made; '' or absent: any. */
  schedule?: string;
  /** A top-errors group: its class ('' for none) and the first line of the last error, exactly. */
  errorGroup?: { errorClass: string; firstLine: string };
}

type Action = 'requeue' | 'cancel' | 'run-now' | 'delete';
export interface Count {
  matched: number;
  exact: boolean;
  examined: number;
}
interface Operation {
  id: string;
  state: 'running' | 'done' | 'cancelled' | 'failed';
  matched: number;
  /** False: `matched` is "at least" (the count before it began stopped early). */
  matchedExact: boolean;
  changed: number;
  cancelRequested: number;
  error: string | null;
}

/** The states each action applies to; a list of any other state does not offer it. */
const states: Record<Action, readonly BrowseState[]> = {
  requeue: ['dead', 'completed', 'cancelled'],
  cancel: ['scheduled', 'ready', 'leased', 'retrying'],
  'run-now': ['scheduled', 'retrying'],
  delete: ['scheduled', 'ready', 'dead', 'completed', 'cancelled', 'retrying'],
};

const jobsWord = (n: string) => `job${n === '1' ? '' : 's'}`;

/** Each action's button, confirmation and notice; `n` is the count as shown, `what` the list as a phrase. */
const texts: Record<
  Action,
  {
    label: string;
    path: string;
    title(n: string, what: string): string;
    confirm(n: string): string;
    done(n: string, what: string): string;
    body: string;
  }
> = {
  requeue: {
    label: 'Requeue all matching',
    path: 'requeue',
    title: (n, what) => `Requeue ${n} ${what}?`,
    confirm: (n) => `Requeue ${n} ${jobsWord(n)}`,
    done: (n, what) => `Requeued ${n} ${what}`,
    body: 'Every dead, completed or cancelled job that matches becomes ready now, with a fresh attempt budget.',
  },
  cancel: {
    label: 'Cancel all matching',
    path: 'cancel',
    title: (n, what) => `Cancel ${n} ${what}?`,
    confirm: (n) => `Cancel ${n} ${jobsWord(n)}`,
    done: (n, what) => `Cancelled ${n} ${what}`,
    body: "They will not run. Leased ones are running: their workers are told to stop, and they end cancelled. Cancelled jobs are kept for the queue's retention and can be requeued.",
  },
  'run-now': {
    label: 'Run all now',
    path: 'update',
    title: (n, what) => `Run ${n} ${what} now?`,
    confirm: (n) => `Run ${n} ${jobsWord(n)} now`,
    done: (n, what) => `${n} ${what} run now`,
    body: 'Every scheduled job that matches becomes ready at once, including retries waiting for their backoff.',
  },
  delete: {
    label: 'Delete all matching',
    path: 'delete',
    title: (n, what) => `Delete ${n} ${what}?`,
    confirm: (n) => `Delete ${n} ${jobsWord(n)}`,
    done: (n, what) => `Deleted ${n} ${what}`,
    body: 'They are deleted for good (leased jobs are left to finish). Waiting jobs and dead letters free their idempotency keys.',
  },
};

/** The filter as a phrase: "ready jobs of group acme in tenants", "dead jobs with error “timeout” in all queues". */
function describeFilter(f: ListFilter): string {
  return [
    f.state === '' ? 'jobs' : `${f.state} jobs`,
    f.type === '' ? '' : `of type ${f.type}…`,
    f.group === '' ? '' : `of group ${f.group}`,
    f.error === '' ? '' : `with error “${f.error}”`,
    f.errorGroup === undefined
      ? ''
      : `with error ${f.errorGroup.errorClass === '' ? '' : `${f.errorGroup.errorClass} `}“${f.errorGroup.firstLine}”`,
    f.meta === '' ? '' : `with ${f.meta}`,
    describeAge(f.enqueuedBeforeMs ?? ''),
    f.schedule ? `made by schedule ${f.schedule}` : '',
    f.queue === '' ? 'in all queues' : `in ${f.queue}`,
  ]
    .filter(Boolean)
    .join(' ');
}

/** The count in a title or button: "3", or "at least 100,000". */
const shown = (count: Count) => (count.exact ? fmtNum(count.matched) : `at least ${fmtNum(count.matched)}`);

/** "1,234 jobs", or "at least 100,000 jobs (counted among the first 100,000 looked at)". */
export function countText(count: Count): string {
  const jobs = `${fmtNum(count.matched)} job${count.matched === 1 ? '' : 's'}`;
  return count.exact ? jobs : `at least ${jobs} (the count stopped after ${fmtNum(count.examined)} jobs)`;
}

/**
 * A fresh request key (admin API `requestKey`): 16 random bytes in hex, from getRandomValues,
 * which a page served over plain HTTP has too (randomUUID needs a secure context). One per
 * confirmation of a bulk start (here, the dead letters' "all", a queue's purge).
 */
export function newRequestKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `ui-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** How often a running operation's progress is read, ms. */
const progressPollMs = 500;

export function FilterActions({
  session,
  filter,
  offer,
  onDone,
}: {
  session: Session;
  filter: ListFilter;
  /** False while the list shows no job: nothing to offer (a running operation still shows). */
  offer: boolean;
  onDone(): void;
}) {
  const what = describeFilter(filter);
  const [pending, setPending] = useState<{ action: Action; count: Count; requestKey: string } | null>(null);
  const [running, setRunning] = useState<{ action: Action; op: Operation } | null>(null);
  const action = useAction();

  // While an operation runs, its progress is polled every `progressPollMs`, each poll given up after
  // readTimeoutMs; a poll never starts while one is waiting, a failed one is followed by the next,
  // and the line says "stale since …" once the last good answer is older than two poll periods.
  // When the operation ends, the list reloads.
  const [progressOkAtMs, setProgressOkAtMs] = useState<number | null>(null);
  const [progressNowMs, setProgressNowMs] = useState(serverNowMs);
  /** The operation whose end the page has told (a poll and the Stop's answer may both see it). */
  const toldEnd = useRef<string | null>(null);
  /** The operation the Stop was clicked for. */
  const stopAsked = useRef<string | null>(null);
  const endedNow = useRef(ended);
  endedNow.current = ended;
  const pollingId = running !== null && running.op.state === 'running' ? running.op.id : null;
  useEffect(() => {
    if (running === null || pollingId === null) return;
    const which = running.action;
    let gone = false;
    let waiting = false;
    setProgressOkAtMs(serverNowMs());
    setProgressNowMs(serverNowMs());
    const poll = window.setInterval(() => {
      if (waiting) return;
      waiting = true;
      get<Operation>(`/api/v1/bulk-operations/${seg(pollingId)}`, {
        timeoutMs: readTimeoutMs(progressPollMs),
      })
        .then((op) => {
          if (gone) return;
          setProgressOkAtMs(serverNowMs());
          setRunning({ action: which, op });
          if (op.state !== 'running') endedNow.current(which, op);
        })
        // A failed or given-up poll: the line turns stale and the next poll tries again.
        .catch(() => undefined)
        .finally(() => {
          waiting = false;
        });
    }, progressPollMs);
    const age = window.setInterval(() => setProgressNowMs(serverNowMs()), 1000);
    return () => {
      gone = true;
      window.clearInterval(poll);
      window.clearInterval(age);
    };
  }, [pollingId]);
  const progressStale =
    progressOkAtMs !== null && progressNowMs - progressOkAtMs > staleAfterMs(progressPollMs);

  /**
   * The notice of an operation that ended, once, whichever answer saw it end first: the one that
   * started it, a poll, or the Stop's. After a Stop, an operation that still ran to its end says
   * so: the progress line is up to a poll old, so the operation may have ended (or reached its
   * last slice) before the Stop reached the server.
   */
  function ended(which: Action, op: Operation) {
    if (toldEnd.current === op.id) return;
    toldEnd.current = op.id;
    const told =
      op.cancelRequested > 0
        ? `; ${fmtNum(op.cancelRequested)} running, their workers were told to stop`
        : '';
    const how =
      op.state === 'done'
        ? stopAsked.current === op.id
          ? ' (it ran to its end before the Stop took effect)'
          : ''
        : op.state === 'cancelled'
          ? ' (stopped)'
          : ` (failed: ${op.error ?? ''})`;
    notify(`${texts[which].done(fmtNum(op.changed - op.cancelRequested), what)}${told}${how}.`);
    onDone();
  }

  if (!can(session, 'operator')) return null;
  const offered = (Object.keys(states) as Action[]).filter(
    (a) =>
      offer &&
      (filter.state === '' || states[a].includes(filter.state as BrowseState)) &&
      (a !== 'delete' || can(session, 'admin')) &&
      // A list of every state offers the actions whose states are clear from their names.
      (filter.state !== '' || a === 'requeue' || a === 'cancel'),
  );
  const { errorGroup, enqueuedBeforeMs, ...plain } = filter;
  const body = {
    ...Object.fromEntries(Object.entries(plain).filter(([, v]) => v !== '')),
    ...(enqueuedBeforeMs === undefined || enqueuedBeforeMs === ''
      ? {}
      : { enqueuedBeforeMs: Number(enqueuedBeforeMs) }),
    // A group's class and line are sent even when empty: '' is a group of its own.
    ...(errorGroup === undefined
      ? {}
      : { errorClass: errorGroup.errorClass, errorLine: errorGroup.firstLine }),
  };

  const ask = async (which: Action) => {
    const extra = which === 'run-now' ? { runNow: true } : {};
    const count = await action.run(() =>
      post<Count>(`/api/v1/bulk/${texts[which].path}`, { ...body, ...extra, dryRun: true }),
    );
    // The dialog opens with its request key: every submit from it sends the same one.
    if (count !== undefined) setPending({ action: which, count, requestKey: newRequestKey() });
  };
  // A failed start keeps the dialog open with its error: pressing the button again repeats the
  // request under the same key, so if the first one did start an operation (its answer lost on
  // the way) the server answers with that one and starts no second.
  const confirm = async () => {
    if (pending === null) return;
    const extra = pending.action === 'run-now' ? { runNow: true } : {};
    const op = await action.run(() =>
      post<Operation>(`/api/v1/bulk/${texts[pending.action].path}`, {
        ...body,
        ...extra,
        requestKey: pending.requestKey,
      }),
    );
    if (op === undefined) return;
    setRunning({ action: pending.action, op });
    // A small operation may have ended before its answer: no poll follows, so say it here.
    if (op.state !== 'running') ended(pending.action, op);
    setPending(null);
  };
  // The server answers a Stop once the operation has ended (after its current slice), with how it
  // ended: the page tells that, unless a poll saw the end first.
  const stop = async () => {
    if (running === null) return;
    const { action: which, op: was } = running;
    stopAsked.current = was.id;
    const op = await action.run(() => post<Operation>(`/api/v1/bulk-operations/${seg(was.id)}/cancel`));
    if (op === undefined || op.state === 'running') return;
    setRunning((now) => (now?.op.id === op.id ? { action: which, op } : now));
    ended(which, op);
  };
  const text = pending === null ? null : texts[pending.action];
  const count = pending === null ? '' : countText(pending.count);
  const busy = action.busy || running?.op.state === 'running';

  return (
    <div class="filter-actions">
      {running?.op.state === 'running' ? (
        <span class="bulk-progress" role="status">
          {texts[running.action].label}: {fmtNum(running.op.changed)} of{' '}
          {running.op.matchedExact ? '' : 'at least '}
          {fmtNum(running.op.matched)} done…{' '}
          {progressStale && progressOkAtMs !== null
            ? `(stale since ${fmtTime(progressOkAtMs)}, ${fmtRelative(progressOkAtMs, progressNowMs, { past: true })}) `
            : ''}
          <button type="button" class="btn btn-small" onClick={stop}>
            Stop
          </button>
        </span>
      ) : (
        offered.map((a) => (
          <button
            key={a}
            type="button"
            class={`btn btn-small${a === 'cancel' || a === 'delete' ? ' btn-danger' : ''}`}
            disabled={busy}
            onClick={() => ask(a)}
          >
            {texts[a].label}
          </button>
        ))
      )}
      <ErrorBanner error={pending === null ? action.error : null} onDismiss={action.clear} />
      <ConfirmDialog
        open={pending !== null}
        title={text === null || pending === null ? '' : text.title(shown(pending.count), what)}
        confirmLabel={text === null || pending === null ? '' : text.confirm(shown(pending.count))}
        danger={pending?.action === 'cancel' || pending?.action === 'delete'}
        dismissLabel="Keep them"
        busy={action.busy}
        onCancel={() => setPending(null)}
        onConfirm={confirm}
      >
        <p>
          {count.charAt(0).toUpperCase()}
          {count.slice(1)} match. One operation on the server changes them in small steps while it keeps
          serving; its progress shows here, and it can be stopped.
        </p>
        <p>{text?.body}</p>
        <ErrorBanner error={pending === null ? null : action.error} onDismiss={action.clear} />
      </ConfirmDialog>
    </div>
  );
}
