/**
 * Workflows over HTTP (issue 33), as the gRPC calls of the same names: enqueue a flow (a
 * graph of jobs named in the request, all or none), read or cancel a job's flow, and
 * batches — create, add to, seal, read, cancel. A key scoped to queues may enqueue a flow
 * of its queues (without dependsOn), and no other of these calls: a flow or a batch spans
 * queues. Cancels need the admin role and are audited (`flow.cancel`, `batch.cancel`).
 */
import { batchListQuery, batchStateFilter, flowLimitOf } from '../../api-schema/workflow.ts';
import { refuseDependencies, requireInScope, serverWide } from '../../config/index.ts';
import type { AuditInput } from '../../engine/admin-types.ts';
import { batchCaller, ownerToList } from '../../engine/batches/index.ts';
import { SeppError } from '../../engine/errors.ts';
import { enqueuedBy } from '../../engine/jobs/index.ts';
import type { FlowJob } from '../../engine/types.ts';
import type { BatchInfo } from '../../engine/workflow-types.ts';
import {
  answerItemBytesMax,
  answerItemFramingBytes,
  answerMessageBytesMax,
  boundedMessage,
  fixedAnswerBytesMax,
  itemsAnswerBytes,
  itemsOf,
} from '../answer-bounds.ts';
import { anonymous, type Caller, creatorOf } from '../auth.ts';
import {
  enqueueRequestFromJson,
  enqueueResultToJson,
  indexedRejectionsToJson,
  jobIdFrom,
} from '../job-json.ts';
import type { JsonInput } from '../json-input.ts';
import type { ApiContext, ApiRequest, RouteSpec } from '../route-spec.ts';
import {
  addToBatchRequest,
  batchAddResponse,
  createBatchRequest,
  enqueueFlowRequest,
  enqueueFlowResponse,
  flowResponse,
  getBatchResponse,
  listBatchesResponse,
  sealBatchResponse,
  workflowCancelResponse,
} from '../workflow-schemas.ts';
import { body, queryInteger, queryString } from './request-parts.ts';

const jobIdParam = { jobId: 'the id of any job of the flow (a UUID)' } as const;
const batchIdParam = { batchId: 'the batch id (a UUID)' } as const;

/** Refuses a key scoped to queues: `what` reaches every queue. */
function unscoped(caller: Caller, what: string): void {
  if (caller.scope !== null) throw serverWide(caller, what);
}

function audit(request: ApiRequest, action: string, target: string): AuditInput {
  const actor = request.caller === anonymous ? 'anonymous' : `key:${request.caller.name}`;
  return { actor, action, target, details: { via: 'http' } };
}

export function workflowRoutes(ctx: ApiContext): RouteSpec[] {
  const engine = () => ctx.engine;
  const batchId = (request: ApiRequest) => jobIdFrom(request.params.batchId ?? '', 'batchId', 'batch');
  const jobsOf = (request: ApiRequest) =>
    body(request).has('jobs')
      ? enqueuedBy(
          body(request)
            .objects('jobs')
            .map((job) => enqueueRequestFromJson(job)),
          creatorOf(request.caller),
        )
      : [];

  /** A batch and one result per job added (the engine takes at most limits.max_batch_jobs at once). */
  const batchAddAnswerBytes = (request: ApiRequest) =>
    batchBytesMax +
    itemsAnswerBytes(itemsOf(body(request), 'jobs', engine().limits.maxBatchJobs), answerItemBytesMax);

  return [
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/flows',
      operationId: 'enqueueFlow',
      permission: 'enqueue',
      scope: 'handler',
      tag: 'workflows',
      summary: 'Enqueue a flow: jobs that wait on each other by name, all or none',
      description:
        'Each job has a `name` unique in the request and waits for the jobs it names in `after` (and the ' +
        'stored jobs of its `dependsOn`). The graph is checked (no cycle; limits.max_flow_jobs, ' +
        'max_dependencies_per_job, max_flow_depth), then every job is stored, or none (`rejections`). ' +
        'docs/workflows.md.',
      body: enqueueFlowRequest,
      response: enqueueFlowResponse,
      // One job (its name, at most limits.max_name_length bytes: checked letters, digits and ._:-) or
      // one rejection per job.
      answerBytesMax: (request) => {
        const { maxFlowJobs, maxNameLength } = engine().limits;
        return itemsAnswerBytes(
          itemsOf(body(request), 'jobs', maxFlowJobs),
          Math.max(answerItemBytesMax, answerItemFramingBytes + maxNameLength),
        );
      },
      handle: async (request) => {
        body(request).only(['jobs']);
        const jobs: FlowJob[] = body(request)
          .objects('jobs')
          .map((item) => {
            item.only(['name', 'after', 'job']);
            const job = enqueueRequestFromJson(item.object('job', { required: true })!);
            // In place, not a spread copy: the copy is an object the validation reads several times slower.
            return Object.assign(job, {
              name: item.string('name') ?? '',
              after: item.strings('after', Number.MAX_SAFE_INTEGER),
            });
          });
        requireInScope(
          request.caller,
          jobs.map((job, i) => ({ queue: job.queue, field: `jobs[${i}].job.queue` })),
        );
        refuseDependencies(
          request.caller,
          jobs.map((job) => ({ dependsOn: job.dependsOn ?? [] })),
          'jobs',
          (i) => `jobs[${i}].job.dependsOn`,
        );
        const result = await engine().enqueueFlow(enqueuedBy(jobs, creatorOf(request.caller)));
        return result.committed
          ? { committed: true, jobs: result.jobs, rejections: [] }
          : {
              committed: false,
              jobs: [],
              rejections: indexedRejectionsToJson(result.rejections),
            };
      },
    },
    {
      kind: 'json',
      method: 'GET',
      path: '/v1/jobs/{jobId}/flow',
      operationId: 'getFlow',
      permission: 'read',
      scope: 'none',
      tag: 'workflows',
      summary: "A job's flow: the jobs connected to it through dependencies, either way, and their edges",
      description:
        'In enqueue order, at most `limit` jobs (default and most 20,000) and about 4 MiB of answer, each job ' +
        'with all its edges; `truncated` when there are more, `edgesLimited` when the walk stopped at the ' +
        '100,000 edges one read may read.',
      pathParams: jobIdParam,
      query: {
        limit: {
          description: 'most jobs in the answer',
          schema: { type: 'integer', minimum: 1, maximum: 20000 },
        },
      },
      response: flowResponse,
      errors: ['not_found', 'failed_precondition'],
      handle: async (request) => {
        unscoped(request.caller, 'a flow');
        const limit = flowLimitOf(queryInteger(request, 'limit'));
        const flow = await engine().getFlow(jobIdFrom(request.params.jobId ?? '', 'jobId'), limit);
        return {
          jobs: flow.jobs.map((j) => ({
            jobId: j.id,
            queue: j.queue,
            type: j.type,
            state: j.state,
            name: j.name,
          })),
          edges: flow.edges,
          truncated: flow.truncated,
          edgesLimited: flow.edgesLimited,
        };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/{jobId}/flow/cancel',
      operationId: 'cancelFlow',
      permission: 'admin',
      scope: 'none',
      tag: 'workflows',
      summary: 'Cancel every job of a flow that has not ended, as one act',
      description:
        'Waiting, scheduled and ready jobs at once; the workers of leased ones are told to stop. Audited as ' +
        '`flow.cancel`. A flow of more than 20,000 jobs is refused (429).',
      pathParams: jobIdParam,
      response: workflowCancelResponse,
      errors: ['not_found', 'failed_precondition'],
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        unscoped(request.caller, 'a flow');
        const jobId = jobIdFrom(request.params.jobId ?? '', 'jobId');
        return engine().cancelFlow(jobId, audit(request, 'flow.cancel', `job:${jobId}`));
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/batches',
      operationId: 'createBatch',
      permission: 'enqueue',
      scope: 'none',
      tag: 'workflows',
      summary: 'Create a batch: its completion jobs, its first members, sealed at once if asked',
      description:
        '`onComplete` is enqueued once when the sealed batch has no member left pending, `onSuccess` only if ' +
        'every member completed, `onDeath` once when the first member dies; each gets the counts and member ids ' +
        '(docs/workflows.md#batches).',
      body: createBatchRequest,
      response: batchAddResponse,
      errors: ['failed_precondition'],
      answerBytesMax: batchAddAnswerBytes,
      handle: async (request) => {
        unscoped(request.caller, 'a batch');
        const input = body(request);
        const onComplete = input.object('onComplete');
        const onSuccess = input.object('onSuccess');
        const onDeath = input.object('onDeath');
        const { batch, results } = await engine().createBatch({
          ...(onComplete === undefined ? {} : { onComplete: enqueueRequestFromJson(onComplete) }),
          ...(onSuccess === undefined ? {} : { onSuccess: enqueueRequestFromJson(onSuccess) }),
          ...(onDeath === undefined ? {} : { onDeath: enqueueRequestFromJson(onDeath) }),
          jobs: jobsOf(request),
          seal: input.boolean('seal') === true,
          sealIfAllStored: input.boolean('sealIfAllStored') === true,
          owner: request.caller.name,
        });
        return { batch: boundedBatch(batch), results: results.map(enqueueResultToJson) };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/batches/{batchId}/jobs',
      operationId: 'addToBatch',
      permission: 'enqueue',
      scope: 'none',
      tag: 'workflows',
      summary: "Add jobs to an open batch (or to a sealed one, from a running member with its lease's token)",
      pathParams: batchIdParam,
      body: addToBatchRequest,
      response: batchAddResponse,
      errors: ['not_found', 'failed_precondition'],
      answerBytesMax: batchAddAnswerBytes,
      handle: async (request) => {
        unscoped(request.caller, 'a batch');
        const input = body(request);
        const fromMember = input.string('fromMember');
        const { batch, results } = await engine().addToBatch(batchId(request), jobsOf(request), {
          seal: input.boolean('seal') === true,
          sealIfAllStored: input.boolean('sealIfAllStored') === true,
          ...(fromMember === undefined || fromMember === ''
            ? {}
            : {
                fromMember: jobIdFrom(fromMember, input.name('fromMember')),
                memberToken: memberTokenFrom(input),
              }),
          caller: batchCaller(request.caller),
        });
        return { batch: boundedBatch(batch), results: results.map(enqueueResultToJson) };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/batches/{batchId}/seal',
      operationId: 'sealBatch',
      permission: 'enqueue',
      scope: 'none',
      tag: 'workflows',
      summary: 'Seal a batch: it ends, and enqueues its completion jobs, once no member is pending',
      pathParams: batchIdParam,
      response: sealBatchResponse,
      errors: ['not_found', 'failed_precondition'],
      answerBytesMax: () => fixedAnswerBytesMax + batchBytesMax,
      handle: async (request) => {
        unscoped(request.caller, 'a batch');
        return {
          batch: boundedBatch(await engine().sealBatch(batchId(request), batchCaller(request.caller))),
        };
      },
    },
    {
      kind: 'json',
      method: 'GET',
      path: '/v1/batches/{batchId}',
      operationId: 'getBatch',
      permission: 'read',
      scope: 'none',
      tag: 'workflows',
      summary: "A batch's state and counts, and a page of its members in the order they were added",
      pathParams: batchIdParam,
      query: {
        membersAfter: {
          description: 'the position of the last member of the page before',
          schema: { type: 'integer', minimum: 0 },
        },
        membersLimit: {
          description:
            'members in the answer, default 100, at most limits.max_page_size (more is answered with that many); ' +
            '0: the batch alone. The next page starts after the last position; the batch’s `members` says how many there are',
          schema: { type: 'integer', minimum: 0 },
        },
      },
      response: getBatchResponse,
      errors: ['not_found', 'failed_precondition'],
      handle: async (request) => {
        unscoped(request.caller, 'a batch');
        const after = queryInteger(request, 'membersAfter');
        const limit = queryInteger(request, 'membersLimit');
        const { batch, members } = await engine().getBatch(batchId(request), {
          ...(after === undefined ? {} : { afterPosition: after }),
          ...(limit === undefined ? {} : { limit }),
        });
        return { batch, members };
      },
    },
    {
      kind: 'json',
      method: 'GET',
      path: '/v1/batches',
      operationId: 'listBatches',
      permission: 'read',
      scope: 'none',
      tag: 'workflows',
      summary: 'A page of batches, newest first, by state and owner',
      description:
        'An ended batch is listed until the sweep deletes it, limits.batch_retention_ms after its end. ' +
        'A key that is not admin lists only the batches it created.',
      query: {
        state: batchListQuery.state,
        owner: {
          description: 'only the batches this API key created (its name); another key’s takes the admin role',
          schema: { type: 'string' },
        },
        pageSize: batchListQuery.pageSize,
        pageToken: {
          description: 'nextPageToken of the page before',
          schema: { type: 'string' },
        },
      },
      response: listBatchesResponse,
      errors: ['failed_precondition'],
      handle: async (request) => {
        unscoped(request.caller, 'batches');
        const state = batchStateFilter(queryString(request, 'state', 16));
        const { caller } = request;
        const owner = ownerToList(batchCaller(caller), queryString(request, 'owner', 256));
        const pageSize = queryInteger(request, 'pageSize');
        const pageToken = queryString(request, 'pageToken', 128);
        const page = await engine().listBatches({
          ...state,
          ...(owner === undefined ? {} : { owner }),
          ...(pageSize === undefined ? {} : { pageSize }),
          ...(pageToken === undefined ? {} : { cursor: pageToken }),
        });
        return { batches: page.batches, nextPageToken: page.nextCursor };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/batches/{batchId}/cancel',
      operationId: 'cancelBatch',
      permission: 'admin',
      scope: 'none',
      tag: 'workflows',
      summary: 'Cancel every member of a batch that has not ended, as one act',
      description:
        'A sealed batch then ends and enqueues its onComplete job (not onSuccess). Audited as `batch.cancel`.',
      pathParams: batchIdParam,
      response: workflowCancelResponse,
      errors: ['not_found', 'failed_precondition'],
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        unscoped(request.caller, 'a batch');
        const id = batchId(request);
        return engine().cancelBatch(id, audit(request, 'batch.cancel', `batch:${id}`));
      },
    },
  ];
}

/**
 * The most a batch a write answers takes: fixed fields (ids, counts, times, states, its owner: a
 * key's name, at most 64 letters, digits and `._@-`) and its completionError, cut to
 * answerMessageBytesMax.
 */
const batchBytesMax = fixedAnswerBytesMax + answerMessageBytesMax;

/** A batch as a write answers it: its completionError cut to answerMessageBytesMax. */
function boundedBatch(batch: BatchInfo): BatchInfo {
  return batch.completionError === null
    ? batch
    : { ...batch, completionError: boundedMessage(batch.completionError) };
}

/**
 * `fromMemberToken`, which goes with `fromMember`: the token of the member's lease. Without it
 * (a client that sends only `fromMemberAttempt`, which proves nothing) the add is refused.
 */
function memberTokenFrom(input: JsonInput): string {
  const token = input.string('fromMemberToken');
  if (token === undefined || token === '') {
    throw new SeppError(
      'permission_denied',
      `${input.name('fromMemberToken')}: required with fromMember, the leaseToken of the member's current lease, ` +
        'which only its worker is handed: only the worker running the member adds to its sealed batch ' +
        '(fromMemberAttempt no longer proves it)',
    );
  }
  return token;
}
