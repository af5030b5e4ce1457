/**
 * Jobs: browse a queue by state, find one by id or idempotency key, look at
 * one, and the operator's actions on it (cancel, requeue, dead-letter), plus
 * enqueueing a job by hand.
 */

import type { Context } from 'hono';
import { roleFor } from '../../config/index.ts';
import type { ListOrder } from '../../engine/admin-types.ts';
import { SeppError } from '../../engine/errors.ts';
import { normalizeJobId } from '../../engine/jobs/index.ts';
import type { EnqueueRequest } from '../../engine/types.ts';
import { jobStates } from '../../engine/types.ts';
import { jobDetail } from '../job-view.ts';
import {
  bad,
  optionalInteger,
  optionalString,
  pathParam,
  queryChoice,
  queryPageSize,
  queryString,
  readJsonObject,
  requiredString,
  stringMap,
} from '../request-input.ts';
import type { AdminServices, QueryParamDoc, RouteSpec } from '../route-spec.ts';
import { enqueueBody, ref } from '../schemas.ts';

export const listOrders: readonly ListOrder[] = ['oldest_first', 'newest_first'];

export const pagingQuery: Readonly<Record<string, QueryParamDoc>> = {
  order: {
    description: 'enqueue order (failure order for dead letters)',
    schema: { type: 'string', enum: [...listOrders] },
  },
  cursor: { description: "the previous page's nextCursor", schema: { type: 'string' } },
  limit: {
    description: 'page size: default 50 (none or 0), at most limits.max_page_size',
    schema: { type: 'integer', minimum: 0 },
  },
};

const jobParam = { id: 'job id (a UUID)' } as const;

/** The job id in the path, which must look like one. */
export function jobIdParam(c: Context): string {
  const given = pathParam(c, 'id');
  const id = normalizeJobId(given);
  if (id === null) throw bad(`${JSON.stringify(given.slice(0, 64))} is not a job id (a UUID)`);
  return id;
}

export function jobRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  return [
    {
      method: 'get',
      path: '/api/v1/queues/{queue}/jobs',
      access: 'viewer',
      tag: 'jobs',
      summary: "A page of a queue's jobs in one state, in enqueue order",
      pathParams: { queue: 'queue name' },
      query: {
        state: { description: 'default ready', schema: { type: 'string', enum: [...jobStates] } },
        type: { description: 'only jobs of this type', schema: { type: 'string' } },
        ...pagingQuery,
      },
      response: ref('JobPage'),
      async handle(c) {
        const type = queryString(c, 'type', 256);
        const order = queryChoice(c, 'order', listOrders);
        const cursor = queryString(c, 'cursor');
        const pageSize = queryPageSize(c, engine.limits.maxPageSize);
        const page = await engine.listJobs({
          queue: pathParam(c, 'queue'),
          state: queryChoice(c, 'state', jobStates) ?? 'ready',
          ...(type === undefined ? {} : { type }),
          ...(order === undefined ? {} : { order }),
          ...(cursor === undefined ? {} : { cursor }),
          ...(pageSize === undefined ? {} : { pageSize }),
        });
        return c.json(page);
      },
    },
    {
      method: 'get',
      path: '/api/v1/queues/{queue}/idempotency-keys/{key}',
      access: 'viewer',
      tag: 'jobs',
      summary: 'Find the job an idempotency key names',
      description:
        '`stored` is false when the key is still in its dedup window but its job is gone (acked, cancelled or swept).',
      pathParams: { queue: 'queue name', key: 'idempotency key' },
      response: {
        type: 'object',
        properties: { jobId: { type: 'string' }, stored: { type: 'boolean' } },
        required: ['jobId', 'stored'],
      },
      async handle(c) {
        const queue = pathParam(c, 'queue');
        const key = pathParam(c, 'key');
        const found = await engine.findJobByIdempotencyKey(queue, key);
        if (found === null) throw new SeppError('not_found', `no job in ${queue} has idempotency key ${key}`);
        return c.json(found);
      },
    },
    {
      method: 'get',
      path: '/api/v1/jobs/{id}',
      access: 'viewer',
      tag: 'jobs',
      summary: 'One job: fields, decoded payload (first 64 KiB), attempts with errors, timeline',
      pathParams: jobParam,
      response: ref('JobDetail'),
      handle: async (c) => c.json(jobDetail(await engine.getJob(jobIdParam(c)))),
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{id}/cancel',
      access: roleFor('job.cancel'),
      tag: 'jobs',
      summary: 'Cancel a job that has not finished',
      description:
        'A scheduled or ready job is cancelled at once; for a leased one the worker is told to stop (`state` stays leased until it does, or its lease ends), and it ends cancelled. A dead or completed job is 409.',
      pathParams: jobParam,
      response: ref('CancelResult'),
      audits: 'job.cancel',
      async handle(c, request) {
        const id = jobIdParam(c);
        return c.json(await engine.cancel(id, request.audit('job.cancel', `job:${id}`)));
      },
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{id}/requeue',
      access: roleFor('job.requeue'),
      tag: 'jobs',
      summary: 'Put a dead, completed or cancelled job back to ready, with a fresh attempt budget',
      pathParams: jobParam,
      response: ref('PreviousState'),
      audits: 'job.requeue',
      async handle(c, request) {
        const id = jobIdParam(c);
        return c.json(await engine.requeueJob(id, request.audit('job.requeue', `job:${id}`)));
      },
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{id}/dead-letter',
      access: roleFor('job.dead_letter'),
      tag: 'jobs',
      summary: 'Move a ready or scheduled job to the dead letters (reason dead_lettered)',
      pathParams: jobParam,
      response: ref('PreviousState'),
      audits: 'job.dead_letter',
      async handle(c, request) {
        const id = jobIdParam(c);
        return c.json(await engine.deadLetterJob(id, request.audit('job.dead_letter', `job:${id}`)));
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/jobs',
      access: roleFor('job.enqueue'),
      tag: 'jobs',
      summary: 'Enqueue one job',
      description: 'The audit entry records the type, size and content type, never the payload.',
      pathParams: { queue: 'queue name' },
      body: enqueueBody,
      response: {
        type: 'object',
        properties: { jobId: { type: 'string' }, deduplicated: { type: 'boolean' } },
        required: ['jobId', 'deduplicated'],
      },
      audits: 'job.enqueue',
      async handle(c, request) {
        const queue = pathParam(c, 'queue');
        const job = enqueueRequest(queue, await readJsonObject(c));
        const { jobId, deduplicated } = await engine.enqueue(
          job,
          request.audit('job.enqueue', `queue:${queue}`, {
            type: job.type,
            contentType: job.contentType,
            payloadBytes: job.payload.byteLength,
          }),
        );
        return c.json({ jobId, deduplicated });
      },
    },
  ];
}

function enqueueRequest(queue: string, body: Record<string, unknown>): EnqueueRequest {
  const encoding = optionalString(body, 'payloadEncoding', 16) ?? 'text';
  if (encoding !== 'text' && encoding !== 'base64') throw bad('payloadEncoding must be text or base64');
  const raw = optionalString(body, 'payload', Number.MAX_SAFE_INTEGER) ?? '';
  if (encoding === 'base64' && !/^[A-Za-z0-9+/]*={0,2}$/.test(raw)) throw bad('payload is not valid base64');
  const payload = encoding === 'base64' ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
  const request: EnqueueRequest = {
    queue,
    type: requiredString(body, 'type', 256),
    payload,
    contentType:
      optionalString(body, 'contentType', 255) ??
      (encoding === 'text' ? 'text/plain; charset=utf-8' : 'application/octet-stream'),
  };
  const numbers = ['priority', 'delayMs', 'runAtMs', 'maxAttempts'] as const;
  for (const field of numbers) {
    const value = optionalInteger(body, field);
    if (value !== undefined) request[field] = value;
  }
  const key = optionalString(body, 'idempotencyKey', 1024);
  if (key !== undefined && key !== '') request.idempotencyKey = key;
  const metadata = stringMap(body, 'metadata');
  if (metadata !== undefined) request.metadata = metadata;
  const group = optionalString(body, 'group', 1024);
  if (group !== undefined && group !== '') request.group = group;
  return request;
}
