/**
 * Job lists for operators across queues and states, with filters, and the
 * search box's lookups.
 *
 * A list is a merge of index ranges: one per (queue, state, type) in enqueue
 * order (index jobs_by_state_type), or one per queue in due order for
 * scheduled jobs and retries (jobs_scheduled_due, jobs_retrying_due). A type
 * prefix picks the types by a loose index scan (one seek per type). A state
 * the store keeps in no index by type (`Browse.unindexedByType`: PostgreSQL's
 * leased jobs, every read of which reads them all) is one range, every queue
 * of the list and type of the prefix in it. Filters
 * the indexes cannot answer — error text, a metadata value, a group, an age
 * (enqueued before), a dead letter's reason, the schedule that made the job
 * (its idempotency key) — are checked row
 * by row on at most `scanBudget` index entries per page: a page that runs out
 * of budget says how far it searched (`scanned`, `scanLimited`) and its
 * `nextCursor` continues from there, so nothing is skipped and no request
 * scans the table.
 *
 * Cursors mark a position (sort key and seq) and a direction, so a list can be
 * paged forwards and backwards and a cursor can live in a URL.
 */

import type { KeyShapes } from '../../store/browse.ts';
import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import type { BrowseState, JobBrowsePage, JobBrowseQuery, JobSummary } from '../admin-types.ts';
import { checkName } from '../checks.ts';
import type { EngineContext } from '../context.ts';
import { SeppError } from '../errors.ts';
import { summariesInOrder } from '../jobs/index.ts';
import { pageSizeOf } from '../page-size.ts';
import { scheduleFilter } from '../schedules/index.ts';
import { jobStates } from '../types.ts';

type Key = readonly [number, number];
type Kind = 'seq' | 'due' | 'retry';
/** Filters the indexes cannot answer, checked row by row within the scan budget. */
interface Residual {
  errorText: string | null;
  meta: { key: string; value: string } | undefined;
  group: string | null;
  typePrefix: string | undefined;
  enqueuedBeforeMs: number | null;
  deadReason: string | null;
  keyShapes: KeyShapes | null;
}
interface Range {
  kind: Kind;
  /** One queue, or every queue of the list for a range across types. */
  queues: readonly string[];
  state: string;
  /** Null: every type of `typePrefix` (a state of `unindexedByType`). */
  type: string | null;
  typePrefix: string;
}

const pageSizeDefault = 50;
/** Index ranges one list may merge (queues × states × types). */
const maxRanges = 512;
/** Index entries one page may examine for filters the indexes cannot answer. */
export const scanBudget = 20_000;
/** Newest ids searched for a fragment that is not a prefix. */
export const idFragmentScan = 200_000;

export class JobBrowser {
  constructor(private readonly ctx: EngineContext) {}

  *browse(view: StoreView, query: JobBrowseQuery): Op<JobBrowsePage> {
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
    // 0 is any time, as in the protocol's JobFilter.
    const enqueuedBeforeMs = query.enqueuedBeforeMs ? query.enqueuedBeforeMs : null;
    if (enqueuedBeforeMs !== null && (!Number.isSafeInteger(enqueuedBeforeMs) || enqueuedBeforeMs < 0)) {
      throw new SeppError(
        'invalid_argument',
        `enqueued_before_ms is ${enqueuedBeforeMs}; it must be a time in ms since the epoch`,
      );
    }
    const keyShapes = scheduleFilter(query.schedule, limits);
    const deadReason = query.deadReason ?? null;
    if (deadReason !== null && state !== 'dead') {
      throw new SeppError('invalid_argument', 'a dead reason filters dead letters: give state dead with it');
    }
    const pageSize = pageSizeOf(query.pageSize, pageSizeDefault, limits.maxPageSize);
    const due = state === 'scheduled' || state === 'retrying';
    const prefix = query.typePrefix === '' ? undefined : query.typePrefix;
    const cursor = decodeCursor(query.cursor, due ? 'd' : 'e');
    const ranges = yield* this.ranges(view, query.queue, state, due ? undefined : prefix);
    const errorText = query.errorText === undefined || query.errorText === '' ? null : query.errorText;
    const group = query.group === undefined || query.group === '' ? null : query.group;
    const residual =
      errorText !== null ||
      meta !== undefined ||
      group !== null ||
      enqueuedBeforeMs !== null ||
      deadReason !== null ||
      keyShapes !== null ||
      (due && prefix !== undefined);
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
      const keys = yield* this.read(view, range, from, up, scan);
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
    if (residual) {
      candidates = yield* this.filter(view, candidates, {
        errorText,
        meta,
        group,
        typePrefix: due ? prefix : undefined,
        enqueuedBeforeMs,
        deadReason,
        keyShapes,
      });
    }
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
      items: yield* summariesInOrder(
        view,
        page.map((k) => k[1]),
      ),
      nextCursor,
      prevCursor,
      orderedBy: due ? 'due' : 'enqueue',
      total: residual || prefix !== undefined ? null : yield* this.total(view, query.queue, state),
      scanned: residual ? scanned : null,
      scanLimited,
    };
  }

  /** Jobs whose id starts with `prefix` (lower-case hex and dashes), newest first. */
  idsByPrefix(view: StoreView, prefix: string, limit: number): Op<string[]> {
    return view.browse.idsBetween({ lo: prefix, hi: `${prefix}~`, limit });
  }

  /** Jobs whose id contains `fragment`, among the newest idFragmentScan; with how many were searched. */
  *idsContaining(view: StoreView, fragment: string, limit: number): Op<{ ids: string[]; searched: number }> {
    const stored = yield* view.counts.total();
    const ids = yield* view.browse.idsContaining({ fragment, scan: idFragmentScan, limit });
    return { ids, searched: Math.min(stored, idFragmentScan) };
  }

  /** Summaries of the jobs with these ids, in that order (ids of no job are left out). */
  *summariesByIds(view: StoreView, ids: readonly string[]): Op<JobSummary[]> {
    const seqs: number[] = [];
    for (const id of ids) {
      const row = yield* view.jobs.get(id);
      if (row !== undefined) seqs.push(row.seq);
    }
    return yield* summariesInOrder(view, seqs);
  }

  private *ranges(
    view: StoreView,
    queue: string | undefined,
    state: BrowseState | undefined,
    prefix: string | undefined,
  ): Op<Range[]> {
    const queues = queue === undefined || queue === '' ? this.ctx.queues.names() : [queue];
    if (state === 'scheduled' || state === 'retrying') {
      const kind: Kind = state === 'scheduled' ? 'due' : 'retry';
      return queues.map((q) => ({ kind, queues: [q], state: 'scheduled', type: '', typePrefix: '' }));
    }
    const states = state === undefined ? jobStates : [state];
    const typePrefix = prefix ?? '';
    const ranges: Range[] = [];
    const add = (range: Range) => {
      ranges.push(range);
      if (ranges.length > maxRanges) {
        throw new SeppError(
          'invalid_argument',
          `this list would merge more than ${maxRanges} queue, state and type combinations; choose a queue, a state or a type prefix`,
        );
      }
    };
    const unindexed = states.filter((s) => view.browse.unindexedByType.has(s));
    for (const s of unindexed) add({ kind: 'seq', queues, state: s, type: null, typePrefix });
    // Queue by queue, as the index is ordered.
    for (const q of queues) {
      for (const s of states) {
        if (unindexed.includes(s)) continue;
        for (const type of yield* this.types(view, q, s, typePrefix)) {
          add({ kind: 'seq', queues: [q], state: s, type, typePrefix });
        }
      }
    }
    return ranges;
  }

  /** The job types present in a queue and state that start with `prefix`: one index seek each. */
  private *types(view: StoreView, queue: string, state: string, prefix: string): Op<string[]> {
    const below = `${prefix}\u{10ffff}`;
    const types: string[] = [];
    let from = prefix;
    for (;;) {
      const type = yield* view.browse.typeFrom({ queue, state, fromType: from, belowType: below });
      if (type === undefined || types.length > maxRanges) return types;
      types.push(type);
      from = `${type}\u0000`;
    }
  }

  private *read(view: StoreView, range: Range, from: Key, up: boolean, scan: number): Op<Key[]> {
    if (range.kind === 'seq') {
      const { queues, state, type, typePrefix } = range;
      const at = { state, fromSeq: from[1], descending: !up, scan };
      const seqs =
        type === null
          ? yield* view.browse.scanSeqsAcrossTypes({ ...at, queues, type, typePrefix })
          : yield* view.browse.scanSeqs({ ...at, queue: queues[0]!, type });
      return seqs.map((seq) => [seq, seq] as const);
    }
    const rows = yield* view.browse.scanDue({
      queue: range.queues[0]!,
      retries: range.kind === 'retry',
      fromDueMs: from[0],
      fromSeq: from[1],
      descending: !up,
      scan,
    });
    return rows.map((row) => [row.run_at_ms, row.seq] as const);
  }

  private *filter(view: StoreView, keys: Key[], residual: Residual): Op<Key[]> {
    if (keys.length === 0) return keys;
    const { errorText, meta, group, typePrefix, enqueuedBeforeMs, deadReason, keyShapes } = residual;
    const passing = new Set(
      yield* view.browse.filter({
        seqs: keys.map((k) => k[1]),
        errorText,
        metadata: meta ?? null,
        typePrefix: typePrefix ?? null,
        groupKey: group,
        enqueuedBeforeMs,
        deadReason,
        keyShapes,
      }),
    );
    return keys.filter((k) => passing.has(k[1]));
  }

  private *total(
    view: StoreView,
    queue: string | undefined,
    state: BrowseState | undefined,
  ): Op<number | null> {
    if (state === 'retrying') return null;
    const queues = queue === undefined || queue === '' ? this.ctx.queues.names() : [queue];
    let total = 0;
    for (const q of queues) {
      for (const row of yield* view.counts.ofQueue(q)) {
        if (state === undefined || row.state === state) total += row.jobs;
      }
    }
    return total;
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
