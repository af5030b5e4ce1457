/**
 * Loading data: useApi fetches a path, again every `pollMs` while the tab is
 * visible (live pages stay at most that far behind) and after every change
 * made through the UI, and keeps the last good data on screen while saying
 * since when it is stale (`okAtMs`, `stale`).
 *
 * Honest liveness (issue 36): every read gives up after `readTimeoutMs`; a
 * poll never starts while the previous read is still waiting (a reload asked
 * for meanwhile runs once it ends); and the data counts as stale as soon as
 * the last good answer is older than two poll periods — whether the reads
 * fail, hang or are never answered — checked every second. A page may hold
 * its polls (`paused`, e.g. while rows are selected); a reload it asks for
 * still runs.
 */
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get, onDataChanged } from './api.ts';
import { serverNowMs } from './clock.ts';

export interface Loaded<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  /** When the data on screen was loaded (server time); null before the first answer. */
  okAtMs: number | null;
  /** The data on screen is older than two poll periods, or the last attempt to load it failed. */
  stale: boolean;
  /** Polls are held by the page (`paused`): the data is as old as okAtMs on purpose. */
  paused: boolean;
  reload(): void;
}

export interface ApiOptions {
  /** Read again every this many ms while the tab is visible. */
  pollMs?: number;
  /** Hold the polls (not the reloads a change or a Refresh asks for). */
  paused?: boolean;
}

/** How long one read may take: two poll periods, at least 5 s; 15 s for a page that does not poll. */
export function readTimeoutMs(pollMs: number | undefined): number {
  return pollMs === undefined ? 15_000 : Math.max(5_000, 2 * pollMs);
}

/** Data whose last good answer is older than this is stale: two poll periods. */
export const staleAfterMs = (pollMs: number): number => 2 * pollMs;

/** How often a polled page checks the age of its data, ms. */
const ageCheckMs = 1000;

export function useApi<T>(path: string | null, options: ApiOptions = {}): Loaded<T> {
  const { pollMs, paused = false } = options;
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(path !== null);
  const [okAtMs, setOkAtMs] = useState<number | null>(null);
  const [late, setLate] = useState(false);
  const generation = useRef(0);
  // The read under way (of this generation), and whether a reload waits for it to end.
  const pending = useRef(false);
  const again = useRef(false);
  const lastOkMs = useRef<number | null>(null);
  const pausedNow = useRef(paused);
  pausedNow.current = paused;
  const pollNow = useRef(pollMs);
  pollNow.current = pollMs;

  const load = useCallback(
    (reason: 'poll' | 'reload' = 'reload') => {
      if (path === null) return;
      if (pending.current) {
        if (reason === 'reload') again.current = true;
        return;
      }
      pending.current = true;
      const mine = generation.current;
      setLoading(true);
      get<T>(path, { timeoutMs: readTimeoutMs(pollNow.current) })
        .then((value) => {
          if (mine !== generation.current) return;
          const now = serverNowMs();
          lastOkMs.current = now;
          setData(value);
          setError(null);
          setOkAtMs(now);
          setLate(false);
        })
        .catch((thrown: unknown) => {
          if (mine !== generation.current) return;
          setError(thrown instanceof ApiError ? thrown : new ApiError(0, 'unknown', String(thrown)));
        })
        .finally(() => {
          if (mine !== generation.current) return;
          pending.current = false;
          setLoading(false);
          if (again.current) {
            again.current = false;
            load('reload');
          }
        });
    },
    [path],
  );

  // A new path starts over, in the draw that changes it (a layout effect): an effect ran a frame
  // later, and for that frame the page showed the old path's answer under the new one's heading
  // (a filtered list's phrase above the rows of the list before the filter).
  useLayoutEffect(() => {
    // What the old path had in flight is ignored.
    generation.current++;
    pending.current = false;
    again.current = false;
    lastOkMs.current = null;
    setData(null);
    setError(null);
    setOkAtMs(null);
    setLate(false);
    load();
    return onDataChanged(() => load('reload'));
  }, [load]);

  useEffect(() => {
    if (pollMs === undefined) return;
    const poll = window.setInterval(() => {
      if (document.visibilityState === 'visible' && !pausedNow.current) load('poll');
    }, pollMs);
    const age = window.setInterval(() => {
      const ok = lastOkMs.current;
      const visible = document.visibilityState === 'visible';
      setLate(visible && !pausedNow.current && ok !== null && serverNowMs() - ok > staleAfterMs(pollMs));
    }, ageCheckMs);
    return () => {
      window.clearInterval(poll);
      window.clearInterval(age);
    };
  }, [load, pollMs]);

  const reload = useCallback(() => load('reload'), [load]);
  return {
    data,
    error,
    loading,
    okAtMs,
    stale: data !== null && !paused && (error !== null || late),
    paused,
    reload,
  };
}

/** Runs an action with a busy flag and its error, for buttons. */
export function useAction(): {
  busy: boolean;
  error: ApiError | null;
  run<T>(action: () => Promise<T>): Promise<T | undefined>;
  clear(): void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async <T>(action: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await action();
    } catch (thrown) {
      setError(thrown instanceof ApiError ? thrown : new ApiError(0, 'unknown', String(thrown)));
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}
