/** The effective configuration (secrets arrive redacted) and the login page. */
import { useState } from 'preact/hooks';
import { post, setCsrfToken } from '../api.ts';
import { ErrorBanner, Loading, PageHeader } from '../components/common.tsx';
import { useAction, useApi } from '../hooks.ts';
import type { Session } from '../types.ts';

export function Config() {
  const { data, error } = useApi<{ config: unknown }>('/api/v1/config');
  return (
    <>
      <PageHeader title="Configuration" />
      <p class="muted">
        The settings this server runs with, after the file, environment and flags were merged. Secrets are
        shown as [redacted].
      </p>
      <ErrorBanner error={error} />
      {data === null ? (
        error === null && <Loading />
      ) : (
        <section class="card">
          <pre class="payload payload-full">{JSON.stringify(data.config, null, 2)}</pre>
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
