/**
 * The JSON Schemas of the HTTP API's bodies, in the OpenAPI document's
 * components. The request schemas are also what the handlers accept: a
 * request reader refuses any field its schema does not list
 * (`fieldsOf(schema)`), so the document and the code cannot disagree on
 * which fields exist.
 */
import { lifecycleEventKinds } from '../engine/events/lifecycle-event.ts';
import { deadReasons, jobStates } from '../engine/types.ts';
import { httpStatusOf } from './errors.ts';
import { dependencyPolicies, workflowComponents } from './workflow-schemas.ts';

/** JSON Schema, as OpenAPI 3.1 uses it. */
export type JsonSchema = Record<string, unknown>;

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** The property names a request schema lists: the fields its reader accepts. */
export function fieldsOf(schema: JsonSchema): string[] {
  const properties = schema.properties;
  if (typeof properties !== 'object' || properties === null)
    throw new Error('bug: a schema without properties');
  return Object.keys(properties);
}

const str: JsonSchema = { type: 'string' };
const strOrNull: JsonSchema = { type: ['string', 'null'] };
const int: JsonSchema = { type: 'integer' };
/** A 64-bit integer: a JSON number, or a string of digits (proto3's JSON form). */
const int64 = (description: string): JsonSchema => ({
  type: ['integer', 'string'],
  pattern: '^-?[0-9]+$',
  description: `${description} (an integer, or a string of digits)`,
});
const ms: JsonSchema = { type: 'integer', description: 'ms since the Unix epoch' };
const msOrNull: JsonSchema = { type: ['integer', 'null'], description: 'ms since the Unix epoch' };
const anyJson: JsonSchema = { description: 'any JSON value' };
const metadata: JsonSchema = { type: 'object', additionalProperties: str };
const jobId: JsonSchema = { type: 'string', format: 'uuid' };
const state: JsonSchema = { type: 'string', enum: [...jobStates] };
const deadReason: JsonSchema = { type: ['string', 'null'], enum: [...deadReasons, null] };
const rejectionReason: JsonSchema = {
  type: 'string',
  enum: [
    'unknown_queue',
    'payload_too_large',
    'invalid_name',
    'metadata_too_large',
    'scheduled_too_far',
    'queue_full',
    'job_type_not_allowed',
    'invalid_job',
    'unknown_dependency',
    'dependency_failed',
    'dependencies_unsupported',
  ],
};

const payloadFields = (what: string): Record<string, JsonSchema> => ({
  payload: { ...anyJson, description: `the ${what} as a JSON value, when its content type is JSON` },
  payloadBase64: {
    type: 'string',
    contentEncoding: 'base64',
    description: `the ${what} as base64, otherwise`,
  },
});

const enqueueJob: JsonSchema = {
  type: 'object',
  description:
    'A job to enqueue (EnqueueJob in job.proto). Only queue and type are required. The payload is a JSON ' +
    'value in `payload` (content type application/json unless another JSON type is given), or any bytes ' +
    'as base64 in `payloadBase64`; absent: an empty payload.',
  properties: {
    queue: str,
    type: str,
    payload: { ...anyJson, description: 'the payload as a JSON value, stored byte for byte as sent' },
    payloadBase64: { type: 'string', contentEncoding: 'base64', description: 'the payload as base64' },
    contentType: { type: 'string', description: 'MIME type; default application/json with `payload`' },
    priority: { type: 'integer', minimum: 0, maximum: 9 },
    runAtMs: int64('when the job may run, ms since the Unix epoch; exclusive with delayMs'),
    delayMs: int64('run this long after the enqueue, in ms; exclusive with runAtMs'),
    maxAttempts: { type: 'integer', minimum: 0, maximum: 1000, description: "0: the queue's max_attempts" },
    idempotencyKey: str,
    metadata,
    traceparent: str,
    tracestate: str,
    expiresAtMs: int64('not handed out at or after this time; exclusive with ttlMs'),
    ttlMs: int64('not handed out once this long has passed since the enqueue'),
    timeoutMs: int64(
      "hard execution timeout of each attempt, in ms from its lease; 0: the queue's default_timeout_ms",
    ),
    uniqueWhileActive: { type: 'boolean' },
    group: str,
    debounceKey: {
      type: 'string',
      description:
        'a waiting, never-leased job of the queue with this key absorbs the enqueue (docs/protocol.md, Debounce)',
    },
    debounceMs: int64('with debounceKey: run this long after the last enqueue with the key; default 0'),
    debounceMaxMs: int64(
      'with debounceKey: the longest the job may be pushed back from its first enqueue; 0: no cap',
    ),
    dependsOn: {
      type: 'array',
      items: jobId,
      description:
        'ids of stored jobs this job waits for: it is stored `waiting` and released when the last completes ' +
        '(docs/workflows.md); at most limits.max_dependencies_per_job',
    },
    onDependencyFailure: {
      type: 'string',
      enum: [...dependencyPolicies],
      description:
        'when a dependency fails (dead, cancelled): cancel this job (default), run it anyway, or wait',
    },
  },
  required: ['queue', 'type'],
  additionalProperties: false,
};

const accepted: JsonSchema = {
  type: 'object',
  properties: {
    jobId,
    deduplicated: { type: 'boolean' },
    debounced: {
      type: 'boolean',
      description: 'a waiting job with the same debounceKey absorbed it: jobId is that job',
    },
  },
  required: ['jobId', 'deduplicated', 'debounced'],
};

const rejection: JsonSchema = {
  type: 'object',
  properties: { reason: rejectionReason, message: str },
  required: ['reason', 'message'],
};

const leasedJob: JsonSchema = {
  type: 'object',
  description: 'A leased job (LeasedJob in job.proto). Ack, nack or extend it with its `attempt`.',
  properties: {
    jobId,
    queue: str,
    type: str,
    ...payloadFields('payload'),
    contentType: str,
    priority: int,
    attempt: {
      type: 'integer',
      description: 'the fencing token: send it back on ack, nack, extend, progress',
    },
    maxAttempts: int,
    leaseDeadlineMs: ms,
    enqueuedAtMs: ms,
    runAtMs: ms,
    metadata,
    traceparent: strOrNull,
    tracestate: strOrNull,
    idempotencyKey: strOrNull,
    lastError: strOrNull,
    group: strOrNull,
    timeoutAtMs: msOrNull,
    dependencyResults: {
      type: 'array',
      description:
        'what the jobs it depended on ended with (empty for a job without dependencies); above ' +
        'limits.max_dependency_results_bytes in all, `resultOmitted` and no result: read it with getJob',
      items: ref('DependencyResult'),
    },
  },
  required: ['jobId', 'queue', 'type', 'contentType', 'attempt', 'leaseDeadlineMs'],
};

const progress: JsonSchema = {
  type: ['object', 'null'],
  properties: {
    percent: { type: ['number', 'null'] },
    json: { ...anyJson, description: 'the last JSON document reported, or null' },
    reportedAtMs: ms,
  },
};

const resultFields: Record<string, JsonSchema> = {
  result: { ...anyJson, description: 'the result as a JSON value, when its content type is JSON' },
  resultBase64: { type: 'string', contentEncoding: 'base64', description: 'the result as base64, otherwise' },
  resultContentType: strOrNull,
};

const job: JsonSchema = {
  type: 'object',
  description: 'Everything the server knows about a job (Job in job.proto); absent values are null.',
  properties: {
    jobId,
    queue: str,
    type: str,
    state,
    priority: int,
    ...payloadFields('payload'),
    payloadBytes: int,
    contentType: str,
    attempt: int,
    maxAttempts: int,
    idempotencyKey: strOrNull,
    metadata,
    traceparent: strOrNull,
    tracestate: strOrNull,
    enqueuedAtMs: ms,
    runAtMs: ms,
    leasedAtMs: msOrNull,
    leaseDeadlineMs: msOrNull,
    workerId: strOrNull,
    lastError: strOrNull,
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          attempt: int,
          atMs: ms,
          error: str,
          errorClass: {
            ...strOrNull,
            description: "the class the worker named (nack's errorClass); null: none",
          },
          errorStack: {
            ...strOrNull,
            description: "the stack the worker sent (nack's errorStack); null: none",
          },
        },
        required: ['attempt', 'atMs', 'error', 'errorClass', 'errorStack'],
      },
    },
    deadReason,
    failedAtMs: msOrNull,
    completedAtMs: msOrNull,
    expiresAtMs: msOrNull,
    timeoutMs: { type: ['integer', 'null'], description: "the job's own timeout; null: the queue's" },
    timeoutAtMs: msOrNull,
    debounceKey: strOrNull,
    debounceUntilMs: msOrNull,
    cancelledAtMs: msOrNull,
    cancelledBy: strOrNull,
    ...resultFields,
    progress,
    group: strOrNull,
    dependencies: {
      type: 'array',
      items: ref('JobLink'),
      description: 'the jobs it waits on (depends_on), in enqueue order; empty for a job without',
    },
    dependents: {
      type: 'array',
      items: ref('JobLink'),
      description: 'up to 100 jobs waiting on it, oldest first',
    },
    batchId: { type: ['string', 'null'], description: 'the batch it is a member of; null when none' },
    outcomeOnly: {
      type: 'boolean',
      description:
        'True when the job was deleted as it finished and this is only its outcome, kept in memory for ' +
        'limits.finished_outcome_ms (default 5 minutes; not across a restart): id, queue, type, state, ' +
        'attempt, when it ended, the result, lastError and deadReason, cancelledBy. The payload is empty; ' +
        'metadata, errors and the rest are not kept.',
    },
  },
  required: ['jobId', 'queue', 'type', 'state', 'attempt'],
};

const event: JsonSchema = {
  type: 'object',
  description:
    'A job lifecycle event (JobEvent in events.proto), the `data` of one Server-Sent Event; its `id` is ' +
    '`<streamId>:<sequence>`. Fields beyond the common ones depend on the kind.',
  properties: {
    sequence: int,
    kind: { type: 'string', enum: [...lifecycleEventKinds] },
    atMs: ms,
    jobId,
    queue: str,
    type: str,
    attempt: int,
    state: str,
    runAtMs: ms,
    priority: int,
    leaseDeadlineMs: ms,
    workerId: strOrNull,
    progress,
    retained: { type: 'boolean' },
    ...resultFields,
    error: strOrNull,
    deadReason,
    previousState: str,
    batch: {
      type: 'object',
      description:
        '`batch_ended`: the batch (then `jobId` is its id): id, state, members, pending, completed, dead, cancelled, completeJobId, successJobId, completionError',
    },
  },
  required: ['sequence', 'kind', 'atMs', 'jobId', 'queue', 'type', 'attempt'],
};

const outcome: JsonSchema = {
  type: 'object',
  description:
    'Where a job ended, or that it has not yet: `finished` false means the wait timed out (ask again).',
  properties: {
    jobId,
    finished: { type: 'boolean' },
    state,
    atMs: msOrNull,
    ...resultFields,
    error: strOrNull,
    deadReason,
  },
  required: ['jobId', 'finished', 'state'],
};

const error: JsonSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: Object.keys(httpStatusOf) },
        message: str,
        rejectionReason: { ...rejectionReason, description: "a single job's rejection (enqueue of one job)" },
      },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
};

export const components: Record<string, JsonSchema> = {
  ...workflowComponents,
  EnqueueJob: enqueueJob,
  EnqueueAccepted: accepted,
  JobRejection: rejection,
  LeasedJob: leasedJob,
  Job: job,
  JobEvent: event,
  JobOutcome: outcome,
  Error: error,
};

// --------------------------------------------------------------- request bodies

export const enqueueBatchRequest: JsonSchema = {
  type: 'object',
  properties: { jobs: { type: 'array', items: ref('EnqueueJob') } },
  required: ['jobs'],
  additionalProperties: false,
};

const settle = {
  attempt: { type: ['integer', 'string'], description: "the lease's attempt (fencing token)" },
};

export const ackRequest: JsonSchema = {
  type: 'object',
  properties: {
    ...settle,
    ...resultFields,
    resultContentType: { type: 'string', description: 'default application/json with `result`' },
  },
  required: ['attempt'],
  additionalProperties: false,
};

export const ackBatchRequest: JsonSchema = {
  type: 'object',
  properties: {
    acks: {
      type: 'array',
      items: {
        type: 'object',
        properties: { jobId, ...(ackRequest.properties as Record<string, JsonSchema>) },
        required: ['jobId', 'attempt'],
      },
    },
  },
  required: ['acks'],
  additionalProperties: false,
};

export const nackRequest: JsonSchema = {
  type: 'object',
  properties: {
    ...settle,
    errorMessage: { type: 'string', description: "what went wrong, kept in the job's error history" },
    errorClass: {
      type: 'string',
      maxLength: 256,
      description:
        "the error's class or name as the job's code threw it (at most 256 characters, no control characters); kept with the attempt, grouped on by top errors",
    },
    errorStack: {
      type: 'string',
      description: "the error's stack trace; cut to max_error_bytes (8 KiB). Only what the job's code threw",
    },
    backoff: { type: 'boolean', description: "retry after the queue's backoff (the default)" },
    retryDelayMs: int64('retry after exactly this delay, in ms'),
    deadLetter: { type: 'boolean', description: 'true: dead-letter now, whatever attempts are left' },
  },
  required: ['attempt'],
  additionalProperties: false,
};

export const extendRequest: JsonSchema = {
  type: 'object',
  properties: {
    ...settle,
    leaseDurationMs: int64("new lease length from now, in ms; 0: the queue's default_lease_ms"),
  },
  required: ['attempt'],
  additionalProperties: false,
};

export const progressRequest: JsonSchema = {
  type: 'object',
  properties: {
    ...settle,
    percent: { type: 'number', minimum: 0, maximum: 100 },
    json: {
      ...anyJson,
      description: 'a small JSON document (a step, counts), at most limits.max_progress_bytes',
    },
  },
  required: ['attempt'],
  additionalProperties: false,
};

export const reserveRequest: JsonSchema = {
  type: 'object',
  properties: {
    queues: { type: 'array', items: str, description: 'in order of preference' },
    maxJobs: { type: 'integer', description: '0 or absent: 1; above limits.max_reserve_jobs: clamped' },
    leaseDurationMs: int64("lease length; 0: each queue's default_lease_ms"),
    waitTimeoutMs: int64(
      'how long to wait for a job (long-poll); 0 answers at once; clamped to limits.max_wait_ms',
    ),
    workerId: str,
    maxResponseBytes: int64(
      'the most JSON bytes the answer may hold; 0 or absent: http.max_request_bytes, larger values are clamped to it',
    ),
  },
  required: ['queues'],
  additionalProperties: false,
};

// --------------------------------------------------------------- answers

export const enqueueBatchResponse: JsonSchema = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      description: 'one per job, in order: `accepted` or `rejection`',
      items: {
        type: 'object',
        properties: { accepted: ref('EnqueueAccepted'), rejection: ref('JobRejection') },
      },
    },
  },
  required: ['results'],
};

export const enqueueAtomicResponse: JsonSchema = {
  type: 'object',
  properties: {
    committed: { type: 'boolean' },
    results: { type: 'array', items: ref('EnqueueAccepted') },
    rejections: {
      type: 'array',
      items: {
        type: 'object',
        properties: { index: int, reason: rejectionReason, message: str },
        required: ['index', 'reason', 'message'],
      },
    },
  },
  required: ['committed', 'results', 'rejections'],
};

export const ackBatchResponse: JsonSchema = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          outcome: { type: 'string', enum: ['ok', 'not_found', 'lease_lost', 'job_cancelled'] },
          message: str,
        },
        required: ['outcome', 'message'],
      },
    },
  },
  required: ['results'],
};

export const empty: JsonSchema = { type: 'object', properties: {} };

export const nackResponse: JsonSchema = {
  type: 'object',
  properties: {
    state: { type: 'string', enum: ['ready', 'scheduled', 'dead', 'cancelled'] },
    runAtMs: msOrNull,
  },
  required: ['state', 'runAtMs'],
};

export const extendResponse: JsonSchema = {
  type: 'object',
  properties: { leaseDeadlineMs: ms },
  required: ['leaseDeadlineMs'],
};

export const progressResponse: JsonSchema = {
  type: 'object',
  properties: { progress },
  required: ['progress'],
};

export const cancelResponse: JsonSchema = {
  type: 'object',
  properties: { previousState: state, state },
  required: ['previousState', 'state'],
};

export const reserveResponse: JsonSchema = {
  type: 'object',
  properties: { jobs: { type: 'array', items: ref('LeasedJob') } },
  required: ['jobs'],
};

export const getJobResponse: JsonSchema = {
  type: 'object',
  properties: { job: ref('Job') },
  required: ['job'],
};
