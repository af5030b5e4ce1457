/**
 * "Top errors" of a queue (issue 36, item 2): its dead letters grouped by their last
 * error — the class the worker sent and the first line of the message — the most
 * jobs first, with when they first and last failed. Each group links to its jobs and
 * can be chosen, then requeued or deleted as one act: the jobs page's bulk operation
 * with the group as its filter (counted before the confirmation, CSRF-protected,
 * role-checked and audited on the server). The actions sit below the table, not in
 * its rows: a group's row goes when its jobs do, and the operation's progress and
 * notice must outlive it.
 */
import { useState } from 'preact/hooks';
import { can, query, seg } from '../api.ts';
import { fmtNum } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { Session, TopErrors as TopErrorsAnswer } from '../types.ts';
import { Empty, Time } from './common.tsx';
import { type Column, DataTable } from './data-table.tsx';
import { FilterActions } from './filter-actions.tsx';

type Group = TopErrorsAnswer['groups'][number];

export function TopErrors({
  session,
  queue,
  onChanged,
}: {
  session: Session;
  queue: string;
  onChanged(): void;
}) {
  const [chosen, setChosen] = useState<{ errorClass: string; firstLine: string } | null>(null);
  const top = useApi<TopErrorsAnswer>(`/api/v1/queues/${seg(queue)}/top-errors${query({ limit: 10 })}`, {
    pollMs: 5000,
  });
  const columns: Column<Group>[] = [
    { header: 'Jobs', num: true, cell: (g) => fmtNum(g.jobs) },
    {
      header: 'Error',
      rowHeader: true,
      className: 'error-cell',
      title: (g) => g.firstLine,
      cell: (g) => (
        <>
          {g.errorClass === '' ? (
            <span class="badge">no class</span>
          ) : (
            <span class="badge badge-dead">{g.errorClass}</span>
          )}{' '}
          <Link href={`/jobs${query({ queue, state: 'dead', error: g.firstLine })}`}>
            {g.firstLine === '' ? '(no message)' : g.firstLine}
          </Link>
        </>
      ),
    },
    { header: 'First failed', className: 'nowrap', cell: (g) => <Time ms={g.firstFailedAtMs} past /> },
    { header: 'Last failed', className: 'nowrap', cell: (g) => <Time ms={g.lastFailedAtMs} past /> },
    ...(can(session, 'operator')
      ? [
          {
            header: 'Act on the group',
            cell: (g: Group) => {
              const on = chosen?.errorClass === g.errorClass && chosen.firstLine === g.firstLine;
              return (
                <button
                  type="button"
                  class="btn btn-small"
                  aria-pressed={on}
                  aria-label={`Choose ${g.errorClass === '' ? 'the group' : g.errorClass} “${g.firstLine}”`}
                  onClick={() => setChosen(on ? null : { errorClass: g.errorClass, firstLine: g.firstLine })}
                >
                  {on ? 'Chosen' : 'Choose…'}
                </button>
              );
            },
          },
        ]
      : []),
  ];
  const data = top.data;
  return (
    <section class={`card${top.stale ? ' is-stale' : ''}`} aria-labelledby="top-errors">
      <h2 id="top-errors" class="card-title">
        Top errors{' '}
        <span class="muted">
          {data === null
            ? ''
            : data.complete
              ? `dead letters of ${queue} by class and first line`
              : `among the newest ${fmtNum(data.scanned)} of ${fmtNum(data.deadTotal)} dead letters`}
        </span>
      </h2>
      {top.error !== null ? (
        <p class="text-danger">{top.error.message}</p>
      ) : data === null ? null : data.groups.length === 0 ? (
        <Empty title="No dead letters, no errors to group" />
      ) : (
        <>
          <DataTable
            label={`top errors of ${queue}`}
            columns={columns}
            rows={data.groups}
            rowKey={(g) => `${g.errorClass}\u0000${g.firstLine}`}
          />
          {chosen !== null && (
            <div class="top-errors-chosen" data-testid="top-errors-chosen">
              <span>
                All dead letters of {queue} with{' '}
                {chosen.errorClass === '' ? 'no class' : <strong>{chosen.errorClass}</strong>} “
                {chosen.firstLine}”:
              </span>
              <FilterActions
                session={session}
                filter={{
                  queue,
                  state: 'dead',
                  type: '',
                  group: '',
                  error: '',
                  meta: '',
                  errorGroup: chosen,
                }}
                offer
                onDone={() => {
                  setChosen(null);
                  top.reload();
                  onChanged();
                }}
              />
            </div>
          )}
          {data.groupCount > data.groups.length && (
            <p class="muted">
              The {fmtNum(data.groups.length)} largest of {fmtNum(data.groupCount)} groups.
            </p>
          )}
        </>
      )}
    </section>
  );
}
