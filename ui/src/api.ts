/**
 * The admin API from the browser: same-origin fetch with the session cookie,
 * the CSRF token on every mutation, and errors as ApiError carrying the
 * server's message (shown to the user as it is: the server writes them for
 * people).
 */
import { noteServerDate } from './clock.ts';
import type { Role, Session } from './types.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | null = null;
let onUnauthenticated: () => void = () => {};

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

const changeListeners = new Set<() => void>();

/**
 * Every successful change (a requeue, a pause, a login) tells the pages to
 * load again, so counts anywhere on screen — the queue selector's dead-letter
 * counts, the totals — never stay as they were before the action.
 */
export function onDataChanged(listener: () => void): () => void {
  changeListeners.add(listener);
  return () => changeListeners.delete(listener);
}

/** Called when the session has ended (401): the app goes back to the login page. */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

export interface CallOptions {
  /** False: a change that does not tell the pages to load again (see api()). */
  announce?: boolean;
  /**
   * Give up after this long (status 0, code `timeout`): a server that accepts
   * the connection and never answers (stopped, hung, black-holed) must not
   * keep a page waiting for ever. Default: no limit (a bulk change may take long).
   */
  timeoutMs?: number;
}

/**
 * One call to the admin API. A change tells every loaded page to load again,
 * unless `announce` is false: a page that deletes what it shows leaves instead
 * (it would only ask for what is gone), and the page it goes to loads anyway.
 */
export async function api<T>(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== null) headers['x-csrf-token'] = csrfToken;
  const { timeoutMs } = options;
  const controller = new AbortController();
  const timer = timeoutMs === undefined ? undefined : window.setTimeout(() => controller.abort(), timeoutMs);
  try {
    return await exchange<T>(method, path, body, headers, controller.signal, options);
  } catch (thrown) {
    if (!controller.signal.aborted) throw thrown;
    throw new ApiError(
      0,
      'timeout',
      `the sepp server did not answer within ${(timeoutMs ?? 0) / 1000} s; it may be stopped or overloaded`,
    );
  } finally {
    window.clearTimeout(timer);
  }
}

async function exchange<T>(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body: unknown,
  headers: Record<string, string>,
  signal: AbortSignal,
  options: CallOptions,
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      signal,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (thrown) {
    if (signal.aborted) throw thrown;
    throw new ApiError(0, 'unavailable', 'cannot reach the sepp server; is it running?');
  }
  noteServerDate(response.headers.get('date'));
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    // Not JSON (a proxy's error page, say): reported below by status.
  }
  if (!response.ok) {
    const error = (parsed as { error?: { code?: string; message?: string } } | null)?.error;
    if (response.status === 401 && !path.endsWith('/session')) onUnauthenticated();
    throw new ApiError(
      response.status,
      error?.code ?? 'unknown',
      error?.message ?? `the server answered ${response.status} ${response.statusText}`,
    );
  }
  if (method !== 'GET' && options.announce !== false) for (const listener of changeListeners) listener();
  return parsed as T;
}

export const get = <T>(path: string, options: CallOptions = {}): Promise<T> =>
  api<T>('GET', path, undefined, options);
export const post = <T>(path: string, body: unknown = {}): Promise<T> => api<T>('POST', path, body);

export async function loadSession(): Promise<Session> {
  const session = await get<Session>('/api/v1/session');
  setCsrfToken(session.csrfToken);
  return session;
}

const rank: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/** Whether the session's role reaches `needed` (the server checks again; this only hides buttons). */
export function can(session: Session | null, needed: Role): boolean {
  return session?.role !== null && session?.role !== undefined && rank[session.role] >= rank[needed];
}

/** Encodes one path segment. */
export const seg = (value: string): string => encodeURIComponent(value);

export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}
