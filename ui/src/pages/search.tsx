/** What the top bar's search found: one job opens directly; several are listed with how each matched. */
import { useEffect } from 'preact/hooks';
import { query } from '../api.ts';
import { Empty, ErrorBanner, Loading, PageHeader } from '../components/common.tsx';
import { DataTable } from '../components/data-table.tsx';
import { fmtNum, humanize } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import type { SearchResult } from '../types.ts';
import { jobColumns } from './job-columns.tsx';

export function Search() {
  const { params } = useLocation();
  const q = params.get('q') ?? '';
  const found = useApi<SearchResult>(q.trim() === '' ? null : `/api/v1/search${query({ q })}`);
  const items = found.data?.items ?? [];
  useEffect(() => {
    const only = items[0];
    if (items.length === 1 && only !== undefined && found.data?.keysWithoutJob.length === 0) {
      navigate(`/jobs/${only.id}`, { replace: true });
    }
  }, [found.data]);
  const match = { header: 'Matched by', cell: (j: SearchResult['items'][number]) => humanize(j.matchedBy) };
  return (
    <>
      <PageHeader title="Search" />
      <p class="muted">
        Results for <code>{q}</code>: a job id (any case), the start of one, the end of one as lists show it,
        or an idempotency key in any queue.
      </p>
      <ErrorBanner error={found.error} />
      {found.data === null ? (
        found.error === null && q !== '' && <Loading />
      ) : (
        <section class="card" aria-label="search results">
          {found.data.idsSearched !== null && found.data.idsSearched < found.data.storedJobs && (
            <p class="muted">
              A piece of an id was looked for among the newest {fmtNum(found.data.idsSearched)} of{' '}
              {fmtNum(found.data.storedJobs)} jobs; paste the full id, or its start, to find older ones.
            </p>
          )}
          {found.data.keysWithoutJob.map((k) => (
            <p key={k.queue} class="banner banner-info">
              Idempotency key {k.key} in {k.queue} names job <span class="mono">{k.jobId}</span>, which is no
              longer stored (acked, cancelled or swept); a new job with this key is deduplicated to it until
              the key's window ends.
            </p>
          ))}
          {items.length === 0 ? (
            found.data.keysWithoutJob.length === 0 && (
              <Empty title="No job found">
                Nothing has this id or idempotency key. <Link href="/jobs">Browse the jobs</Link> instead.
              </Empty>
            )
          ) : (
            <DataTable
              label="search results"
              columns={[...jobColumns(null, true), match]}
              rows={items}
              rowKey={(j) => j.id}
              wide
            />
          )}
        </section>
      )}
    </>
  );
}
