/**
 * The admin UI: finds out who is logged in, shows the login page when nobody
 * is (and login is on), and otherwise routes to the pages. A 401 from any call
 * (the session expired) returns to the login page.
 */
import 'uplot/dist/uPlot.min.css';
import './styles/index.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, can, loadSession, setCsrfToken, setUnauthenticatedHandler } from './api.ts';
import { ErrorBanner, Loading, Notices } from './components/common.tsx';
import { Layout } from './components/layout.tsx';
import { Audit } from './pages/audit.tsx';
import { Batches } from './pages/batches.tsx';
import { Config, Login } from './pages/config-login.tsx';
import { Dashboard } from './pages/dashboard.tsx';
import { DeadLetters } from './pages/dead-letters.tsx';
import { Enqueue } from './pages/enqueue.tsx';
import { JobDetail } from './pages/job-detail.tsx';
import { Jobs } from './pages/jobs.tsx';
import { QueueDetail } from './pages/queue-detail.tsx';
import { QueueSettings } from './pages/queue-settings.tsx';
import { Queues } from './pages/queues.tsx';
import { ScheduleDetail, Schedules } from './pages/schedules.tsx';
import { Search } from './pages/search.tsx';
import { Workers } from './pages/workers.tsx';
import { BatchPageView, FlowPage } from './pages/workflows.tsx';
import { match, navigate, useLocation } from './router.tsx';
import type { Session } from './types.ts';

const titles: [RegExp, string][] = [
  [/^\/$/, 'Dashboard'],
  [/^\/queues\/[^/]+\/settings$/, 'Queue settings'],
  [/^\/queues\/[^/]+$/, 'Queue'],
  [/^\/queues$/, 'Queues'],
  [/^\/jobs\/[^/]+$/, 'Job'],
  [/^\/jobs$/, 'Jobs'],
  [/^\/flows\/[^/]+$/, 'Flow'],
  [/^\/batches\/[^/]+$/, 'Batch'],
  [/^\/batches$/, 'Batches'],
  [/^\/search$/, 'Search'],
  [/^\/workers$/, 'Workers'],
  [/^\/dead-letters$/, 'Dead letters'],
  [/^\/schedules\/[^/]+$/, 'Schedule'],
  [/^\/schedules$/, 'Schedules'],
  [/^\/enqueue$/, 'Enqueue'],
  [/^\/audit$/, 'Audit log'],
  [/^\/config$/, 'Configuration'],
];

function Page({ session }: { session: Session }) {
  const { path } = useLocation();
  useEffect(() => {
    const title = titles.find(([re]) => re.test(path))?.[1] ?? 'Not found';
    document.title = `${title} · sepp`;
  }, [path]);
  if (path === '/') return <Dashboard session={session} />;
  if (path === '/queues') return <Queues session={session} />;
  const settings = match('/queues/:name/settings', path);
  if (settings) return <QueueSettings name={settings.name ?? ''} session={session} />;
  const queue = match('/queues/:name', path);
  if (queue) return <QueueDetail name={queue.name ?? ''} session={session} />;
  if (path === '/jobs') return <Jobs session={session} />;
  if (path === '/search') return <Search />;
  if (path === '/workers') return <Workers session={session} />;
  const job = match('/jobs/:id', path);
  if (job) return <JobDetail id={job.id ?? ''} session={session} />;
  const flow = match('/flows/:id', path);
  if (flow) return <FlowPage id={flow.id ?? ''} session={session} />;
  if (path === '/batches') return <Batches />;
  const batch = match('/batches/:id', path);
  if (batch) return <BatchPageView id={batch.id ?? ''} session={session} />;
  if (path === '/dead-letters') return <DeadLetters session={session} />;
  if (path === '/schedules') return <Schedules session={session} />;
  const schedule = match('/schedules/:name', path);
  if (schedule) return <ScheduleDetail name={schedule.name ?? ''} session={session} />;
  if (path === '/enqueue' && can(session, 'operator')) return <Enqueue />;
  if (path === '/audit' && can(session, 'operator')) return <Audit />;
  if (path === '/config' && can(session, 'admin')) return <Config />;
  return (
    <div class="card">
      <h1>Not found</h1>
      <p>There is no page at {path}, or your role cannot see it.</p>
    </div>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const { path } = useLocation();

  const refresh = () =>
    loadSession()
      .then((s) => {
        setSession(s);
        setError(null);
      })
      .catch((thrown: unknown) =>
        setError(thrown instanceof ApiError ? thrown : new ApiError(0, 'unknown', String(thrown))),
      );

  useEffect(() => {
    setUnauthenticatedHandler(() => {
      setCsrfToken(null);
      setSession((s) =>
        s === null ? s : { ...s, authenticated: false, user: null, role: null, csrfToken: null },
      );
    });
    void refresh();
  }, []);

  if (session === null) {
    return (
      <main class="login" id="main">
        {error ? <ErrorBanner error={error} /> : <Loading />}
      </main>
    );
  }
  if (!session.authenticated) {
    document.title = 'Log in · sepp';
    return (
      <Login
        onLogin={(s) => {
          setSession(s);
          if (path === '/login') navigate('/', { replace: true });
        }}
      />
    );
  }
  const logout = async () => {
    try {
      await api('DELETE', '/api/v1/session');
    } finally {
      setCsrfToken(null);
      setSession({ ...session, authenticated: false, user: null, role: null, csrfToken: null });
      // The page logged out of is not where the next user starts.
      navigate('/login', { replace: true });
    }
  };
  return (
    <Layout session={session} onLogout={logout}>
      <Page session={session} />
      <Notices />
    </Layout>
  );
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
