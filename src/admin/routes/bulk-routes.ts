/**
 * Bulk operations from the admin UI: cancel, run now / reprioritise, requeue
 * or delete every job a filter matches — the jobs list's filters, in one
 * queue or all of them — as one server-side operation (the engine's bulk
 * operations, in slices). `dryRun` counts first (for the confirmation: exact,
 * or "at least" with how far the count looked); otherwise the operation starts
 * and the answer is its progress at once, which the UI polls
 * (`GET /api/v1/bulk-operations/{id}`) and may stop. Each operation is audited
 * once, with the filter and the count.
 *
 * The filter is the jobs list's, by the same names (`enqueuedBeforeMs` is the
 * age: older than), so the list, its total and "all N matching" agree.
 *
 * The selected rows of a list are a job-ids variant
 * (`POST /api/v1/bulk/selected/{requeue,cancel,dead-letter,delete}`): one call, one write
 * and one audit entry with the count, however many rows (at most the batch
 * limit); jobs in another state are skipped and counted.
 */

import type { Context } from 'hono';
import { roleFor } from '../../config/index.ts';
import type { SelectedJobsAction } from '../../engine/control/index.ts';
import type { BulkAction, JobChanges, JobFilter } from '../../engine/control-types.ts';
import { normalizeJobId } from '../../engine/jobs/index.ts';
import type { DeadReason, JobState } from '../../engine/types.ts';
import { jobIdsProperty } from '../job-schemas.ts';
import {
  bad,
  batchIds,
  type JsonObject,
  optionalBoolean,
  optionalInteger,
  optionalString,
  pathParam,
  queryInteger,
  queryString,
  readJsonObject,
} from '../request-input.ts';
import { requestKeyDescription, requestKeyOf, requestKeyProperty } from '../request-key.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { browseStates, metaFilter, scheduleFilterText } from './browse-routes.ts';
import { deadReasons } from './dead-letter-routes.ts';

const int = { type: 'integer' } as const;
const str = { type: 'string' } as const;

/** The body's filter: the jobs list's query parameters, by the same names. */
const filterBody = {
  queue: { type: 'string', description: 'one queue; absent or empty: every queue' },
  state: {
    type: 'string',
    enum: [...browseStates],
    description: 'one state; absent: every state the action applies to',
  },
  type: { type: 'string', description: 'only types starting with this' },
  group: str,
  error: { type: 'string', description: 'only jobs whose last error contains this (any case)' },
  errorLine: {
    type: 'string',
    maxLength: 200,
    description:
      "only jobs of this top-errors group: the first line of the last error, exactly (with errorClass; '' is a group too)",
  },
  errorClass: {
    type: 'string',
    maxLength: 256,
    description: "with errorLine: the group's class ('' for none)",
  },
  meta: { type: 'string', description: 'only jobs with this metadata value, as key=value' },
  reason: { type: 'string', enum: [...deadReasons], description: 'only dead letters of this reason' },
  enqueuedBeforeMs: { type: 'integer', description: 'only jobs enqueued before this time (older than)' },
  enqueuedFromMs: { type: 'integer', description: 'only jobs enqueued at or after this time' },
  schedule: { type: 'string', description: scheduleFilterText },
  dryRun: { type: 'boolean', description: 'count only; change nothing' },
} as const;

const countSchema = {
  type: 'object',
  properties: { matched: int, exact: { type: 'boolean' }, examined: int },
  required: ['matched', 'exact', 'examined'],
} as const;

const operationSchema = {
  type: 'object',
  properties: {
    id: str,
    action: { type: 'string', enum: ['cancel', 'update', 'requeue', 'delete'] },
    state: { type: 'string', enum: ['running', 'done', 'cancelled', 'failed'] },
    details: { type: 'object' },
    matched: int,
    matchedExact: { type: 'boolean' },
    changed: int,
    cancelRequested: int,
    examined: int,
    slices: int,
    startedAtMs: int,
    finishedAtMs: { type: ['integer', 'null'] },
    error: { type: ['string', 'null'] },
    actor: { type: ['string', 'null'] },
  },
  required: ['id', 'action', 'state', 'matched', 'matchedExact', 'changed', 'startedAtMs'],
} as const;

/** The jobs list's filter from a body (`state: retrying` is scheduled jobs after a failed attempt). */
export function bulkFilterOf(body: JsonObject): JobFilter {
  const state = optionalString(body, 'state', 32);
  if (state !== undefined && state !== '' && !(browseStates as readonly string[]).includes(state)) {
    throw bad(`state must be one of ${browseStates.join(', ')}`);
  }
  const reason = optionalString(body, 'reason', 64);
  if (reason !== undefined && reason !== '' && !(deadReasons as readonly string[]).includes(reason)) {
    throw bad(`reason must be one of ${deadReasons.join(', ')}`);
  }
  const text = (field: string, max: number) => {
    const value = optionalString(body, field, max);
    return value === undefined || value === '' ? undefined : value;
  };
  const queue = text('queue', 256);
  const typePrefix = text('type', 256);
  const group = text('group', 256);
  const errorText = text('error', 1024);
  const metadata = metaFilter(text('meta', 2048));
  const schedule = text('schedule', 256);
  const enqueuedBeforeMs = optionalInteger(body, 'enqueuedBeforeMs');
  const enqueuedFromMs = optionalInteger(body, 'enqueuedFromMs');
  const errorLine = optionalString(body, 'errorLine', 200);
  const errorClass = optionalString(body, 'errorClass', 256);
  if (errorClass !== undefined && errorLine === undefined) throw bad('errorClass: give errorLine too');
  return {
    ...(queue === undefined ? {} : { queue }),
    ...(state === undefined || state === ''
      ? {}
      : state === 'retrying'
        ? { retriesOnly: true }
        : { states: [state as JobState] }),
    ...(typePrefix === undefined ? {} : { typePrefix }),
    ...(group === undefined ? {} : { group }),
    ...(errorText === undefined ? {} : { errorText }),
    ...(metadata === undefined ? {} : { metadata }),
    ...(reason === undefined || reason === '' ? {} : { deadReason: reason as DeadReason }),
    ...(enqueuedBeforeMs === undefined ? {} : { enqueuedBeforeMs }),
    ...(enqueuedFromMs === undefined ? {} : { enqueuedFromMs }),
    ...(schedule === undefined ? {} : { schedule }),
    ...(errorLine === undefined
      ? {}
      : { errorGroup: { errorClass: errorClass ?? '', firstLine: errorLine } }),
  };
}

export function bulkRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;

  const start = (
    action: BulkAction,
    audit: 'jobs.cancel' | 'jobs.update' | 'jobs.requeue' | 'jobs.delete',
    summary: string,
  ): RouteSpec => ({
    method: 'post',
    path: `/api/v1/bulk/${action}`,
    access: roleFor(audit),
    tag: 'jobs',
    summary,
    description:
      'With `dryRun` nothing changes and the answer counts the matching jobs (`exact` false: at least `matched`, the count looked at `examined` index entries). Otherwise the operation starts and the answer is its progress; poll `GET /api/v1/bulk-operations/{id}`. ' +
      requestKeyDescription,
    body: {
      type: 'object',
      properties: {
        ...(action === 'update'
          ? {
              ...filterBody,
              runNow: { type: 'boolean' },
              priority: { type: 'integer', minimum: 0, maximum: 9 },
            }
          : filterBody),
        requestKey: requestKeyProperty,
      },
    },
    response: { oneOf: [countSchema, operationSchema] },
    audits: audit,
    async handle(c: Context, request) {
      const body = await readJsonObject(c);
      const filter = bulkFilterOf(body);
      const changes: JobChanges = {};
      if (action === 'update') {
        if (optionalBoolean(body, 'runNow') === true) changes.runNow = true;
        const priority = optionalInteger(body, 'priority');
        if (priority !== undefined) changes.priority = priority;
      }
      const keyed = requestKeyOf(body);
      if (optionalBoolean(body, 'dryRun') === true) {
        return c.json(await engine.countBulk(action, filter, changes));
      }
      const info = await engine.startBulk({
        action,
        filter,
        changes,
        audit: request.audit(audit, `queue:${filter.queue ?? '*'}`),
        ...keyed,
      });
      return c.json(info);
    },
  });

  const selected = (
    action: SelectedJobsAction,
    audit: 'jobs.cancel' | 'jobs.requeue' | 'jobs.dead_letter' | 'dead_letters.delete',
    summary: string,
  ): RouteSpec => ({
    method: 'post',
    path: `/api/v1/bulk/selected/${action}`,
    access: roleFor(audit),
    tag: 'jobs',
    summary,
    description:
      'One write and one audit entry for all of `jobIds` (at most the batch limit). A job in a state the action does not apply to, or gone, is left as it is and counted in `skipped`.',
    body: {
      type: 'object',
      properties: { jobIds: jobIdsProperty },
      required: ['jobIds'],
    },
    response: {
      type: 'object',
      properties: { changed: int, skipped: int },
      required: ['changed', 'skipped'],
    },
    audits: audit,
    async handle(c: Context, request) {
      // A UUID in upper case names the same job; ids that are no UUID match nothing.
      const jobIds = batchIds(await readJsonObject(c), 'jobIds', engine.limits.maxBatchJobs).map(
        (id) => normalizeJobId(id) ?? id,
      );
      return c.json(await engine.changeSelectedJobs(action, jobIds, request.audit(audit, 'queue:*')));
    },
  });

  return [
    selected('requeue', 'jobs.requeue', 'Requeue the chosen jobs that are dead, completed or cancelled'),
    selected(
      'cancel',
      'jobs.cancel',
      'Cancel the chosen jobs that are waiting, scheduled or ready (leased: by request)',
    ),
    selected(
      'dead-letter',
      'jobs.dead_letter',
      'Dead-letter the chosen jobs that are ready or scheduled (reason dead_lettered)',
    ),
    selected('delete', 'dead_letters.delete', 'Delete the chosen jobs that are dead letters'),
    start('cancel', 'jobs.cancel', 'Cancel every job a filter matches (scheduled, ready; leased by request)'),
    start('update', 'jobs.update', 'Run now, or set the priority of, every waiting job a filter matches'),
    start('requeue', 'jobs.requeue', 'Requeue every dead, completed or cancelled job a filter matches'),
    start('delete', 'jobs.delete', 'Delete every job a filter matches that is not running'),
    {
      method: 'get',
      path: '/api/v1/jobs-count',
      access: 'viewer',
      tag: 'jobs',
      summary: 'How many jobs a filter of the jobs list matches (its total when the list cannot know it)',
      description:
        'The same query parameters as GET /api/v1/jobs. Counters answer a filter of queue and state; a type an index range; anything else is counted on at most 100,000 jobs, and `exact` false says the total is at least `matched`.',
      query: {
        queue: { description: 'one queue', schema: str },
        state: { description: 'one state', schema: { type: 'string', enum: [...browseStates] } },
        type: { description: 'type prefix', schema: str },
        group: { description: 'one group', schema: str },
        error: { description: 'error text', schema: str },
        meta: { description: 'key=value', schema: str },
        reason: {
          description: 'only dead letters of this reason',
          schema: { type: 'string', enum: [...deadReasons] },
        },
        enqueuedBeforeMs: {
          description: 'enqueued before this time, in ms since the epoch; 0 or absent: no age limit',
          schema: { type: 'integer', minimum: 0 },
        },
        schedule: { description: scheduleFilterText, schema: str },
      },
      response: countSchema,
      async handle(c) {
        const params = Object.fromEntries(
          ['queue', 'state', 'type', 'group', 'error', 'meta', 'reason', 'schedule'].map((k) => [
            k,
            queryString(c, k, 2048),
          ]),
        );
        const enqueuedBeforeMs = queryInteger(c, 'enqueuedBeforeMs');
        return c.json(await engine.countJobs(bulkFilterOf({ ...params, enqueuedBeforeMs })));
      },
    },
    {
      method: 'get',
      path: '/api/v1/bulk-operations',
      access: 'viewer',
      tag: 'jobs',
      summary: 'The bulk operations running now and the last ones finished',
      response: {
        type: 'object',
        properties: { items: { type: 'array', items: operationSchema } },
        required: ['items'],
      },
      handle(c) {
        return c.json({ items: engine.listBulkOperations() });
      },
    },
    {
      method: 'get',
      path: '/api/v1/bulk-operations/{id}',
      access: 'viewer',
      tag: 'jobs',
      summary: "A bulk operation's progress",
      pathParams: { id: 'the operation id' },
      response: operationSchema,
      handle(c) {
        return c.json(engine.getBulkOperation(pathParam(c, 'id')));
      },
    },
    {
      method: 'post',
      path: '/api/v1/bulk-operations/{id}/cancel',
      access: roleFor('jobs.cancel'),
      tag: 'jobs',
      summary: 'Stop a bulk operation after its current slice (what it changed stays changed)',
      pathParams: { id: 'the operation id' },
      response: operationSchema,
      async handle(c) {
        return c.json(await engine.cancelBulkOperation(pathParam(c, 'id')));
      },
    },
  ];
}
