/**
 * Dead letters of a queue: list (optionally by reason, error text, age),
 * requeue or delete selected ones, or all of them (optionally so narrowed). Deleting all is
 * the one destructive bulk action here and needs the admin role and a
 * confirmation; the rest are an operator's daily work.
 */

import { roleFor } from '../../config/index.ts';
import { normalizeJobId } from '../../engine/jobs/index.ts';
import type { DeadReason } from '../../engine/types.ts';
import {
  bad,
  batchIds,
  type JsonObject,
  optionalInteger,
  optionalString,
  pathParam,
  queryChoice,
  queryInteger,
  queryPageSize,
  queryString,
  readJsonObject,
  requiredString,
} from '../request-input.ts';
import { requestKeyDescription, requestKeyOf, requestKeyProperty } from '../request-key.ts';
import type { AdminServices, RequestContext, RouteSpec } from '../route-spec.ts';
import { jobIdsBody, ref } from '../schemas.ts';
import { listOrders, pagingQuery } from './job-routes.ts';

export const deadReasons: readonly DeadReason[] = ['attempts_exhausted', 'lease_expired', 'dead_lettered'];

const reasonBody = {
  type: 'object',
  properties: {
    reason: { type: 'string', enum: [...deadReasons], description: 'only dead letters of this reason' },
    error: { type: 'string', description: 'only dead letters whose last error contains this (any case)' },
    enqueuedBeforeMs: {
      type: 'integer',
      description: 'only dead letters enqueued before this time, in ms since the epoch (older than)',
    },
    requestKey: requestKeyProperty,
  },
};

const topErrorsSchema = {
  type: 'object',
  properties: {
    queue: { type: 'string' },
    groups: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          errorClass: { type: 'string', description: "the class the worker named; '' for none" },
          firstLine: {
            type: 'string',
            description: 'the first line of the last error, at most 200 characters',
          },
          jobs: { type: 'integer' },
          firstFailedAtMs: { type: 'integer' },
          lastFailedAtMs: { type: 'integer' },
        },
        required: ['errorClass', 'firstLine', 'jobs', 'firstFailedAtMs', 'lastFailedAtMs'],
      },
    },
    groupCount: { type: 'integer', description: 'groups among the dead letters read' },
    scanned: { type: 'integer', description: 'dead letters read, newest first' },
    deadTotal: { type: 'integer' },
    complete: { type: 'boolean', description: 'every dead letter was read' },
  },
  required: ['queue', 'groups', 'groupCount', 'scanned', 'deadTotal', 'complete'],
} as const;

const waitingSchema = {
  type: 'object',
  properties: {
    waiting: { type: 'integer', description: 'jobs waiting on it, at most 1,000' },
    more: { type: 'boolean', description: 'more than 1,000 wait on it' },
  },
  required: ['waiting', 'more'],
} as const;

export function deadLetterRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;

  const reasonOf = (body: Record<string, unknown>): DeadReason | undefined => {
    const reason = optionalString(body, 'reason', 64);
    if (reason === undefined || reason === '') return undefined;
    if (!(deadReasons as readonly string[]).includes(reason)) {
      throw bad(`reason must be one of ${deadReasons.join(', ')}`);
    }
    return reason as DeadReason;
  };

  /** What narrows "all": a reason, text of the last error, an age (enqueued before). */
  const narrowing = (body: JsonObject) => {
    const reason = reasonOf(body);
    const errorText = optionalString(body, 'error', 1024);
    const enqueuedBeforeMs = optionalInteger(body, 'enqueuedBeforeMs');
    if (enqueuedBeforeMs !== undefined && enqueuedBeforeMs < 0) {
      throw bad('enqueuedBeforeMs must be a time in ms since the epoch (0: no age limit)');
    }
    return {
      ...(reason === undefined ? {} : { reason }),
      ...(errorText === undefined || errorText === '' ? {} : { errorText }),
      ...(enqueuedBeforeMs ? { enqueuedBeforeMs } : {}),
    };
  };

  const selected =
    (action: 'requeue' | 'delete') =>
    async (c: Parameters<RouteSpec['handle']>[0], request: RequestContext) => {
      const queue = pathParam(c, 'queue');
      // A UUID in upper case names the same job; ids that are no UUID match nothing, as before.
      const jobIds = batchIds(await readJsonObject(c), 'jobIds', engine.limits.maxBatchJobs).map(
        (id) => normalizeJobId(id) ?? id,
      );
      const audit = request.audit(`dead_letters.${action}`, `queue:${queue}`);
      const changed =
        action === 'requeue'
          ? await engine.requeueDeadLetters({ queue, jobIds }, audit)
          : await engine.deleteDeadLetters({ queue, jobIds }, audit);
      return c.json({ changed });
    };

  return [
    {
      method: 'get',
      path: '/api/v1/queues/{queue}/dead-letters',
      access: 'viewer',
      tag: 'dead letters',
      summary: "A page of a queue's dead letters, by failure time",
      pathParams: { queue: 'queue name' },
      query: {
        reason: { description: 'only this reason', schema: { type: 'string', enum: [...deadReasons] } },
        error: {
          description:
            'only dead letters whose last error contains this (any case); checked on at most 20,000 per page, in enqueue order, as the jobs list does',
          schema: { type: 'string' },
        },
        enqueuedBeforeMs: {
          description:
            'only dead letters enqueued before this time, in ms since the epoch (older than); 0: no age limit. Checked as `error` is',
          schema: { type: 'integer', minimum: 0 },
        },
        ...pagingQuery,
      },
      response: ref('JobPage'),
      async handle(c) {
        const queue = pathParam(c, 'queue');
        const reason = queryChoice(c, 'reason', deadReasons);
        const order = queryChoice(c, 'order', listOrders);
        const cursor = queryString(c, 'cursor');
        const pageSize = queryPageSize(c, engine.limits.maxPageSize);
        const errorText = queryString(c, 'error', 1024);
        const enqueuedBeforeMs = queryInteger(c, 'enqueuedBeforeMs');
        if ((errorText !== undefined && errorText !== '') || enqueuedBeforeMs) {
          // Error text and age are no index's: the jobs list's bounded scan of the queue's dead letters answers them.
          const page = await engine.browseJobs({
            queue,
            state: 'dead',
            ...(errorText === undefined || errorText === '' ? {} : { errorText }),
            ...(enqueuedBeforeMs ? { enqueuedBeforeMs } : {}),
            ...(reason === undefined ? {} : { deadReason: reason }),
            ...(order === undefined ? {} : { order }),
            ...(cursor === undefined ? {} : { cursor }),
            ...(pageSize === undefined ? {} : { pageSize }),
          });
          return c.json({ ...page, total: null });
        }
        const page = await engine.listDeadLetterSummaries({
          queue,
          ...(reason === undefined ? {} : { reason }),
          ...(order === undefined ? {} : { order }),
          ...(cursor === undefined ? {} : { cursor }),
          ...(pageSize === undefined ? {} : { pageSize }),
        });
        return c.json(page);
      },
    },
    {
      method: 'get',
      path: '/api/v1/queues/{queue}/top-errors',
      access: 'viewer',
      tag: 'dead letters',
      summary: "A queue's dead letters grouped by last error (class, first line), the most jobs first",
      description:
        'Reads the newest 50,000 dead letters (`complete`: that was all of them). Requeue or delete a group with `POST /api/v1/bulk/requeue` or `/api/v1/bulk/delete` and `errorClass` + `errorLine`.',
      pathParams: { queue: 'queue name' },
      query: {
        limit: { description: 'most groups, 1 to 100 (default 20)', schema: { type: 'integer' } },
      },
      response: topErrorsSchema,
      async handle(c) {
        const limit = queryInteger(c, 'limit');
        const top = await engine.topErrors({
          queue: pathParam(c, 'queue'),
          ...(limit === undefined ? {} : { limit }),
        });
        return c.json(top);
      },
    },
    {
      method: 'get',
      path: '/api/v1/queues/{queue}/dead-letters/{jobId}/waiting',
      access: 'viewer',
      tag: 'dead letters',
      summary: 'How many jobs wait on a dead letter: deleting it cancels them',
      description:
        'Jobs that depend on it under `onDependencyFailure: wait` wait for its requeue; a delete cancels them (`cancelled_by` = `dependency:<id> deleted`). Counted up to 1,000: `more` says there are more. 0 for a job that is no dead letter of the queue.',
      pathParams: { queue: 'queue name', jobId: 'the dead letter' },
      response: waitingSchema,
      async handle(c) {
        const id = pathParam(c, 'jobId');
        const counted = await engine.deadLettersWaitedOn({
          queue: pathParam(c, 'queue'),
          jobIds: [normalizeJobId(id) ?? id],
        });
        return c.json(counted);
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/dead-letters/requeue',
      access: roleFor('dead_letters.requeue'),
      tag: 'dead letters',
      summary: 'Requeue selected dead letters with a fresh attempt budget',
      pathParams: { queue: 'queue name' },
      body: jobIdsBody,
      response: ref('Changed'),
      audits: 'dead_letters.requeue',
      handle: selected('requeue'),
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/dead-letters/delete',
      access: roleFor('dead_letters.delete'),
      tag: 'dead letters',
      summary: 'Delete selected dead letters',
      pathParams: { queue: 'queue name' },
      body: jobIdsBody,
      response: ref('Changed'),
      audits: 'dead_letters.delete',
      handle: selected('delete'),
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/dead-letters/requeue-all',
      access: roleFor('dead_letters.requeue_all'),
      tag: 'dead letters',
      summary: "Requeue all of a queue's dead letters (optionally of one reason), in chunks",
      description: requestKeyDescription,
      pathParams: { queue: 'queue name' },
      body: reasonBody,
      response: ref('Changed'),
      audits: 'dead_letters.requeue_all',
      async handle(c, request) {
        const queue = pathParam(c, 'queue');
        const body = await readJsonObject(c);
        const { requestKey } = requestKeyOf(body);
        const changed = await engine.requeueDeadLetters(
          { queue, all: true, ...narrowing(body) },
          request.audit('dead_letters.requeue_all', `queue:${queue}`),
          requestKey,
        );
        return c.json({ changed });
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/dead-letters/delete-all',
      access: roleFor('dead_letters.delete_all'),
      tag: 'dead letters',
      summary: "Delete all of a queue's dead letters (optionally of one reason), in chunks",
      description: `\`confirm\` must repeat the queue name. ${requestKeyDescription}`,
      pathParams: { queue: 'queue name' },
      body: {
        ...reasonBody,
        properties: {
          ...reasonBody.properties,
          confirm: { type: 'string', description: 'the queue name, again' },
        },
        required: ['confirm'],
      },
      response: ref('Changed'),
      audits: 'dead_letters.delete_all',
      async handle(c, request) {
        const queue = pathParam(c, 'queue');
        const body = await readJsonObject(c);
        if (requiredString(body, 'confirm', 256) !== queue) {
          throw bad(`confirm must be the queue name (${queue}) to delete all its dead letters`);
        }
        const { requestKey } = requestKeyOf(body);
        const changed = await engine.deleteDeadLetters(
          { queue, all: true, ...narrowing(body) },
          request.audit('dead_letters.delete_all', `queue:${queue}`),
          requestKey,
        );
        return c.json({ changed });
      },
    },
  ];
}
