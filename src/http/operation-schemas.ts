/**
 * The request and answer bodies of the HTTP API's operations (the resources they
 * name are in schemas.ts). The request schemas are also what the handlers accept:
 * a request reader refuses any field its schema does not list (`fieldsOf(schema)`),
 * so the document and the code cannot disagree on which fields exist.
 */
import {
  anyJson,
  indexedRejections,
  int64,
  type JsonSchema,
  jobId,
  ms,
  msOrNull,
  perJobResults,
  ref,
  state,
  str,
} from './schema-primitives.ts';
import { progress, resultFields } from './schemas.ts';

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
    giveBack: {
      type: 'boolean',
      description:
        'true: the job never started — its lease is undone: ready again with no attempt counted (its attempt number kept, its maxAttempts one larger, so this lease stays stale), rate-limit tokens given back; the error fields are ignored',
    },
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
    results: perJobResults,
  },
  required: ['results'],
};

export const enqueueAtomicResponse: JsonSchema = {
  type: 'object',
  properties: {
    committed: { type: 'boolean' },
    results: { type: 'array', items: ref('EnqueueAccepted') },
    rejections: indexedRejections,
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
