/**
 * Loading data: useApi fetches a path, optionally again every `pollMs` while
 * the tab is visible (live pages stay at most that far behind), and keeps the
 * last good data on screen while showing a failed refresh's error.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get } from './api.ts';

export interface Loaded<T> {
  data: T | null;
  error: ApiError | null;
  loading: boolean;
  reload(): void;
}

export function useApi<T>(path: string | null, options: { pollMs?: number } = {}): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(path !== null);
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
    load();
    if (options.pollMs === undefined) return;
    const timer = window.setInterval(() => {
      if (document.visibilityState === 'visible') load();
    }, options.pollMs);
    return () => window.clearInterval(timer);
  }, [load, options.pollMs]);

  return { data, error, loading, reload: load };
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
