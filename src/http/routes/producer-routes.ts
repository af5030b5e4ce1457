/**
 * What producers call: enqueue one job, a best-effort batch or an
 * all-or-nothing batch; read a job; wait for its outcome; cancel it (the
 * admin role, as CancelJob over gRPC). Semantics and validation are the
 * engine's, the same for every transport.
 */
import { refuseDependencies, requireInScope, scopeJobLinks } from '../../config/index.ts';
import { enqueuedBy } from '../../engine/jobs/index.ts';
import { answerItemBytesMax, fixedAnswerBytesMax, itemsAnswerBytes, itemsOf } from '../answer-bounds.ts';
import { anonymous, creatorOf } from '../auth.ts';
import { EnqueueCoalescer } from '../enqueue-coalescer.ts';
import {
  acceptedToJson,
  enqueueRequestFromJson,
  enqueueResultToJson,
  indexedRejectionsToJson,
  jobIdFrom,
  jobToJson,
} from '../job-json.ts';
import {
  cancelResponse,
  enqueueAtomicResponse,
  enqueueBatchRequest,
  enqueueBatchResponse,
  getJobResponse,
} from '../operation-schemas.ts';
import { waitForOutcome } from '../outcome-wait.ts';
import type { ApiContext, ApiRequest, RouteSpec } from '../route-spec.ts';
import { ref } from '../schema-primitives.ts';
import { body, queryInteger } from './request-parts.ts';

const jobIdParam = { jobId: 'the job id (a UUID)' } as const;

export function producerRoutes(ctx: ApiContext): RouteSpec[] {
  // Read at each call, not here: the OpenAPI document is built from these routes without an engine.
  const engine = () => ctx.engine;
  const coalescer = new EnqueueCoalescer(
    (requests) => engine().enqueueBatch(requests),
    () => engine().limits.maxBatchJobs,
  );
  /** The jobs of a batch, each of a queue the caller's key may use. */
  const jobsOf = (request: ApiRequest) => {
    const jobs = enqueuedBy(
      body(request).objects('jobs').map(enqueueRequestFromJson),
      creatorOf(request.caller),
    );
    requireInScope(
      request.caller,
      jobs.map((job, i) => ({ queue: job.queue, field: `jobs[${i}].queue` })),
    );
    refuseDependencies(
      request.caller,
      jobs.map((job) => ({ dependsOn: job.dependsOn ?? [] })),
      'jobs',
      (i) => `jobs[${i}].dependsOn`,
    );
    return jobs;
  };
  /** A batch's answer: one result (or rejection) per job, each at most answerItemBytesMax. */
  const batchAnswerBytes = (request: ApiRequest) =>
    itemsAnswerBytes(itemsOf(body(request), 'jobs', engine().limits.maxBatchJobs), answerItemBytesMax);

  return [
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs',
      operationId: 'enqueue',
      permission: 'enqueue',
      scope: 'handler',
      tag: 'producers',
      summary: 'Enqueue one job',
      description:
        "A refused job answers with its reason's status (400, 404 unknown queue, 409 type not allowed, 429 queue " +
        'full) and `error.rejectionReason`; nothing is stored.',
      body: ref('EnqueueJob'),
      response: ref('EnqueueAccepted'),
      errors: ['not_found', 'failed_precondition'],
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        const job = enqueueRequestFromJson(body(request));
        enqueuedBy([job], creatorOf(request.caller));
        requireInScope(request.caller, [{ queue: job.queue, field: 'queue' }]);
        refuseDependencies(request.caller, [{ dependsOn: job.dependsOn ?? [] }], 'job', () => 'dependsOn');
        return acceptedToJson(await coalescer.enqueue(job));
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/batch',
      operationId: 'enqueueBatch',
      permission: 'enqueue',
      scope: 'handler',
      tag: 'producers',
      summary: 'Enqueue many jobs, each on its own merits',
      description: 'One result per job, in order: `accepted`, or `rejection` (nothing stored for that job).',
      body: enqueueBatchRequest,
      response: enqueueBatchResponse,
      answerBytesMax: batchAnswerBytes,
      handle: async (request) => {
        body(request).only(['jobs']);
        const results = await engine().enqueueBatch(jobsOf(request));
        return { results: results.map(enqueueResultToJson) };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/atomic',
      operationId: 'enqueueAtomic',
      permission: 'enqueue',
      scope: 'handler',
      tag: 'producers',
      summary: 'Enqueue many jobs, all or none',
      description:
        'Either every job is stored (`committed`, one result per job) or none is (`rejections`, every ' +
        'failing index with its reason); both answer 200.',
      body: enqueueBatchRequest,
      response: enqueueAtomicResponse,
      answerBytesMax: batchAnswerBytes,
      handle: async (request) => {
        body(request).only(['jobs']);
        const result = await engine().enqueueAtomic(jobsOf(request));
        return result.committed
          ? { committed: true, results: result.results.map(acceptedToJson), rejections: [] }
          : {
              committed: false,
              results: [],
              rejections: indexedRejectionsToJson(result.rejections),
            };
      },
    },
    {
      kind: 'json',
      method: 'GET',
      path: '/v1/jobs/{jobId}',
      operationId: 'getJob',
      permission: 'read',
      scope: 'job',
      tag: 'producers',
      summary: "A job's state, attempts, errors, result and progress",
      pathParams: jobIdParam,
      response: getJobResponse,
      errors: ['not_found'],
      handle: async (request) => ({
        job: jobToJson(
          scopeJobLinks(
            request.caller,
            await engine().getJob(jobIdFrom(request.params.jobId ?? '', 'jobId')),
          ),
        ),
      }),
    },
    {
      kind: 'json',
      method: 'GET',
      path: '/v1/jobs/{jobId}/outcome',
      operationId: 'waitJob',
      permission: 'read',
      longPoll: true,
      scope: 'job',
      tag: 'producers',
      summary: "Wait for a job's outcome (long-poll)",
      description:
        'Answers as soon as the job is completed (with its result), dead or cancelled, or after `waitMs` with ' +
        '`finished: false` and the state it is in (ask again). 404 when there is no such job — also for one ' +
        "that ended and is no longer kept (completed jobs are kept only for their queue's " +
        'completed_retention_ms, default 0) and whose outcome is no longer in the event backlog.',
      pathParams: jobIdParam,
      query: {
        waitMs: {
          description:
            'how long to wait, in ms; 0 answers at once; at most limits.max_wait_ms (default 60 s)',
          schema: { type: 'integer', minimum: 0 },
        },
      },
      response: ref('JobOutcome'),
      errors: ['not_found'],
      handle: (request) =>
        waitForOutcome(
          ctx,
          jobIdFrom(request.params.jobId ?? '', 'jobId'),
          queryInteger(request, 'waitMs') ?? 0,
          request.signal,
          request.caller.scope,
          ctx.eventOwner(request.caller),
          request.caller.name,
        ),
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/{jobId}/cancel',
      operationId: 'cancelJob',
      permission: 'admin',
      scope: 'job',
      tag: 'producers',
      summary: 'Cancel a job',
      description:
        "A waiting job is cancelled at once; a leased one is asked to stop (its worker's next ack or extend " +
        'answers 409 job_cancelled) and ends cancelled. Recorded in the audit log as `job.cancel`.',
      pathParams: jobIdParam,
      response: cancelResponse,
      errors: ['not_found', 'failed_precondition'],
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        const jobId = jobIdFrom(request.params.jobId ?? '', 'jobId');
        const result = await engine().cancel(jobId, {
          actor: request.caller === anonymous ? 'anonymous' : `key:${request.caller.name}`,
          action: 'job.cancel',
          target: `job:${jobId}`,
          details: { via: 'http' },
        });
        return { previousState: result.previousState, state: result.state };
      },
    },
  ];
}
