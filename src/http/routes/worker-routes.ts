/**
 * What workers call: reserve jobs (a long-poll), then ack (with a result),
 * nack (with a delay, or to the dead letters), extend and report progress —
 * each with the lease's attempt, the fencing token. A stale attempt answers
 * 409 `lease_lost`, a job not leased (settled, or its lease expired and nobody
 * holds it) 404 `not_found`, a job cancelled while leased 409 `job_cancelled`:
 * the codes gRPC carries in `sepp-error-code`.
 */
import { ackBatchInScope, leaseScope, requireInScope } from '../../config/index.ts';
import type { Engine } from '../../engine/engine.ts';
import { toSeppError } from '../../engine/errors.ts';
import type { LeasedJob } from '../../engine/types.ts';
import {
  answerItemBytesMax,
  boundedMessage,
  fixedAnswerBytesMax,
  itemsAnswerBytes,
  itemsOf,
} from '../answer-bounds.ts';
import { anonymous } from '../auth.ts';
import { invalid } from '../errors.ts';
import {
  ackFromJson,
  attemptFrom,
  jobIdFrom,
  leasedJobToJson,
  nackDirectiveFromJson,
  progressFromJson,
  progressToJson,
} from '../job-json.ts';
import {
  ackBatchRequest,
  ackBatchResponse,
  ackRequest,
  empty,
  extendRequest,
  extendResponse,
  nackRequest,
  nackResponse,
  progressRequest,
  progressResponse,
  reserveRequest,
  reserveResponse,
} from '../operation-schemas.ts';
import type { ApiContext, ApiRequest, RouteSpec } from '../route-spec.ts';
import { fieldsOf } from '../schema-primitives.ts';
import { body } from './request-parts.ts';

const jobIdParam = { jobId: 'the job id (a UUID)' } as const;
const leaseErrors = ['not_found', 'lease_lost', 'job_cancelled'] as const;

export function workerRoutes(ctx: ApiContext): RouteSpec[] {
  // Read at each call, not here: the OpenAPI document is built from these routes without an engine.
  const engine = () => ctx.engine;
  const jobIdOf = (request: ApiRequest) => jobIdFrom(request.params.jobId ?? '', 'jobId');

  return [
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/reserve',
      operationId: 'reserve',
      permission: 'work',
      longPoll: true,
      scope: 'handler',
      tag: 'workers',
      summary: 'Lease up to maxJobs jobs, waiting up to waitTimeoutMs for one (long-poll)',
      description:
        'Jobs come from the first listed queue that has ready jobs, and so on down the list; an empty list ' +
        'when the wait ended without one (or the server is shutting down). A client that goes away stops ' +
        'waiting at once and is leased nothing. No more jobs are leased than fit `maxResponseBytes` of JSON ' +
        '(default and most: http.max_request_bytes); the others stay ready. When the first job alone does ' +
        'not fit, the answer is 413 `resource_exhausted` naming the job, which stays ready with no attempt counted ' +
        '(no Retry-After: ask again with a larger `maxResponseBytes`).',
      body: reserveRequest,
      response: reserveResponse,
      handle: async (request) => {
        const input = body(request).only(fieldsOf(reserveRequest));
        const queues = input.strings('queues', Number.POSITIVE_INFINITY, { required: true });
        requireInScope(
          request.caller,
          queues.map((queue, i) => ({ queue, field: `queues[${i}]` })),
        );
        const workerId = input.string('workerId') ?? '';
        const jobs = await engine().reserve(
          {
            queues,
            maxJobs: input.integer('maxJobs') ?? 0,
            leaseMs: input.integer('leaseDurationMs') ?? 0,
            waitMs: input.integer('waitTimeoutMs') ?? 0,
            workerId,
            // Never more jobs than the answer holds, each counted as the JSON it is sent as.
            answerBytesMax: reserveAnswerBytes(input.integer('maxResponseBytes') ?? 0, ctx.maxRequestBytes),
            answerBytesOf: (job) => Buffer.byteLength(JSON.stringify(leasedJobToJson(job))) + 1,
            ...(request.caller === anonymous ? {} : { owner: request.caller.name }),
            ...leaseScope(request.caller),
          },
          request.signal,
        );
        // Listed once the request proved valid (the engine checked the queues and the worker id).
        engine().workers.touch({ workerId, address: `http:${request.peer}`, queues });
        if (jobs.length > 0) request.onAnswerLost((partlySent) => giveBackUnsent(engine(), jobs, partlySent));
        return { jobs: jobs.map(leasedJobToJson) };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/{jobId}/ack',
      operationId: 'ack',
      permission: 'work',
      scope: 'job',
      tag: 'workers',
      summary: 'Complete a leased job, optionally with its result',
      description:
        'The result is a JSON value in `result`, or bytes as base64 in `resultBase64`, at most ' +
        'limits.max_result_bytes; it is kept while the queue retains completed jobs and sent in the ' +
        '`completed` event.',
      pathParams: jobIdParam,
      body: ackRequest,
      response: empty,
      errors: leaseErrors,
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        await engine().ack(ackFromJson(body(request), jobIdOf(request)));
        return {};
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/acks',
      operationId: 'ackBatch',
      permission: 'work',
      scope: 'handler',
      tag: 'workers',
      summary: 'Complete many leased jobs, each on its own',
      description: 'One result per ack, in order; at most limits.max_reserve_jobs acks.',
      body: ackBatchRequest,
      response: ackBatchResponse,
      answerBytesMax: (request) =>
        itemsAnswerBytes(itemsOf(body(request), 'acks', engine().limits.maxReserveJobs), answerItemBytesMax),
      handle: async (request) => {
        const acks = body(request)
          .only(['acks'])
          .objects('acks')
          .map((item) =>
            ackFromJson(item, jobIdFrom(item.requiredString('jobId', 64), item.name('jobId')), ['jobId']),
          );
        const outcomes = await ackBatchInScope(engine(), acks, request.caller);
        return {
          results: outcomes.map((o) =>
            o.ok ? { outcome: 'ok', message: '' } : { outcome: o.code, message: boundedMessage(o.message) },
          ),
        };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/{jobId}/nack',
      operationId: 'nack',
      permission: 'work',
      scope: 'job',
      tag: 'workers',
      summary: "Fail an attempt: retry after the queue's backoff, after a delay, or dead-letter now",
      description:
        'A job on its last attempt goes dead (attempts_exhausted) unless dead-lettered; a job whose cancel ' +
        'was asked for ends cancelled.',
      pathParams: jobIdParam,
      body: nackRequest,
      response: nackResponse,
      // failed_precondition: a giveBack that would grow the job's budget past int32.
      errors: [...leaseErrors, 'failed_precondition'],
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        const input = body(request).only(fieldsOf(nackRequest));
        const result = await engine().nack({
          jobId: jobIdOf(request),
          attempt: attemptFrom(input),
          error: input.string('errorMessage') ?? '',
          errorClass: input.string('errorClass') ?? '',
          stack: input.string('errorStack') ?? '',
          directive: nackDirectiveFromJson(input),
        });
        return { state: result.state, runAtMs: result.runAtMs };
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/{jobId}/extend',
      operationId: 'extend',
      permission: 'work',
      scope: 'job',
      tag: 'workers',
      summary: "Push a lease's deadline forward (a heartbeat)",
      pathParams: jobIdParam,
      body: extendRequest,
      response: extendResponse,
      errors: leaseErrors,
      answerBytesMax: () => fixedAnswerBytesMax,
      handle: async (request) => {
        const input = body(request).only(fieldsOf(extendRequest));
        return engine().extend({
          jobId: jobIdOf(request),
          attempt: attemptFrom(input),
          leaseMs: input.integer('leaseDurationMs') ?? 0,
        });
      },
    },
    {
      kind: 'json',
      method: 'POST',
      path: '/v1/jobs/{jobId}/progress',
      operationId: 'reportProgress',
      permission: 'work',
      scope: 'job',
      tag: 'workers',
      summary: 'Report how far along a leased job is (a percentage, a JSON document, or both)',
      description: 'Fenced by the attempt like extend; it does not extend the lease.',
      pathParams: jobIdParam,
      body: progressRequest,
      response: progressResponse,
      errors: leaseErrors,
      // The progress as stored: its JSON at most limits.max_progress_bytes.
      answerBytesMax: () => fixedAnswerBytesMax + engine().limits.maxProgressBytes,
      handle: async (request) => ({
        progress: progressToJson(
          await engine().reportProgress(progressFromJson(body(request), jobIdOf(request))),
        ),
      }),
    },
  ];
}

/**
 * A reserve's jobs whose answer never reached its client whole (refused for the answers its key
 * had not read, or its connection closed first: the write deadline, the client gone): their
 * leases end now instead of when they run out.
 * - Nothing of the answer was written (`partlySent` false): nobody can hold them, so the leases
 *   are undone, the path gRPC takes for a refused Reserve's jobs: each job, fenced by its attempt,
 *   is ready again at its place with its attempt given back and no failure recorded
 *   (engine/leases/undone-lease.ts).
 * - Its writing had begun: the client may have read some of the jobs, with their attempts and
 *   lease tokens, and act on them. Giving the attempt back would lease the job again under the
 *   same attempt and token, which that client could then settle or add with: so each is nacked
 *   to run again at once, its attempt counted, as its lease's end would have counted it.
 */
async function giveBackUnsent(
  engine: Engine,
  jobs: readonly LeasedJob[],
  partlySent: boolean,
): Promise<void> {
  const expected = (error: unknown) => {
    // Ended meanwhile (settled, cancelled), or shutting down: the leases run out instead. Only a
    // bug is told (server.ts logs it).
    const failure = toSeppError(error);
    if (failure.code === 'internal') throw failure;
  };
  if (!partlySent) {
    await engine.undoLeases(jobs.map((job) => ({ jobId: job.id, attempt: job.attempt }))).catch(expected);
    return;
  }
  await Promise.all(
    jobs.map((job) =>
      engine
        .nack({
          jobId: job.id,
          attempt: job.attempt,
          error:
            'leased by an HTTP reserve whose answer was cut before its client had all of it (its ' +
            'connection closed first: http.write_timeout_ms, or the client gone); given back',
          directive: { kind: 'delay', delayMs: 0 },
        })
        .catch(expected),
    ),
  );
}

/** Room the answer's envelope (`{"jobs":[…]}`) takes beside its jobs. */
const answerEnvelopeBytes = 64;

/** A reserve's answer budget: the caller's maxResponseBytes (0: http.max_request_bytes), at most that. */
function reserveAnswerBytes(askedBytes: number, maxRequestBytes: number): number {
  if (askedBytes < 0) throw invalid(`maxResponseBytes is ${askedBytes}; it must be 0 or a positive integer`);
  return Math.min(askedBytes === 0 ? maxRequestBytes : askedBytes, maxRequestBytes) - answerEnvelopeBytes;
}
