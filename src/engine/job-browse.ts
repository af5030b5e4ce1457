/**
 * Job lists for operators across queues and states, with filters, and the
 * search box's lookups.
 *
 * A list is a merge of index ranges: one per (queue, state, type) in enqueue
 * order (index jobs_by_state_type), or one per queue in due order for
 * scheduled jobs and retries (jobs_scheduled_due, jobs_retrying_due). A type
 * prefix picks the types by a loose index scan (one seek per type). Filters
 * the indexes cannot answer — error text, a metadata value, a group — are checked row
 * by row on at most `scanBudget` index entries per page: a page that runs out
 * of budget says how far it searched (`scanned`, `scanLimited`) and its
 * `nextCursor` continues from there, so nothing is skipped and no request
 * scans the table.
 *
 * Cursors mark a position (sort key and seq) and a direction, so a list can be
 * paged forwards and backwards and a cursor can live in a URL.
 */

import type { AdminStatements } from '../store/sqlite/admin-statements.ts';
import { type BrowseStatements, prepareBrowseStatements } from '../store/sqlite/browse-statements.ts';
import type { BrowseState, JobBrowsePage, JobBrowseQuery, JobSummary } from './admin-types.ts';
import type { EngineContext } from './context.ts';
import { checkName } from './enqueue-validation.ts';
import { SeppError } from './errors.ts';
import { summaryFromRow } from './job-queries.ts';
import { jobStates } from './types.ts';

type Key = readonly [number, number];
type Kind = 'seq' | 'due' | 'retry';
/** Filters the indexes cannot answer, checked row by row within the scan budget. */
interface Residual {
  errorText: string | null;
  meta: { key: string; value: string } | undefined;
  group: string | null;
  typePrefix: string | undefined;
}
interface Range {
  kind: Kind;
  queue: string;
  state: string;
  type: string;
}

const pageSizeDefault = 50;
/** Index ranges one list may merge (queues × states × types). */
const maxRanges = 512;
/** Index entries one page may examine for filters the indexes cannot answer. */
export const scanBudget = 20_000;
/** Newest ids searched for a fragment that is not a prefix. */
export const idFragmentScan = 200_000;

export class JobBrowser {
  private readonly sql: BrowseStatements;

  constructor(
    private readonly ctx: EngineContext,
    private readonly admin: AdminStatements,
  ) {
    this.sql = prepareBrowseStatements(ctx.db);
  }

  browse(query: JobBrowseQuery): JobBrowsePage {
    const { limits } = this.ctx;
    for (const [field, value] of [
      ['queue', query.queue],
      ['type', query.typePrefix],
      ['group', query.group],
    ] as const) {
      if (value === undefined || value === '') continue;
      const problem = checkName(field, value, limits);
      if (problem) throw new SeppError('invalid_argument', problem.message);
    }
    const state = query.state;
    if (state !== undefined && state !== 'retrying' && !jobStates.includes(state)) {
      throw new SeppError(
        'invalid_argument',
        `state must be one of ${[...jobStates, 'retrying'].join(', ')}`,
      );
    }
    const meta = query.metadata;
    if (meta !== undefined && (meta.key === '' || /["\\]/.test(meta.key) || meta.key.length > 256)) {
      throw new SeppError('invalid_argument', 'metadata key must be 1 to 256 characters without " or \\');
    }
    const pageSize = query.pageSize ?? pageSizeDefault;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > limits.maxPageSize) {
      throw new SeppError(
        'invalid_argument',
        `page_size is ${pageSize}; it must be an integer from 1 to ${limits.maxPageSize} (limits.max_page_size)`,
      );
    }
    const due = state === 'scheduled' || state === 'retrying';
    const prefix = query.typePrefix === '' ? undefined : query.typePrefix;
    const cursor = decodeCursor(query.cursor, due ? 'd' : 'e');
    const ranges = this.ranges(query.queue, state, due ? undefined : prefix);
    const errorText = query.errorText === undefined || query.errorText === '' ? null : query.errorText;
    const group = query.group === undefined || query.group === '' ? null : query.group;
    const residual =
      errorText !== null || meta !== undefined || group !== null || (due && prefix !== undefined);
    const ascending = query.order !== 'newest_first';
    const forward = cursor?.dir !== 'b';
    const up = ascending === forward; // the direction the ranges are read in
    const want = pageSize + 1;
    const scan = residual ? Math.max(want, Math.floor(scanBudget / Math.max(1, ranges.length))) : want;
    const from: Key = cursor?.key ?? (up ? [-1, -1] : [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]);

    let candidates: Key[] = [];
    let frontier: Key | null = null;
    let scanned = 0;
    for (const range of ranges) {
      const keys = this.read(range, from, up, scan);
      scanned += keys.length;
      candidates.push(...keys);
      const last = keys.at(-1);
      if (keys.length === scan && last !== undefined && (frontier === null || before(last, frontier, up))) {
        frontier = last;
      }
    }
    candidates.sort((a, b) => (before(a, b, up) ? -1 : before(b, a, up) ? 1 : 0));
    if (frontier !== null) {
      const f = frontier;
      candidates = candidates.filter((k) => !before(f, k, up));
    }
    if (residual)
      candidates = this.filter(candidates, { errorText, meta, group, typePrefix: due ? prefix : undefined });
    const more = candidates.length > pageSize || frontier !== null;
    const page = candidates.slice(0, pageSize);
    const scanLimited = candidates.length <= pageSize && frontier !== null;
    const tag = due ? 'd' : 'e';
    const lastKey = scanLimited ? frontier : (page.at(-1) ?? null);
    let nextCursor: string | null;
    let prevCursor: string | null;
    if (forward) {
      nextCursor = more && lastKey !== null ? encodeCursor('a', tag, lastKey) : null;
      const first = page[0] ?? cursor?.key;
      prevCursor = cursor === null || first === undefined ? null : encodeCursor('b', tag, first);
    } else {
      page.reverse();
      const first = page[0];
      const last = page.at(-1) ?? cursor?.key;
      prevCursor = more && first !== undefined ? encodeCursor('b', tag, first) : null;
      nextCursor = last === undefined ? null : encodeCursor('a', tag, last);
    }
    return {
      items: this.summaries(page.map((k) => k[1])),
      nextCursor,
      prevCursor,
      orderedBy: due ? 'due' : 'enqueue',
      total: residual || prefix !== undefined ? null : this.total(query.queue, state),
      scanned: residual ? scanned : null,
      scanLimited,
    };
  }

  /** Jobs whose id starts with `prefix` (lower-case hex and dashes), newest first. */
  idsByPrefix(prefix: string, limit: number): string[] {
    return this.sql.idsByPrefix.all({ lo: prefix, hi: `${prefix}~`, limit });
  }

  /** Jobs whose id contains `fragment`, among the newest idFragmentScan; with how many were searched. */
  idsContaining(fragment: string, limit: number): { ids: string[]; searched: number } {
    const stored = this.storedJobs();
    const ids = this.sql.idsContaining.all({ fragment, scan: idFragmentScan, limit });
    return { ids, searched: Math.min(stored, idFragmentScan) };
  }

  leasesByWorker(): { worker_id: string | null; jobs: number; since_ms: number }[] {
    return this.sql.leasesByWorker.all();
  }

  storedJobs(): number {
    return this.sql.storedJobs.get() ?? 0;
  }

  summariesByIds(ids: readonly string[]): JobSummary[] {
    const seqs = ids.flatMap((id) => {
      const row = this.ctx.sql.jobById.get(id);
      return row === undefined ? [] : [row.seq];
    });
    return this.summaries(seqs);
  }

  private ranges(
    queue: string | undefined,
    state: BrowseState | undefined,
    prefix: string | undefined,
  ): Range[] {
    const queues = queue === undefined || queue === '' ? this.ctx.queues.names() : [queue];
    if (state === 'scheduled' || state === 'retrying') {
      const kind: Kind = state === 'scheduled' ? 'due' : 'retry';
      return queues.map((q) => ({ kind, queue: q, state: 'scheduled', type: '' }));
    }
    const states = state === undefined ? jobStates : [state];
    const ranges: Range[] = [];
    for (const q of queues) {
      for (const s of states) {
        for (const type of this.types(q, s, prefix ?? '')) {
          ranges.push({ kind: 'seq', queue: q, state: s, type });
          if (ranges.length > maxRanges) {
            throw new SeppError(
              'invalid_argument',
              `this list would merge more than ${maxRanges} queue, state and type combinations; choose a queue, a state or a type prefix`,
            );
          }
        }
      }
    }
    return ranges;
  }

  /** The job types present in a queue and state that start with `prefix`: one index seek each. */
  private types(queue: string, state: string, prefix: string): string[] {
    const below = `${prefix}\u{10ffff}`;
    const types: string[] = [];
    let from = prefix;
    for (;;) {
      const type = this.sql.typeAtOrAfter.get({ queue, state, from_type: from, below_type: below });
      if (type === undefined || types.length > maxRanges) return types;
      types.push(type);
      from = `${type}\u0000`;
    }
  }

  private read(range: Range, from: Key, up: boolean, scan: number): Key[] {
    const { sql } = this;
    if (range.kind === 'seq') {
      const stmt = up ? sql.seqScanAsc : sql.seqScanDesc;
      return stmt
        .all({ queue: range.queue, state: range.state, type: range.type, from_seq: from[1], scan })
        .map((seq) => [seq, seq] as const);
    }
    const stmt =
      range.kind === 'due'
        ? up
          ? sql.dueScanAsc
          : sql.dueScanDesc
        : up
          ? sql.retryScanAsc
          : sql.retryScanDesc;
    return stmt
      .all({ queue: range.queue, from_due_ms: from[0], from_seq: from[1], scan })
      .map((row) => [row.run_at_ms, row.seq] as const);
  }

  private filter(keys: Key[], residual: Residual): Key[] {
    if (keys.length === 0) return keys;
    const { errorText, meta, group, typePrefix } = residual;
    const passing = new Set(
      this.sql.residual.all({
        seqs_json: JSON.stringify(keys.map((k) => k[1])),
        error_text: errorText,
        meta_path: meta === undefined ? null : `$."${meta.key}"`,
        meta_value: meta === undefined ? null : meta.value,
        type_lo: typePrefix ?? null,
        type_hi: typePrefix === undefined ? null : `${typePrefix}\u{10ffff}`,
        group_key: group,
      }),
    );
    return keys.filter((k) => passing.has(k[1]));
  }

  private total(queue: string | undefined, state: BrowseState | undefined): number | null {
    if (state === 'retrying') return null;
    const queues = queue === undefined || queue === '' ? this.ctx.queues.names() : [queue];
    let total = 0;
    for (const q of queues) {
      for (const row of this.ctx.sql.queueCounts.all(q)) {
        if (state === undefined || row.state === state) total += row.jobs;
      }
    }
    return total;
  }

  private summaries(seqs: readonly number[]): JobSummary[] {
    if (seqs.length === 0) return [];
    const rows = this.admin.summariesBySeqs.all({ seqs_json: JSON.stringify(seqs) });
    const bySeq = new Map(rows.map((row) => [row.seq, row]));
    return seqs.flatMap((seq) => {
      const row = bySeq.get(seq);
      return row === undefined ? [] : [summaryFromRow(row)];
    });
  }
}

/** Whether `a` comes before `b` when reading upwards (`up`) or downwards. */
function before(a: Key, b: Key, up: boolean): boolean {
  const less = a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  const greater = a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
  return up ? less : greater;
}

function encodeCursor(dir: 'a' | 'b', tag: 'e' | 'd', key: Key): string {
  return Buffer.from(`j${dir}${tag}:${key[0]}:${key[1]}`).toString('base64url');
}

function decodeCursor(cursor: string | undefined, tag: 'e' | 'd'): { dir: 'a' | 'b'; key: Key } | null {
  if (cursor === undefined || cursor === '') return null;
  const match = /^j([ab])([ed]):(-?\d{1,16}):(\d{1,16})$/.exec(Buffer.from(cursor, 'base64url').toString());
  if (match === null || match[2] !== tag) {
    throw new SeppError('invalid_argument', 'cursor is not one this list issued; start again without it');
  }
  return { dir: match[1] as 'a' | 'b', key: [Number(match[3]), Number(match[4])] };
}
