/**
 * Loading data: useApi fetches a path, again every `pollMs` while the tab is
 * visible (live pages stay at most that far behind) and after every change
 * made through the UI, and keeps the last good data on screen while saying
 * since when it is stale (`okAtMs`, `error`).
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get, onDataChanged } from './api.ts';
import { serverNowMs } from './clock.ts';

export interface Loaded<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  /** When the data on screen was loaded (server time); null before the first answer. */
  okAtMs: number | null;
  /** The data on screen is older than the last attempt to load it (that attempt failed). */
  stale: boolean;
  reload(): void;
}

export function useApi<T>(path: string | null, options: { pollMs?: number } = {}): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(path !== null);
  const [okAtMs, setOkAtMs] = useState<number | null>(null);
  const generation = useRef(0);

  const load = useCallback(() => {
    if (path === null) return;
    const mine = ++generation.current;
    setLoading(true);
    get<T>(path)
      .then((value) => {
        if (mine !== generation.current) return;
        setData(value);
        setError(null);
        setOkAtMs(serverNowMs());
      })
      .catch((thrown: unknown) => {
        if (mine !== generation.current) return;
        setError(thrown instanceof ApiError ? thrown : new ApiError(0, 'unknown', String(thrown)));
      })
      .finally(() => {
        if (mine === generation.current) setLoading(false);
      });
  }, [path]);

  useEffect(() => {
    setData(null);
    setError(null);
    setOkAtMs(null);
    load();
    const unsubscribe = onDataChanged(load);
    if (options.pollMs === undefined) return unsubscribe;
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') load();
    }, options.pollMs);
    return () => {
      unsubscribe();
      window.clearInterval(timer);
    };
  }, [load, options.pollMs]);

  return { data, error, loading, okAtMs, stale: error !== null && data !== null, reload: load };
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
