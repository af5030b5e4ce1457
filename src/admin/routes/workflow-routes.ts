/**
 * Workflows (issue 33): a job's flow — the jobs connected to it through dependencies,
 * either way, with their edges — and a batch with its counts and members; an operator
 * cancels either as one act (every job not ended yet), audited as gRPC's CancelFlow and
 * CancelBatch are. A store without workflows answers 412 naming its kind.
 */
import type { Context } from 'hono';
import { batchListQuery, batchStateFilter, flowLimitOf } from '../../api-schema/workflow.ts';
import { roleFor } from '../../config/index.ts';
import { normalizeJobId } from '../../engine/jobs/index.ts';
import { bad, pathParam, queryInteger, queryPageSize, queryString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import { jobIdParam } from './job-routes.ts';

const jobParam = { id: 'the id of any job of the flow (a UUID)' } as const;
const batchParam = { id: 'batch id (a UUID)' } as const;

/** The batch id in the path, which must look like one. */
function batchIdParam(c: Context): string {
  const given = pathParam(c, 'id');
  const id = normalizeJobId(given);
  if (id === null) throw bad(`${JSON.stringify(given.slice(0, 64))} is not a batch id (a UUID)`);
  return id;
}

/** A members cursor: the position of the last member of the page before. */
function positionCursor(c: Context): number | undefined {
  const cursor = queryString(c, 'cursor', 32);
  if (cursor === undefined) return undefined;
  if (!/^\d{1,15}$/.test(cursor)) throw bad('cursor must be the nextCursor of the page before');
  return Number(cursor);
}

export function workflowRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  return [
    {
      method: 'get',
      path: '/api/v1/jobs/{id}/flow',
      access: 'viewer',
      tag: 'workflows',
      summary: "A job's flow: the jobs connected to it through dependencies, either way, and their edges",
      description:
        'Jobs in enqueue order, at most `limit` (default and most: 20,000) and about 4 MiB of answer, each job ' +
        'with all its edges; `truncated` says when the flow has more, `edgesLimited` when its walk stopped at ' +
        'the 100,000 edges one read may read.',
      pathParams: jobParam,
      query: {
        limit: {
          description: 'most jobs in the answer',
          schema: { type: 'integer', minimum: 1, maximum: 20000 },
        },
      },
      response: ref('Flow'),
      async handle(c) {
        const limit = queryInteger(c, 'limit');
        if (limit !== undefined && limit < 1) throw bad('limit must be at least 1');
        return c.json(await engine.getFlow(jobIdParam(c), flowLimitOf(limit)));
      },
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{id}/flow/cancel',
      access: roleFor('flow.cancel'),
      tag: 'workflows',
      summary: 'Cancel every job of a flow that has not ended, as one act',
      description:
        'Waiting, scheduled and ready jobs are cancelled at once; the workers of leased ones are told to stop. A flow of more than 20,000 jobs is refused (429): cancel its jobs by id or with a bulk cancel.',
      pathParams: jobParam,
      response: ref('WorkflowCancelResult'),
      audits: 'flow.cancel',
      async handle(c, request) {
        const id = jobIdParam(c);
        return c.json(await engine.cancelFlow(id, request.audit('flow.cancel', `job:${id}`)));
      },
    },
    {
      method: 'get',
      path: '/api/v1/batches',
      access: 'viewer',
      tag: 'workflows',
      summary: 'A page of batches, newest first, by state and owner (the API key that created them)',
      description:
        'An ended batch is listed until the sweep deletes it, limits.batch_retention_ms after its end.',
      query: {
        state: batchListQuery.state,
        owner: { description: 'only the batches this API key created', schema: { type: 'string' } },
        cursor: { description: "the previous page's nextCursor", schema: { type: 'string' } },
        limit: batchListQuery.pageSize,
      },
      response: ref('BatchList'),
      async handle(c) {
        const owner = queryString(c, 'owner', 256);
        const cursor = queryString(c, 'cursor', 128);
        const limit = queryPageSize(c, engine.limits.maxPageSize);
        const page = await engine.listBatches({
          ...batchStateFilter(queryString(c, 'state', 16)),
          ...(owner === undefined ? {} : { owner }),
          ...(limit === undefined ? {} : { pageSize: limit }),
          ...(cursor === undefined ? {} : { cursor }),
        });
        return c.json({ batches: page.batches, nextCursor: page.nextCursor });
      },
    },
    {
      method: 'get',
      path: '/api/v1/batches/{id}',
      access: 'viewer',
      tag: 'workflows',
      summary: 'A batch: its state and counts, and a page of its members in the order they were added',
      pathParams: batchParam,
      query: {
        cursor: { description: "the previous page's nextCursor", schema: { type: 'string' } },
        limit: {
          description: 'members per page, default 100, at most 1000',
          schema: { type: 'integer', minimum: 0, maximum: 1000 },
        },
      },
      response: ref('BatchPage'),
      async handle(c) {
        const afterPosition = positionCursor(c);
        const limit = queryInteger(c, 'limit') ?? 100;
        if (limit < 0) throw bad('limit must not be negative');
        const { batch, members } = await engine.getBatch(batchIdParam(c), {
          ...(afterPosition === undefined ? {} : { afterPosition }),
          limit,
        });
        const last = members.at(-1);
        const nextCursor = last !== undefined && members.length === limit ? String(last.position) : null;
        return c.json({ batch, members, nextCursor });
      },
    },
    {
      method: 'post',
      path: '/api/v1/batches/{id}/cancel',
      access: roleFor('batch.cancel'),
      tag: 'workflows',
      summary: 'Cancel every member of a batch that has not ended, as one act',
      description:
        'Members are cancelled as one job is; a sealed batch ends once its last member has, and enqueues its on_complete job (not on_success).',
      pathParams: batchParam,
      response: ref('WorkflowCancelResult'),
      audits: 'batch.cancel',
      async handle(c, request) {
        const id = batchIdParam(c);
        return c.json(await engine.cancelBatch(id, request.audit('batch.cancel', `batch:${id}`)));
      },
    },
  ];
}
