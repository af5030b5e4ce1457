/** The audit log: who changed what and when, filterable by user, action and target. */
import { useEffect, useState } from 'preact/hooks';
import { query } from '../api.ts';
import { Empty, ErrorBanner, Loading, PageHeader, Pager } from '../components/common.tsx';
import { fmtTime } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import type { AuditEntry, Page } from '../types.ts';

const actions = [
  'session.login',
  'session.login_failed',
  'session.logout',
  'queue.pause',
  'queue.resume',
  'queue.purge',
  'queue.settings.set',
  'queue.settings.reset',
  'config.reload',
  'job.enqueue',
  'job.cancel',
  'job.requeue',
  'job.dead_letter',
  'dead_letters.requeue',
  'dead_letters.delete',
  'dead_letters.requeue_all',
  'dead_letters.delete_all',
];

function TargetLink({ target }: { target: string }) {
  const [kind, name] = [target.slice(0, target.indexOf(':')), target.slice(target.indexOf(':') + 1)];
  if (kind === 'job')
    return (
      <Link href={`/jobs/${name}`} class="mono">
        {target}
      </Link>
    );
  if (kind === 'queue') return <Link href={`/queues/${encodeURIComponent(name)}`}>{target}</Link>;
  return <span>{target}</span>;
}

/** A setting change as the engine records it: old and new value, each with its source. */
interface SettingChange {
  from: unknown;
  to: unknown;
  fromSource: string;
  toSource: string;
}

const isSettingChanges = (value: unknown): value is Record<string, SettingChange> =>
  typeof value === 'object' &&
  value !== null &&
  Object.values(value).every((c) => typeof c === 'object' && c !== null && 'from' in c && 'to' in c);

function Details({ details }: { details: Record<string, unknown> }) {
  const entries = Object.entries(details);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <span class="details">
      {entries.map(([k, v]) =>
        k === 'changes' && isSettingChanges(v) ? (
          Object.entries(v).map(([setting, c]) => (
            <span key={setting} class="detail">
              <span class="muted">{setting}</span> {JSON.stringify(c.from)} → {JSON.stringify(c.to)}{' '}
              <span class="muted">
                ({c.fromSource} → {c.toSource})
              </span>
            </span>
          ))
        ) : (
          <span key={k} class="detail">
            <span class="muted">{k}</span> {typeof v === 'string' ? v : JSON.stringify(v)}
          </span>
        ),
      )}
    </span>
  );
}

export function Audit() {
  const { params } = useLocation();
  const actor = params.get('actor') ?? '';
  const action = params.get('action') ?? '';
  const target = params.get('target') ?? '';
  const [form, setForm] = useState({ actor, action, target });
  const [cursor, setCursor] = useState<string | null>(null);
  useEffect(() => {
    setForm({ actor, action, target });
    setCursor(null);
  }, [actor, action, target]);
  const page = useApi<Page<AuditEntry>>(
    `/api/v1/audit${query({ actor, action, target, cursor, limit: 50 })}`,
  );

  return (
    <>
      <PageHeader title="Audit log">
        <button type="button" class="btn btn-small" onClick={page.reload}>
          Refresh
        </button>
      </PageHeader>
      <form
        class="card filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(
            `/audit${query({ actor: form.actor.trim(), action: form.action, target: form.target.trim() })}`,
          );
        }}
      >
        <div class="field">
          <label for="audit-actor">User</label>
          <input
            id="audit-actor"
            value={form.actor}
            onInput={(e) => setForm({ ...form, actor: e.currentTarget.value })}
            placeholder="anyone"
          />
        </div>
        <div class="field">
          <label for="audit-action">Action</label>
          <select
            id="audit-action"
            value={form.action}
            onChange={(e) => setForm({ ...form, action: e.currentTarget.value })}
          >
            <option value="">any action</option>
            {actions.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="audit-target">Target</label>
          <input
            id="audit-target"
            value={form.target}
            onInput={(e) => setForm({ ...form, target: e.currentTarget.value })}
            placeholder="queue:emails or job:…"
          />
        </div>
        <button type="submit" class="btn btn-primary">
          Filter
        </button>
      </form>
      <ErrorBanner error={page.error} />
      {page.data === null ? (
        page.error === null && <Loading />
      ) : page.data.items.length === 0 ? (
        <div class="card">
          <Empty title="No entries">Every change made through this UI or its API is recorded here.</Empty>
        </div>
      ) : (
        <section class="card" aria-label="audit entries">
          <div class="table-wrap">
            <table class="table table-wide table-stack">
              <thead>
                <tr>
                  <th scope="col">Time</th>
                  <th scope="col">User</th>
                  <th scope="col">Action</th>
                  <th scope="col">Target</th>
                  <th scope="col">Details</th>
                </tr>
              </thead>
              <tbody>
                {page.data.items.map((entry) => (
                  <tr key={entry.id}>
                    <td data-label="Time" class="nowrap">
                      {fmtTime(entry.atMs)}
                    </td>
                    <td data-label="User">{entry.actor}</td>
                    <td data-label="Action">
                      <code>{entry.action}</code>
                    </td>
                    <td data-label="Target">
                      <TargetLink target={entry.target} />
                    </td>
                    <td data-label="Details">
                      <Details details={entry.details} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager
            nextCursor={page.data.nextCursor}
            atFirst={cursor === null}
            onNext={setCursor}
            onFirst={() => setCursor(null)}
          />
        </section>
      )}
    </>
  );
}
