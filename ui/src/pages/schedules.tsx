/**
 * Schedules: the periodic jobs the server enqueues itself. The list shows each
 * one's timing, job, status, next run and how its last run went; a schedule's
 * page adds its definition, payload and next run times. Operators pause,
 * resume and trigger (each audited by the server); definitions change only in
 * the config or over the API.
 */
import { can, post, seg } from '../api.ts';
import { useNow } from '../clock.ts';
import {
  Empty,
  ErrorBanner,
  Facts,
  LiveStatus,
  Loading,
  notify,
  PageHeader,
  RefreshButton,
} from '../components/common.tsx';
import { type Column, DataTable } from '../components/data-table.tsx';
import { ScheduleRuns } from '../components/schedule-runs.tsx';
import { fmtBytes, fmtDuration, fmtRelative, fmtTime, humanize, shortId } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { ScheduleView as ScheduleInfo, Session } from '../types.ts';

const timing = (s: ScheduleInfo): string =>
  s.cron !== null ? s.cron : `every ${fmtDuration(s.intervalMs ?? 0)}`;

function StatusBadge({ schedule }: { schedule: ScheduleInfo }) {
  if (schedule.paused) return <span class="badge badge-paused">paused</span>;
  if (schedule.nextTickMs === null) return <span class="badge">ended</span>;
  return <span class="badge badge-active">active</span>;
}

const outcomeClass: Record<string, string> = {
  enqueued: 'badge-active',
  deduplicated: 'badge-active',
  triggered: 'badge-ready',
  skipped_overlap: 'badge-paused',
  skipped_misfire: 'badge-paused',
  rejected: 'badge-dead',
};

function LastRun({ schedule, nowMs }: { schedule: ScheduleInfo; nowMs: number }) {
  if (schedule.lastRunAtMs === null || schedule.lastOutcome === null) return <span class="muted">never</span>;
  return (
    <span title={schedule.lastDetail ?? undefined}>
      <span class={`badge ${outcomeClass[schedule.lastOutcome] ?? ''}`}>
        {humanize(schedule.lastOutcome)}
      </span>{' '}
      <span class="nowrap">{fmtRelative(schedule.lastRunAtMs, nowMs, { past: true })}</span>
    </span>
  );
}

function NextRun({ schedule, nowMs }: { schedule: ScheduleInfo; nowMs: number }) {
  const next = schedule.nextRunsMs[0];
  if (next === undefined) return <span class="muted">none</span>;
  return (
    <span class="nowrap" title={fmtTime(next)}>
      {fmtRelative(next, nowMs)}
    </span>
  );
}

/** Pause or resume, and trigger: for operators. */
function ScheduleActions({
  schedule,
  session,
  onDone,
}: {
  schedule: ScheduleInfo;
  session: Session;
  onDone: () => void;
}) {
  const action = useAction();
  if (!can(session, 'operator')) return null;
  const base = `/api/v1/schedules/${seg(schedule.name)}`;
  const verb = schedule.paused ? 'resume' : 'pause';
  return (
    <>
      <button
        type="button"
        class={schedule.paused ? 'btn btn-primary btn-small' : 'btn btn-small'}
        disabled={action.busy}
        aria-label={`${schedule.paused ? 'Resume' : 'Pause'} schedule ${schedule.name}`}
        onClick={async () => {
          if ((await action.run(() => post(`${base}/${verb}`))) !== undefined) {
            notify(`Schedule ${schedule.name} ${schedule.paused ? 'resumed' : 'paused'}.`);
            onDone();
          }
        }}
      >
        {schedule.paused ? 'Resume' : 'Pause'}
      </button>
      <button
        type="button"
        class="btn btn-small"
        disabled={action.busy}
        aria-label={`Trigger schedule ${schedule.name} now`}
        onClick={async () => {
          const done = await action.run(() => post<{ jobId: string }>(`${base}/trigger`));
          if (done !== undefined) {
            notify(`Enqueued job ${shortId(done.jobId)} from ${schedule.name}.`);
            onDone();
          }
        }}
      >
        Trigger now
      </button>
      <ErrorBanner error={action.error} onDismiss={action.clear} />
    </>
  );
}

const scheduleColumns = (nowMs: number): Column<ScheduleInfo>[] => [
  {
    header: 'Schedule',
    rowHeader: true,
    cell: (s) => <Link href={`/schedules/${seg(s.name)}`}>{s.name}</Link>,
  },
  {
    header: 'When',
    cell: (s) => (
      <span>
        <code>{timing(s)}</code>
        {s.cron !== null && s.timezone !== 'UTC' && <span class="muted"> {s.timezone}</span>}
      </span>
    ),
  },
  { header: 'Job', cell: (s) => `${s.template.queue} / ${s.template.type}` },
  { header: 'Status', cell: (s) => <StatusBadge schedule={s} /> },
  { header: 'Next run', cell: (s) => <NextRun schedule={s} nowMs={nowMs} /> },
  { header: 'Last run', cell: (s) => <LastRun schedule={s} nowMs={nowMs} /> },
];

export function Schedules({ session }: { session: Session }) {
  const list = useApi<{ schedules: ScheduleInfo[] }>('/api/v1/schedules', { pollMs: 2000 });
  const { data, error, reload } = list;
  const nowMs = useNow(1000);
  return (
    <>
      <PageHeader title="Schedules">
        <LiveStatus loaded={list} everyMs={2000} />
        <RefreshButton loaded={list} />
      </PageHeader>
      <ErrorBanner error={list.stale ? null : error} />
      {data === null ? (
        error === null && <Loading />
      ) : data.schedules.length === 0 ? (
        <div class="card">
          <Empty title="No schedules">
            Declare schedules as [[schedules]] in sepp.toml, or create them with an SDK (docs/schedules.md).
          </Empty>
        </div>
      ) : (
        <div class={`card${list.stale ? ' is-stale' : ''}`}>
          <DataTable
            label="Schedules"
            wide
            columns={scheduleColumns(nowMs)}
            rows={data.schedules}
            rowKey={(s) => s.name}
            rowActions={(s) => <ScheduleActions schedule={s} session={session} onDone={reload} />}
          />
        </div>
      )}
    </>
  );
}

export function ScheduleDetail({ name, session }: { name: string; session: Session }) {
  const { data: s, error, reload } = useApi<ScheduleInfo>(`/api/v1/schedules/${seg(name)}`, { pollMs: 2000 });
  const nowMs = useNow(1000);
  return (
    <>
      <PageHeader title={`Schedule ${name}`}>
        {s && <ScheduleActions schedule={s} session={session} onDone={reload} />}
      </PageHeader>
      <p class="breadcrumbs">
        <Link href="/schedules">Schedules</Link> / {name}
      </p>
      <ErrorBanner error={error} />
      {s === null ? (
        error === null && <Loading />
      ) : (
        <>
          <section class="card" aria-labelledby="schedule-facts">
            <h2 id="schedule-facts" class="card-title">
              Definition <StatusBadge schedule={s} />
            </h2>
            <Facts
              items={[
                ['When', <code key="when">{timing(s)}</code>],
                ['Timezone', s.timezone],
                ['Job', `${s.template.queue} / ${s.template.type}, priority ${s.template.priority}`],
                [
                  'Misfire',
                  s.misfire === 'catch_up' ? `catch up (up to ${s.catchUpMax})` : humanize(s.misfire),
                ],
                ['Overlap', s.overlap],
                ['Jitter', s.jitterMs === 0 ? 'none' : fmtDuration(s.jitterMs)],
                ['Starts', fmtTime(s.startAtMs)],
                ['Ends', fmtTime(s.endAtMs)],
                ['Source', s.source === 'config' ? 'config file (change it there)' : 'API'],
                ['Ticks', `${s.ticksEnqueued} enqueued, ${s.ticksSkipped} skipped`],
                ['Last run', <LastRun key="last" schedule={s} nowMs={nowMs} />],
                ['Last detail', s.lastDetail ?? '—'],
                [
                  'Last job',
                  s.lastJobId === null ? (
                    '—'
                  ) : (
                    <Link key="job" href={`/jobs/${s.lastJobId}`} class="mono" title={s.lastJobId}>
                      {shortId(s.lastJobId)}
                    </Link>
                  ),
                ],
              ]}
            />
          </section>
          <div class="two-col">
            <section class="card" aria-labelledby="schedule-next">
              <h2 id="schedule-next" class="card-title">
                Next runs
              </h2>
              {s.nextRunsMs.length === 0 ? (
                <Empty title="No run to come" />
              ) : (
                <ol class="plain-list">
                  {s.nextRunsMs.map((ms) => (
                    <li key={ms}>
                      {fmtTime(ms)} <span class="muted">({fmtRelative(ms, nowMs)})</span>
                    </li>
                  ))}
                </ol>
              )}
            </section>
            <section class="card" aria-labelledby="schedule-payload">
              <h2 id="schedule-payload" class="card-title">
                Payload{' '}
                <span class="muted">
                  {s.template.contentType} · {fmtBytes(s.template.payloadBytes)}
                </span>
              </h2>
              {s.template.payload === null || s.template.payload.bytes === 0 ? (
                <Empty title="Empty payload" />
              ) : (
                <pre class="payload">{s.template.payload.text}</pre>
              )}
            </section>
          </div>
          <ScheduleRuns name={s.name} />
        </>
      )}
    </>
  );
}
