/** Small building blocks every page uses: errors, empty states, badges, times, ids, paging, notices. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api.ts';
import { useNow } from '../clock.ts';
import { dateOf, fmtRelative, fmtTime, humanize, shortId } from '../format.ts';
import { type Loaded, staleAfterMs } from '../hooks.ts';
import { Link, navigate, onLocationChange, useLocation } from '../router.tsx';
import type { JobState } from '../types.ts';

export function ErrorBanner({ error, onDismiss }: { error: ApiError | null; onDismiss?: () => void }) {
  if (error === null) return null;
  return (
    <div class="banner banner-error" role="alert">
      <span>
        <strong>{error.status === 0 ? 'No connection' : 'Error'}:</strong> {error.message}
      </span>
      {onDismiss && (
        <button type="button" class="btn-link" onClick={onDismiss}>
          Dismiss
        </button>
      )}
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children && <p class="empty-text">{children}</p>}
    </div>
  );
}

export function Loading() {
  return (
    <p class="loading" aria-live="polite">
      Loading…
    </p>
  );
}

export function StateBadge({ state }: { state: JobState }) {
  return <span class={`badge badge-${state}`}>{state}</span>;
}

export function ReasonBadge({ reason }: { reason: string | null }) {
  if (reason === null) return null;
  return <span class="badge badge-reason">{humanize(reason)}</span>;
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1>{title}</h1>
      {children && <div class="page-actions">{children}</div>}
    </div>
  );
}

/**
 * Cursor paging with the cursor in the URL (`?cursor=…`), so a reload or a
 * shared link shows the same page: first, previous and next page. A list
 * whose server gives no `prevCursor` goes back to the cursor it came from,
 * remembered in the browser's history entry (it survives a reload).
 */
export function Pager({ prevCursor, nextCursor }: { prevCursor?: string | null; nextCursor: string | null }) {
  const { path, params } = useLocation();
  const current = params.get('cursor');
  if (current === null && nextCursor === null) return null;
  const remembered = (window.history.state as { pagerPrev?: string | null } | null)?.pagerPrev;
  const previous = prevCursor !== undefined ? prevCursor : remembered;
  const to = (cursor: string | null, state?: unknown) => {
    const next = new URLSearchParams(params);
    if (cursor === null) next.delete('cursor');
    else next.set('cursor', cursor);
    const text = next.toString();
    navigate(text === '' ? path : `${path}?${text}`, { state });
  };
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="btn" disabled={current === null} onClick={() => to(null)}>
        « First
      </button>
      <button
        type="button"
        class="btn"
        disabled={current === null || previous === undefined}
        onClick={() => to(previous ?? null)}
      >
        ‹ Previous
      </button>
      <button
        type="button"
        class="btn"
        disabled={nextCursor === null}
        onClick={() => to(nextCursor, { pagerPrev: current })}
      >
        Next ›
      </button>
    </nav>
  );
}

/**
 * A time in the one format, with how long ago (or how soon) beside it.
 * `past`: the time of something that has happened, never shown as "in 2 s".
 */
export function Time({
  ms,
  relative = true,
  past = false,
}: {
  ms: number | null;
  relative?: boolean;
  past?: boolean;
}) {
  const now = useNow(5000);
  if (ms === null) return <span class="muted">—</span>;
  const date = dateOf(ms);
  if (date === null) return <span class="time">{fmtTime(ms)}</span>;
  return (
    <span class="time">
      <time dateTime={date.toISOString()}>{fmtTime(ms)}</time>
      {relative && <span class="time-rel"> {fmtRelative(ms, now, { past })}</span>}
    </span>
  );
}

/** A job id in a list: its distinctive last digits, the full id on hover, a link to the job. */
export function JobIdLink({ id }: { id: string }) {
  return (
    <Link href={`/jobs/${id}`} class="mono job-id" title={id} aria-label={`job ${id}`}>
      {shortId(id)}
    </Link>
  );
}

/** A full id with a copy button. */
export function CopyId({ id }: { id: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <span class="copy-id">
      <span class="mono">{id}</span>
      <button
        type="button"
        class="btn-link"
        onClick={() => {
          void navigator.clipboard?.writeText(id).then(() => setCopied(true));
        }}
      >
        {copied ? 'copied' : 'copy'}
      </button>
    </span>
  );
}

/**
 * Whether what the page shows is current: "live" while the last answer is
 * recent, "stale since …" (and the numbers dimmed by the page) once it is
 * older than two poll periods or a refresh failed, and "paused" while the
 * page holds its refreshes (`pausedBecause` says why).
 */
export function LiveStatus({
  loaded,
  everyMs,
  pausedBecause,
}: {
  loaded: Loaded<unknown>;
  everyMs: number;
  pausedBecause?: string;
}) {
  const now = useNow(1000);
  if (loaded.okAtMs === null) return null;
  if (loaded.paused) {
    return (
      <span class="live live-paused" role="status" data-testid="live-status">
        <span class="live-dot" aria-hidden="true" /> refresh paused{pausedBecause ? ` ${pausedBecause}` : ''}
      </span>
    );
  }
  if (loaded.stale) {
    return (
      <span class="live live-stale" role="status" data-testid="live-status">
        <span class="live-dot" aria-hidden="true" /> stale since {fmtTime(loaded.okAtMs)} (
        {fmtRelative(loaded.okAtMs, now, { past: true })})
      </span>
    );
  }
  return (
    <span
      class="live"
      title={`Refreshed every ${everyMs / 1000} s; shown as stale once the last answer is over ${staleAfterMs(everyMs) / 1000} s old`}
      data-testid="live-status"
    >
      <span class="live-dot" aria-hidden="true" /> live
    </span>
  );
}

/** A Refresh button and, for a list that refreshes itself, when it last did. */
export function RefreshButton({ loaded }: { loaded: Loaded<unknown> }) {
  return (
    <button type="button" class="btn btn-small" onClick={loaded.reload} disabled={loaded.loading}>
      Refresh
    </button>
  );
}

// Notices: short confirmations of what an action did, announced to screen readers.
// A notice belongs to the page it was raised on: going to another page clears it,
// except a notice raised by the action that navigates (notify() and then navigate()
// in one go, as "Deleted queue x." before the queue list), which that page shows.
// A change of the query alone (filters, paging) stays on the page and keeps them.
type Notice = { id: number; text: string; carried: boolean };
let notices: Notice[] = [];
let nextNotice = 0;
const noticeListeners = new Set<(list: Notice[]) => void>();

function setNotices(next: Notice[]): void {
  notices = next;
  for (const listener of noticeListeners) listener(notices);
}

export function notify(text: string): void {
  const notice = { id: nextNotice++, text, carried: true };
  setNotices([...notices, notice]);
  // Only a navigation in the same task carries it: after that it stays on its page.
  queueMicrotask(() => {
    notice.carried = false;
  });
  window.setTimeout(() => setNotices(notices.filter((n) => n !== notice)), 4000);
}

let noticesPath = window.location.pathname;
onLocationChange(() => {
  if (window.location.pathname === noticesPath) return;
  noticesPath = window.location.pathname;
  if (notices.some((n) => !n.carried)) setNotices(notices.filter((n) => n.carried));
});

export function Notices() {
  const [list, setList] = useState<Notice[]>(notices);
  useEffect(() => {
    noticeListeners.add(setList);
    return () => noticeListeners.delete(setList);
  }, []);
  return (
    <div class="notices" role="status" aria-live="polite">
      {list.map((n) => (
        <div key={n.id} class="notice">
          {n.text}
        </div>
      ))}
    </div>
  );
}

/** A definition list of label → value pairs. */
export function Facts({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {items.map(([label, value]) => (
        <div key={label} class="fact">
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
