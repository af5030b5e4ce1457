/**
 * Jobs for operators across queues: the job lists with filters (any queue,
 * any state, type prefix, error text, metadata, group, age) paged both ways, and the
 * search box (an id, a piece of one, or an idempotency key in any queue).
 */

import type { BrowseState } from '../../engine/admin-types.ts';
import { jobStates } from '../../engine/types.ts';
import { bad, queryChoice, queryInteger, queryPageSize, queryString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import { listOrders } from './job-routes.ts';

export const browseStates: readonly BrowseState[] = [...jobStates, 'retrying'];
const int = { type: 'integer' } as const;

/**
 * The `schedule` filter of the jobs list, its count and its bulk actions: the jobs a
 * schedule's ticks and manual runs enqueued, by their idempotency keys
 * (`schedule:NAME:TICK`, `schedule:NAME:manual:TIME`). It is this narrow filter, not a
 * key prefix: a viewer sees a job's key on its page and the search box finds a whole
 * key, but a prefix filter would let them list keys they do not know (a producer's
 * keys may hold a customer's id); a schedule's jobs are no secret from a viewer, who
 * sees its runs and their jobs on its page.
 */
export const scheduleFilterText =
  'only jobs this schedule enqueued (by their idempotency keys, schedule:NAME:…); the schedule need not exist any more';

export function browseRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  return [
    {
      method: 'get',
      path: '/api/v1/jobs',
      access: 'viewer',
      tag: 'jobs',
      summary: 'A page of jobs across queues and states, with filters',
      description:
        'Without `queue` every queue, without `state` every state. `scheduled` and `retrying` (scheduled after a failed attempt) are ordered by due time, the rest by enqueue order. `error`, `meta`, `group`, `enqueuedBeforeMs` and `schedule` are checked on at most 20,000 jobs per page: when `scanLimited` is true the page holds what was found so far and `nextCursor` searches on. `prevCursor` pages back.',
      query: {
        queue: { description: 'only this queue', schema: { type: 'string' } },
        state: { description: 'only this state', schema: { type: 'string', enum: [...browseStates] } },
        type: { description: 'only job types starting with this', schema: { type: 'string' } },
        error: {
          description: 'only jobs whose last error contains this (any case)',
          schema: { type: 'string' },
        },
        meta: { description: 'only jobs with this metadata value, as key=value', schema: { type: 'string' } },
        group: { description: 'only jobs of this group (exact name)', schema: { type: 'string' } },
        enqueuedBeforeMs: {
          description:
            'only jobs enqueued before this time, in ms since the epoch (older than); 0: no age limit',
          schema: { type: 'integer', minimum: 0 },
        },
        schedule: {
          description: scheduleFilterText,
          schema: { type: 'string' },
        },
        order: {
          description: 'oldest (or soonest due) first, the default, or newest first',
          schema: { type: 'string', enum: [...listOrders] },
        },
        cursor: { description: "a page's nextCursor or prevCursor", schema: { type: 'string' } },
        limit: {
          description: 'page size, default 50',
          schema: { type: 'integer', minimum: 1, maximum: 1000 },
        },
      },
      response: {
        type: 'object',
        properties: {
          items: { type: 'array', items: ref('JobSummary') },
          nextCursor: { type: ['string', 'null'] },
          prevCursor: { type: ['string', 'null'] },
          orderedBy: { type: 'string', enum: ['enqueue', 'due'] },
          total: { type: ['integer', 'null'] },
          scanned: { type: ['integer', 'null'] },
          scanLimited: { type: 'boolean' },
        },
        required: ['items', 'nextCursor', 'prevCursor', 'orderedBy', 'total', 'scanned', 'scanLimited'],
      },
      async handle(c) {
        const query = {
          queue: queryString(c, 'queue', 256),
          state: queryChoice(c, 'state', browseStates),
          typePrefix: queryString(c, 'type', 256),
          errorText: queryString(c, 'error', 256),
          metadata: metaFilter(queryString(c, 'meta', 1024)),
          group: queryString(c, 'group', 256),
          enqueuedBeforeMs: queryInteger(c, 'enqueuedBeforeMs'),
          schedule: queryString(c, 'schedule', 256),
          order: queryChoice(c, 'order', listOrders),
          cursor: queryString(c, 'cursor'),
          pageSize: queryPageSize(c, engine.limits.maxPageSize),
        };
        const defined = Object.fromEntries(
          Object.entries(query).filter(([, v]) => v !== undefined && v !== ''),
        );
        return c.json(await engine.browseJobs(defined));
      },
    },
    {
      method: 'get',
      path: '/api/v1/search',
      access: 'viewer',
      tag: 'jobs',
      summary: 'Find jobs by full id, a piece of an id, or an idempotency key in any queue',
      description:
        'A piece from the middle or end of an id is looked for among the newest 200,000 jobs (`idsSearched`); a full id, the start of one and idempotency keys are found among all.',
      query: { q: { description: 'what to look for', schema: { type: 'string' } } },
      response: {
        type: 'object',
        properties: {
          items: { type: 'array', items: ref('JobSummary') },
          keysWithoutJob: { type: 'array', items: { type: 'object' } },
          idsSearched: { type: ['integer', 'null'] },
          storedJobs: int,
        },
        required: ['items', 'keysWithoutJob', 'idsSearched', 'storedJobs'],
      },
      async handle(c) {
        const q = queryString(c, 'q', 1024) ?? '';
        if (q.trim() === '')
          throw bad('q: say what to look for (a job id, part of one, or an idempotency key)');
        return c.json(await engine.searchJobs(q));
      },
    },
  ];
}

/**
 * `meta=key=value`. The key becomes a JSON path in SQLite (json_extract), where
 * a NUL or another control character is an error, not a miss: refused here,
 * naming the parameter. The value is compared as given (a NUL in it matches nothing).
 */
export function metaFilter(text: string | undefined): { key: string; value: string } | undefined {
  if (text === undefined || text === '') return undefined;
  const at = text.indexOf('=');
  if (at <= 0) throw bad('meta must be key=value, for example tenant=acme');
  const key = text.slice(0, at).trim();
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
  const control = /[\u0000-\u001f\u007f]/.exec(key);
  if (control !== null) {
    const code = control[0].charCodeAt(0).toString(16).padStart(4, '0');
    throw bad(
      `meta: the key has a control character (U+${code.toUpperCase()}); metadata keys are printable text`,
    );
  }
  return { key, value: text.slice(at + 1).trim() };
}
