/** The effective configuration (secrets arrive redacted) and the login page. */
import { useState } from 'preact/hooks';
import { post, setCsrfToken } from '../api.ts';
import { ErrorBanner, Loading, PageHeader } from '../components/common.tsx';
import { fmtBytes, fmtDuration, fmtNum } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import type { Session } from '../types.ts';

/** A configured value in plain units: durations and sizes by their key's unit suffix. */
function plain(key: string, value: unknown): string {
  if (typeof value === 'number') {
    if (/Ms$/.test(key)) return value === 0 ? '0' : fmtDuration(value);
    if (/Bytes$/.test(key)) return fmtBytes(value);
    return fmtNum(value);
  }
  if (value === null) return '—';
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null))
    return value.join(', ') || '—';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function ConfigRows({ prefix, value }: { prefix: string; value: unknown }) {
  if (
    typeof value === 'object' &&
    value !== null &&
    !(Array.isArray(value) && value.every((v) => typeof v !== 'object'))
  ) {
    return (
      <>
        {Object.entries(value).map(([k, v]) => (
          <ConfigRows key={k} prefix={prefix === '' ? k : `${prefix}.${k}`} value={v} />
        ))}
      </>
    );
  }
  const key = prefix.split('.').at(-1) ?? prefix;
  return (
    <tr>
      <th scope="row" class="mono">
        {prefix}
      </th>
      <td class={value === redacted ? 'redacted' : 'mono'}>
        {value === redacted ? redacted : plain(key, value)}
      </td>
    </tr>
  );
}

/** How secrets arrive from the server and are shown (docs/admin.md says the same). */
const redacted = '<redacted>';

export function Config() {
  const { data, error } = useApi<{ config: unknown }>('/api/v1/config');
  return (
    <>
      <PageHeader title="Configuration" />
      <p class="muted">
        The settings this server runs with, after the file, environment and flags were merged; durations and
        sizes in plain units. Secrets are shown as <code>{redacted}</code>.
      </p>
      <ErrorBanner error={error} />
      {data === null ? (
        error === null && <Loading />
      ) : (
        <section class="card">
          <div class="table-wrap">
            <table class="table table-compact config-table" aria-label="effective configuration">
              <tbody>
                <ConfigRows prefix="" value={data.config} />
              </tbody>
            </table>
          </div>
        </section>
      )}
    </>
  );
}

export function Login({ onLogin }: { onLogin: (session: Session) => void }) {
  const [user, setUser] = useState('');
  const [password, setPassword] = useState('');
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    const session = await action.run(() => post<Session>('/api/v1/session', { user, password }));
    if (session !== undefined) {
      setCsrfToken(session.csrfToken);
      setPassword('');
      onLogin(session);
    }
  };
  return (
    <main class="login" id="main">
      <form class="card login-card" onSubmit={submit}>
        <div class="brand login-brand">
          <span class="brand-mark" aria-hidden="true">
            s
          </span>
          sepp
        </div>
        <h1>Log in</h1>
        <div class="field">
          <label for="login-user">User name</label>
          <input
            id="login-user"
            autocomplete="username"
            required
            value={user}
            onInput={(e) => setUser(e.currentTarget.value)}
          />
        </div>
        <div class="field">
          <label for="login-password">Password</label>
          <input
            id="login-password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </div>
        <ErrorBanner error={action.error} />
        <button type="submit" class="btn btn-primary btn-block" disabled={action.busy}>
          {action.busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
