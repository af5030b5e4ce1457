/** Jobs by queue and state, page by page, with a type filter; find a job by id or idempotency key. */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, query, seg } from '../api.ts';
import { BulkActions } from '../components/bulk-actions.tsx';
import { Empty, ErrorBanner, Loading, PageHeader, Pager, StateBadge } from '../components/common.tsx';
import { fmtBytes, fmtTime, shortId } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import {
  type JobState,
  type JobSummary,
  jobStates,
  type Page,
  type QueueInfo,
  type Session,
} from '../types.ts';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function FindJob({ queue }: { queue: string }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const find = async (event: Event) => {
    event.preventDefault();
    const value = text.trim();
    setError(null);
    if (value === '') return;
    if (uuid.test(value.toLowerCase())) {
      navigate(`/jobs/${value.toLowerCase()}`);
      return;
    }
    if (queue === '') {
      setError(new ApiError(400, 'invalid_argument', 'choose a queue to find a job by idempotency key'));
      return;
    }
    try {
      const found = await get<{ jobId: string; stored: boolean }>(
        `/api/v1/queues/${seg(queue)}/idempotency-keys/${seg(value)}`,
      );
      if (found.stored) navigate(`/jobs/${found.jobId}`);
      else
        setError(
          new ApiError(
            404,
            'not_found',
            `key ${value} names job ${found.jobId}, which is no longer stored (acked or cancelled)`,
          ),
        );
    } catch (thrown) {
      setError(thrown instanceof ApiError ? thrown : null);
    }
  };
  return (
    <search>
      <form class="find" onSubmit={find}>
        <label for="find-job">Find by job id or idempotency key</label>
        <div class="inline">
          <input
            id="find-job"
            placeholder="0190… or a key in the chosen queue"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            autocomplete="off"
            spellcheck={false}
          />
          <button type="submit" class="btn">
            Find
          </button>
        </div>
        <ErrorBanner error={error} onDismiss={() => setError(null)} />
      </form>
    </search>
  );
}

export function Jobs({ session }: { session: Session }) {
  const { params } = useLocation();
  const queues = useApi<{ queues: QueueInfo[] }>('/api/v1/queues');
  const names = queues.data?.queues.map((q) => q.name) ?? [];
  const queue = params.get('queue') ?? names[0] ?? '';
  const state = (params.get('state') ?? 'ready') as JobState;
  const type = params.get('type') ?? '';
  const order = params.get('order') ?? 'oldest_first';
  const [cursor, setCursor] = useState<string | null>(null);
  const [typeText, setTypeText] = useState(type);
  useEffect(() => setCursor(null), [queue, state, type, order]);
  useEffect(() => setTypeText(type), [type]);

  const path =
    queue === ''
      ? null
      : `/api/v1/queues/${seg(queue)}/jobs${query({ state, type, order: order === 'oldest_first' ? undefined : order, cursor, limit: 50 })}`;
  const page = useApi<Page<JobSummary>>(path);
  const set = (changes: Record<string, string>) =>
    navigate(
      `/jobs${query({ queue, state, type, order: order === 'oldest_first' ? '' : order, ...changes })}`,
    );

  return (
    <>
      <PageHeader title="Jobs" />
      <div class="card">
        <form
          class="filters"
          onSubmit={(e) => {
            e.preventDefault();
            set({ type: typeText.trim() });
          }}
        >
          <div class="field">
            <label for="jobs-queue">Queue</label>
            <select id="jobs-queue" value={queue} onChange={(e) => set({ queue: e.currentTarget.value })}>
              {names.length === 0 && <option value="">no queues</option>}
              {names.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="jobs-state">State</label>
            <select id="jobs-state" value={state} onChange={(e) => set({ state: e.currentTarget.value })}>
              {jobStates.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="jobs-type">Job type</label>
            <input
              id="jobs-type"
              placeholder="any"
              value={typeText}
              onInput={(e) => setTypeText(e.currentTarget.value)}
            />
          </div>
          <div class="field">
            <label for="jobs-order">Order</label>
            <select id="jobs-order" value={order} onChange={(e) => set({ order: e.currentTarget.value })}>
              <option value="oldest_first">oldest first</option>
              <option value="newest_first">newest first</option>
            </select>
          </div>
          <button type="submit" class="btn btn-primary">
            Apply
          </button>
        </form>
        <FindJob queue={queue} />
      </div>
      <ErrorBanner error={queues.error ?? page.error} />
      {queue === '' ? (
        queues.data && (
          <div class="card">
            <Empty title="No queues yet">Jobs appear here once something is enqueued.</Empty>
          </div>
        )
      ) : page.data === null ? (
        page.error === null && <Loading />
      ) : (
        <section class="card" aria-label={`${state} jobs of ${queue}`}>
          <div class="list-header">
            <p class="muted" aria-live="polite">
              {page.data.total !== null && page.data.total !== undefined
                ? `${page.data.total.toLocaleString('en-US')} ${state} jobs in ${queue}`
                : `${state} jobs of type ${type} in ${queue}`}
            </p>
            {page.data.items.length > 0 && (
              <BulkActions session={session} filter={{ queue, state, type }} onDone={page.reload} />
            )}
          </div>
          {page.data.items.length === 0 ? (
            <Empty title={`No ${state} jobs${type ? ` of type ${type}` : ''} in ${queue}`} />
          ) : (
            <div class="table-wrap">
              <table class="table table-wide table-stack">
                <thead>
                  <tr>
                    <th scope="col">Job</th>
                    <th scope="col">Type</th>
                    <th scope="col">State</th>
                    <th scope="col" class="num">
                      Priority
                    </th>
                    <th scope="col" class="num">
                      Attempt
                    </th>
                    <th scope="col">Enqueued</th>
                    <th scope="col">Due</th>
                    <th scope="col" class="num">
                      Size
                    </th>
                    <th scope="col">Last error</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.items.map((job) => (
                    <tr key={job.id}>
                      <th data-label="Job" scope="row">
                        <Link href={`/jobs/${job.id}`} class="mono" title={job.id}>
                          {shortId(job.id)}
                        </Link>
                      </th>
                      <td data-label="Type">{job.type}</td>
                      <td data-label="State">
                        <StateBadge state={job.state} />
                      </td>
                      <td data-label="Priority" class="hide-narrow num">
                        {job.priority}
                      </td>
                      <td data-label="Attempt" class="num">
                        {job.attempt}/{job.maxAttempts}
                      </td>
                      <td data-label="Enqueued" class="nowrap">
                        {fmtTime(job.enqueuedAtMs)}
                      </td>
                      <td data-label="Due" class="hide-narrow nowrap">
                        {fmtTime(job.runAtMs)}
                      </td>
                      <td data-label="Size" class="hide-narrow num">
                        {fmtBytes(job.payloadBytes)}
                      </td>
                      <td data-label="Last error" class="error-cell" title={job.lastError ?? ''}>
                        {job.lastError ?? null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
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
