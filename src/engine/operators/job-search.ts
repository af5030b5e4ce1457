/**
 * The admin search box: one text, every way an operator may know a job — its
 * full id (any case), the start of an id, the distinctive end of one as lists
 * show it, or an idempotency key in any queue. Every lookup is an index read;
 * only the search for a piece from the middle or end of an id reads the id
 * index alone, newest first, for at most idFragmentScan ids (and only when no
 * id starts with it), and the answer says how many it searched.
 */

import type { Op } from '../../store/op.ts';
import type { StoreView } from '../../store/store.ts';
import type { JobSearchResult, SearchMatch } from '../admin-types.ts';
import type { EngineContext } from '../context.ts';
import type { JobQueries } from '../jobs/index.ts';
import type { JobBrowser } from './job-browse.ts';

const maxResults = 20;
const maxQueryLength = 1024;

export class JobSearch {
  constructor(
    private readonly ctx: EngineContext,
    private readonly browser: JobBrowser,
    private readonly queries: JobQueries,
  ) {}

  *search(view: StoreView, text: string): Op<JobSearchResult> {
    const raw = text.trim().slice(0, maxQueryLength);
    const found = new Map<string, SearchMatch>();
    const add = (ids: readonly string[], how: SearchMatch) => {
      for (const id of ids) if (!found.has(id) && found.size < maxResults) found.set(id, how);
    };
    let idsSearched: number | null = null;
    const hex = raw.replace(/^(…|\.\.\.)/, '').toLowerCase();
    if (/^[0-9a-f-]{4,36}$/.test(hex) && /[0-9a-f]{4}/.test(hex)) {
      if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(hex)) {
        add((yield* view.jobs.get(hex)) === undefined ? [] : [hex], 'id');
      } else {
        const byPrefix = yield* this.browser.idsByPrefix(view, hex, maxResults);
        add(byPrefix, 'id_prefix');
        // The bounded scan only when the start of an id matched nothing (a piece from its end).
        if (byPrefix.length === 0) {
          const { ids, searched } = yield* this.browser.idsContaining(view, hex, maxResults);
          add(ids, 'id_fragment');
          idsSearched = searched;
        }
      }
    }
    const keysWithoutJob: JobSearchResult['keysWithoutJob'] = [];
    if (raw !== '') {
      for (const queue of this.ctx.queues.names()) {
        const stored = yield* this.queries.jobIdByIdempotencyKey(view, queue, raw);
        if (stored !== null) {
          add([stored], 'idempotency_key');
          continue;
        }
        const remembered = yield* this.queries.rememberedJobId(view, queue, raw);
        if (remembered !== null) keysWithoutJob.push({ queue, key: raw, jobId: remembered });
      }
    }
    const summaries = new Map(
      (yield* this.browser.summariesByIds(view, [...found.keys()])).map((s) => [s.id, s]),
    );
    const items = [...found].flatMap(([id, matchedBy]) => {
      const summary = summaries.get(id);
      return summary === undefined ? [] : [{ ...summary, matchedBy }];
    });
    return { items, keysWithoutJob, idsSearched, storedJobs: yield* view.counts.total() };
  }
}
