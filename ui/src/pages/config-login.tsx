/**
 * The effective configuration, setting by setting in plain units with the
 * source of each value (secrets arrive redacted), with links to the queues'
 * settings forms; and the login page.
 */
import { useState } from 'preact/hooks';
import { post, seg, setCsrfToken } from '../api.ts';
import { ErrorBanner, Loading, PageHeader } from '../components/common.tsx';
import { useAction, useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { ConfigEntry, QueueInfo, Session } from '../types.ts';

interface ConfigView {
  configFile: string | null;
  entries: ConfigEntry[];
}

/** `grpc.api_keys[0].role` → `grpc.api_keys`; `queues.emails.max_attempts` → `queues.emails`. */
function sectionOf(entry: ConfigEntry): string {
  if (entry.queue !== undefined) return `queues.${entry.queue.name}`;
  const key = entry.key.replace(/\[\d+\]/g, '');
  return key.slice(0, key.lastIndexOf('.'));
}

const sourceText = (source: string) =>
  source === 'file'
    ? 'config file'
    : source === 'default'
      ? 'default'
      : source === 'queue_defaults'
        ? 'file: [queue_defaults]'
        : source === 'override'
          ? 'run-time override'
          : source;

export function Config() {
  const { data, error } = useApi<ConfigView>('/api/v1/config');
  const queues = useApi<{ queues: QueueInfo[] }>('/api/v1/queues');
  const sections = new Map<string, ConfigEntry[]>();
  for (const entry of data?.entries ?? []) {
    const section = sectionOf(entry);
    sections.set(section, [...(sections.get(section) ?? []), entry]);
  }
  return (
    <>
      <PageHeader title="Configuration" />
      <p class="muted">
        The settings this server runs with{data?.configFile ? ` (from ${data.configFile})` : ''}, after the
        file, environment variables, flags and run-time overrides were applied; each with where its value
        comes from. Secrets are shown as &lt;redacted&gt;. Edit the file and run{' '}
        <code>systemctl reload sepp</code> (or send SIGHUP) to apply it; settings marked{' '}
        <span class="badge badge-restart">restart</span> keep their running value until a restart.
      </p>
      <ErrorBanner error={error ?? queues.error} />
      {queues.data !== null && queues.data.queues.length > 0 && (
        <section class="card" aria-labelledby="queue-settings-title">
          <h2 id="queue-settings-title" class="card-title">
            Queue settings
          </h2>
          <p>
            Change a queue's settings while the server runs:{' '}
            {queues.data.queues.map((q, i) => (
              <span key={q.name}>
                {i > 0 && ', '}
                <Link href={`/queues/${seg(q.name)}/settings`}>{q.name}</Link>
                {q.settingValues.some((s) => s.source === 'override') && (
                  <span class="muted">
                    {' '}
                    ({q.settingValues.filter((s) => s.source === 'override').length} overridden)
                  </span>
                )}
              </span>
            ))}
          </p>
        </section>
      )}
      {data === null
        ? error === null && <Loading />
        : [...sections].map(([section, entries]) => (
            <section class="card" key={section} aria-label={section}>
              <h2 class="card-title">
                <code>[{section}]</code>
                {entries[0]?.queue !== undefined && (
                  <>
                    {' '}
                    <Link class="btn btn-small" href={`/queues/${seg(entries[0].queue.name)}/settings`}>
                      Edit settings
                    </Link>
                  </>
                )}
              </h2>
              <div class="table-wrap">
                <table class="table table-compact">
                  <thead>
                    <tr>
                      <th scope="col">Setting</th>
                      <th scope="col">Value</th>
                      <th scope="col">Source</th>
                    </tr>
                  </thead>
                  <tbody>
                    {entries.map((entry) => (
                      <tr key={entry.key}>
                        <th scope="row">
                          <code>{entry.key}</code>
                        </th>
                        <td>
                          <code>{entry.value}</code>
                          {entry.restartRequired && <span class="badge badge-restart">restart</span>}
                        </td>
                        <td>{sourceText(entry.source)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </section>
          ))}
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
