/** Small building blocks every page uses: errors, empty states, badges, paging, notices. */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api.ts';
import { humanize } from '../format.ts';
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

/** Cursor paging: forward with the server's cursor, and back to the first page. */
export function Pager({
  nextCursor,
  onNext,
  onFirst,
  atFirst,
}: {
  nextCursor: string | null;
  onNext: (cursor: string) => void;
  onFirst: () => void;
  atFirst: boolean;
}) {
  if (atFirst && nextCursor === null) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="btn" disabled={atFirst} onClick={onFirst}>
        ← First page
      </button>
      <button
        type="button"
        class="btn"
        disabled={nextCursor === null}
        onClick={() => nextCursor && onNext(nextCursor)}
      >
        Next page →
      </button>
    </nav>
  );
}

// Notices: short confirmations of what an action did, announced to screen readers.
type Notice = { id: number; text: string };
let notices: Notice[] = [];
let nextNotice = 0;
const noticeListeners = new Set<(list: Notice[]) => void>();

export function notify(text: string): void {
  const notice = { id: nextNotice++, text };
  notices = [...notices, notice];
  for (const listener of noticeListeners) listener(notices);
  window.setTimeout(() => {
    notices = notices.filter((n) => n !== notice);
    for (const listener of noticeListeners) listener(notices);
  }, 5000);
}

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
