/**
 * Jobs across queues and states, with filters (type prefix, group, error text,
 * metadata, age), per-state columns, scheduled jobs and retries by due time, the
 * page in the URL, and actions on the selected rows.
 */
import { can, query, seg } from '../api.ts';
import { AgeField, describeAge } from '../components/age-field.tsx';
import { BulkJobActions } from '../components/bulk-actions.tsx';
import {
  Empty,
  ErrorBanner,
  LiveStatus,
  Loading,
  PageHeader,
  Pager,
  RefreshButton,
} from '../components/common.tsx';
import { DataTable, useSelection } from '../components/data-table.tsx';
import { type Count, countText, FilterActions } from '../components/filter-actions.tsx';
import { FilterBar } from '../components/filter-bar.tsx';
import { SelectField } from '../components/select-field.tsx';
import { TextField } from '../components/text-field.tsx';
import { useDraft } from '../form-draft.ts';
import { fmtNum } from '../format.ts';
import { useApi } from '../hooks.ts';
import { useQueues } from '../queues-data.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { type BrowseState, browseStates, type JobBrowsePage, type Session } from '../types.ts';
import { jobColumns } from './job-columns.tsx';

const filterKeys = [
  'queue',
  'state',
  'type',
  'group',
  'error',
  'meta',
  'enqueuedBeforeMs',
  'schedule',
  'order',
] as const;
type Filters = Record<(typeof filterKeys)[number], string>;

/** What the list holds, as a phrase ("ready jobs in emails"); `count` 1 says "job". */
function describe(f: Filters, count = 2): string {
  const noun = count === 1 ? 'job' : 'jobs';
  const parts = [
    f.state === '' ? noun : `${f.state} ${noun}`,
    f.queue === '' ? 'in all queues' : `in ${f.queue}`,
    f.type ? `of type ${f.type}…` : '',
    f.group ? `in group ${f.group}` : '',
    f.error ? `with error “${f.error}”` : '',
    f.meta ? `with ${f.meta}` : '',
    describeAge(f.enqueuedBeforeMs),
    f.schedule ? `made by schedule ${f.schedule}` : '',
  ];
  return parts.filter(Boolean).join(' ');
}

export function Jobs({ session }: { session: Session }) {
  const { params } = useLocation();
  const queues = useQueues();
  const filters = Object.fromEntries(filterKeys.map((k) => [k, params.get(k) ?? ''])) as Filters;
  const cursor = params.get('cursor') ?? '';
  // A new address (a link, the back button) starts the filters' fields from it.
  const [form, setForm] = useDraft(filters, params.toString());
  const { selected, setSelected, paused, pausedBecause } = useSelection();

  const unknownQueue = filters.queue !== '' && queues.data !== null && !queues.names.includes(filters.queue);
  const page = useApi<JobBrowsePage>(
    unknownQueue ? null : `/api/v1/jobs${query({ ...filters, cursor, limit: 50 })}`,
    { pollMs: 5000, paused },
  );
  // A filtered list's total, which the counters cannot know: counted on the server (bounded, "at least").
  const { order: _order, ...listFilter } = filters;
  // Not before the queue list says the queue exists: a count of a queue that is gone answers 404.
  const queueKnown = filters.queue === '' || (queues.data !== null && !unknownQueue);
  const counted = useApi<Count>(
    !queueKnown || page.data === null || page.data.total !== null
      ? null
      : `/api/v1/jobs-count${query(listFilter)}`,
  );
  const apply = (next: Partial<Filters>) => navigate(`/jobs${query({ ...filters, ...next })}`);
  const items = page.data?.items ?? [];
  const listState = (filters.state === '' ? null : filters.state) as BrowseState | null;
  const operator = can(session, 'operator');
  const byDue = listState === 'scheduled' || listState === 'retrying';
  const field = (key: keyof Filters) => ({
    value: form[key],
    onInput: (value: string) => setForm({ ...form, [key]: value }),
  });

  return (
    <>
      <PageHeader title="Jobs">
        <LiveStatus loaded={page} everyMs={5000} pausedBecause={pausedBecause} />
        <RefreshButton loaded={page} />
      </PageHeader>
      <FilterBar
        label="Job filters"
        active={filterKeys.filter((k) => k !== 'order' && filters[k] !== '').length}
        submitLabel="Apply"
        onSubmit={() =>
          apply({
            type: form.type.trim(),
            group: form.group.trim(),
            error: form.error.trim(),
            meta: form.meta.trim(),
          })
        }
      >
        <SelectField
          id="jobs-queue"
          label="Queue"
          value={filters.queue}
          any="all queues"
          choices={[
            ...(unknownQueue ? [{ value: filters.queue, label: `${filters.queue} (no such queue)` }] : []),
            ...queues.names,
          ]}
          onChange={(queue) => apply({ queue })}
        />
        <SelectField
          id="jobs-state"
          label="State"
          value={filters.state}
          any="any state"
          choices={browseStates}
          onChange={(state) => apply({ state })}
        />
        <TextField id="jobs-type" label="Type starts with" placeholder="any type" {...field('type')} />
        <TextField id="jobs-group" label="Group" placeholder="any group" {...field('group')} />
        <TextField id="jobs-error" label="Error contains" placeholder="any error" {...field('error')} />
        <TextField id="jobs-meta" label="Metadata" placeholder="key=value" {...field('meta')} />
        <AgeField
          id="jobs-age"
          value={filters.enqueuedBeforeMs}
          onChange={(enqueuedBeforeMs) => apply({ enqueuedBeforeMs })}
        />
        {/* Set by a schedule's page (no box to type it in): shown, with a way to remove it. */}
        {filters.schedule !== '' && (
          <div class="field filter-note">
            <span class="label">Made by schedule</span>
            <span>
              <Link href={`/schedules/${seg(filters.schedule)}`}>{filters.schedule}</Link>{' '}
              <button
                type="button"
                class="btn btn-small"
                aria-label={`Remove the filter: made by schedule ${filters.schedule}`}
                onClick={() => apply({ schedule: '' })}
              >
                ×
              </button>
            </span>
          </div>
        )}
        <SelectField
          id="jobs-order"
          label="Order"
          value={filters.order}
          choices={
            byDue
              ? [
                  { value: '', label: 'soonest due first' },
                  { value: 'newest_first', label: 'latest due first' },
                ]
              : [
                  { value: '', label: 'oldest first' },
                  { value: 'newest_first', label: 'newest first' },
                ]
          }
          onChange={(order) => apply({ order })}
        />
      </FilterBar>
      {unknownQueue ? (
        <div class="card">
          <Empty title={`There is no queue ${filters.queue}`}>
            It may have been deleted, or the link has a typo. Choose a queue above.
          </Empty>
        </div>
      ) : (
        <>
          <ErrorBanner error={page.stale ? null : (queues.error ?? page.error)} />
          {page.data === null ? (
            page.error === null ? (
              <Loading />
            ) : null
          ) : (
            <section class={`card${page.stale ? ' is-stale' : ''}`} aria-label={describe(filters)}>
              <div class="list-header">
                <p class="muted list-summary" aria-live="polite">
                  {page.data.total !== null
                    ? `${fmtNum(page.data.total)} ${describe(filters, page.data.total)}`
                    : counted.data !== null
                      ? `${countText(counted.data)}: ${describe(filters)}`
                      : `${describe(filters)[0]?.toUpperCase()}${describe(filters).slice(1)}`}
                  {page.data.orderedBy === 'due' ? ', by due time' : ''}
                  {page.data.scanned !== null &&
                    ` · searched ${fmtNum(page.data.scanned)} jobs for this page${page.data.scanLimited ? '; Next searches further' : ''}`}
                </p>
                {/* Kept while the list empties: it follows the operation it started to its end. */}
                {
                  <FilterActions
                    session={session}
                    offer={items.length > 0}
                    filter={{
                      queue: filters.queue,
                      state: filters.state,
                      type: filters.type,
                      group: filters.group,
                      error: filters.error,
                      meta: filters.meta,
                      enqueuedBeforeMs: filters.enqueuedBeforeMs,
                      schedule: filters.schedule,
                    }}
                    onDone={page.reload}
                  />
                }
              </div>
              {items.length === 0 ? (
                <Empty title={`No ${describe(filters)}`}>
                  {page.data.scanLimited
                    ? 'None among the jobs searched so far; Next searches further.'
                    : null}
                </Empty>
              ) : (
                <DataTable
                  label={describe(filters)}
                  columns={jobColumns(
                    listState,
                    filters.queue === '',
                    items.some((j) => j.group !== null),
                  )}
                  rows={items}
                  rowKey={(j) => j.id}
                  wide
                  {...(operator
                    ? {
                        selection: {
                          selected,
                          onChange: setSelected,
                          rowLabel: (id: string) => `Select job ${id}`,
                          actions: <BulkJobActions selected={items.filter((j) => selected.has(j.id))} />,
                        },
                      }
                    : {})}
                />
              )}
              <Pager prevCursor={page.data.prevCursor} nextCursor={page.data.nextCursor} />
            </section>
          )}
        </>
      )}
    </>
  );
}
