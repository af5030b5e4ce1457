/**
 * The audit log: who changed what and when, filterable by user, action (every
 * action the server writes: src/admin/audit-actions.ts) and target.
 */
import { auditActions } from '../../../src/admin/audit-actions.ts';
import { query } from '../api.ts';
import {
  Empty,
  ErrorBanner,
  LiveStatus,
  Loading,
  PageHeader,
  Pager,
  RefreshButton,
  Time,
} from '../components/common.tsx';
import { type Column, DataTable } from '../components/data-table.tsx';
import { FilterBar } from '../components/filter-bar.tsx';
import { SelectField } from '../components/select-field.tsx';
import { TextField } from '../components/text-field.tsx';
import { useDraft } from '../form-draft.ts';
import { useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import type { AuditEntry, Page } from '../types.ts';

function TargetLink({ target }: { target: string }) {
  const [kind, name] = [target.slice(0, target.indexOf(':')), target.slice(target.indexOf(':') + 1)];
  if (kind === 'job')
    return (
      <Link href={`/jobs/${name}`} class="mono">
        {target}
      </Link>
    );
  if (kind === 'queue') return <Link href={`/queues/${encodeURIComponent(name)}`}>{target}</Link>;
  if (kind === 'schedule') return <Link href={`/schedules/${encodeURIComponent(name)}`}>{target}</Link>;
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

const columns: Column<AuditEntry>[] = [
  { header: 'Time', className: 'nowrap', cell: (e) => <Time ms={e.atMs} past /> },
  { header: 'User', rowHeader: true, cell: (e) => e.actor },
  { header: 'Action', cell: (e) => <code>{e.action}</code> },
  { header: 'Target', cell: (e) => <TargetLink target={e.target} /> },
  { header: 'Details', cell: (e) => <Details details={e.details} /> },
];

export function Audit() {
  const { params } = useLocation();
  const actor = params.get('actor') ?? '';
  const action = params.get('action') ?? '';
  const target = params.get('target') ?? '';
  const cursor = params.get('cursor') ?? '';
  const [form, setForm] = useDraft({ actor, action, target }, JSON.stringify([actor, action, target]));
  const text = (key: 'actor' | 'target') => ({
    value: form[key],
    onInput: (value: string) => setForm({ ...form, [key]: value }),
  });
  const page = useApi<Page<AuditEntry>>(
    `/api/v1/audit${query({ actor, action, target, cursor, limit: 50 })}`,
    {
      pollMs: 10_000,
    },
  );

  return (
    <>
      <PageHeader title="Audit log">
        <LiveStatus loaded={page} everyMs={10_000} />
        <RefreshButton loaded={page} />
      </PageHeader>
      <FilterBar
        label="Audit filters"
        active={[actor, action, target].filter((v) => v !== '').length}
        submitLabel="Filter"
        onSubmit={() =>
          navigate(
            `/audit${query({ actor: form.actor.trim(), action: form.action, target: form.target.trim() })}`,
          )
        }
      >
        <TextField id="audit-actor" label="User" placeholder="anyone" {...text('actor')} />
        <SelectField
          id="audit-action"
          label="Action"
          value={form.action}
          any="any action"
          choices={auditActions}
          onChange={(value) => setForm({ ...form, action: value })}
        />
        <TextField id="audit-target" label="Target" placeholder="queue:emails or job:…" {...text('target')} />
      </FilterBar>
      <ErrorBanner error={page.stale ? null : page.error} />
      {page.data === null ? (
        page.error === null && <Loading />
      ) : page.data.items.length === 0 ? (
        <div class="card">
          <Empty title="No entries">Every change made through this UI or its API is recorded here.</Empty>
        </div>
      ) : (
        <section class={`card${page.stale ? ' is-stale' : ''}`} aria-label="audit entries">
          <DataTable
            label="audit entries"
            columns={columns}
            rows={page.data.items}
            rowKey={(e) => String(e.id)}
            wide
          />
          <Pager nextCursor={page.data.nextCursor} />
        </section>
      )}
    </>
  );
}
