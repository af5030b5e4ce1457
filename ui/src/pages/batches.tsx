/**
 * The batches, newest first (GET /api/v1/batches): filtered by state and by the API key
 * that created them, so an operator finds the batches a key left open — a key holds at
 * most limits.max_open_batches_per_key batches not ended — and opens one to cancel it.
 * Ended batches are listed until the server sweeps them (limits.batch_retention_ms).
 */
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
import { shortId } from '../format.ts';
import { useApi } from '../hooks.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import type { BatchList } from '../types.ts';

type Batch = BatchList['batches'][number];

const columns: Column<Batch>[] = [
  {
    header: 'Batch',
    rowHeader: true,
    className: 'mono',
    cell: (b) => <Link href={`/batches/${b.id}`}>{shortId(b.id)}</Link>,
    title: (b) => b.id,
  },
  { header: 'State', cell: (b) => <span class={`badge badge-batch-${b.state}`}>{b.state}</span> },
  { header: 'Owner', cell: (b) => b.owner || <span class="muted">none</span> },
  { header: 'Created', className: 'nowrap', cell: (b) => <Time ms={b.createdAtMs} past /> },
  { header: 'Members', num: true, cell: (b) => b.members },
  { header: 'Pending', num: true, cell: (b) => b.pending },
  { header: 'Ended', className: 'nowrap', hideNarrow: true, cell: (b) => <Time ms={b.endedAtMs} past /> },
];

export function Batches() {
  const { params } = useLocation();
  const state = params.get('state') ?? '';
  const owner = params.get('owner') ?? '';
  const cursor = params.get('cursor') ?? '';
  const [form, setForm] = useDraft({ state, owner }, JSON.stringify([state, owner]));
  const page = useApi<BatchList>(`/api/v1/batches${query({ state, owner, cursor, limit: 50 })}`, {
    pollMs: 10_000,
  });
  const apply = (next: { state: string; owner: string }) =>
    navigate(`/batches${query({ state: next.state, owner: next.owner.trim() })}`);

  return (
    <>
      <PageHeader title="Batches">
        <LiveStatus loaded={page} everyMs={10_000} />
        <RefreshButton loaded={page} />
      </PageHeader>
      <FilterBar
        label="Batch filters"
        active={[state, owner].filter((v) => v !== '').length}
        submitLabel="Filter"
        onSubmit={() => apply(form)}
      >
        <SelectField
          id="batches-state"
          label="State"
          value={form.state}
          any="any state"
          choices={['open', 'sealed', 'ended']}
          onChange={(value) => apply({ ...form, state: value })}
        />
        <TextField
          id="batches-owner"
          label="Owner (API key)"
          placeholder="any key"
          value={form.owner}
          onInput={(value) => setForm({ ...form, owner: value })}
        />
      </FilterBar>
      <ErrorBanner error={page.stale ? null : page.error} />
      {page.data === null ? (
        page.error === null && <Loading />
      ) : page.data.batches.length === 0 ? (
        <div class="card">
          <Empty title="No batches">
            Batches are created over the API (CreateBatch); an ended one is kept for
            limits.batch_retention_ms.
          </Empty>
        </div>
      ) : (
        <section class={`card${page.stale ? ' is-stale' : ''}`} aria-label="batches">
          <DataTable label="batches" columns={columns} rows={page.data.batches} rowKey={(b) => b.id} />
          <Pager nextCursor={page.data.nextCursor} />
        </section>
      )}
    </>
  );
}
