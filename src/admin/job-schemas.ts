/** JSON Schemas of jobs in the API: summaries, details, pages, and the bodies that enqueue and change them. */
import { jobStates } from '../engine/types.ts';
import type { JsonSchema } from './route-spec.ts';
import { deadReason, int, msOrNull, str, strOrNull } from './schema-primitives.ts';
import { jobWorkflowFields } from './workflow-schemas.ts';

const jobCommon: Record<string, JsonSchema> = {
  id: { type: 'string', format: 'uuid' },
  seq: int,
  queue: str,
  type: str,
  state: { type: 'string', enum: [...jobStates] },
  priority: { type: 'integer', minimum: 0, maximum: 9 },
  contentType: str,
  attempt: int,
  maxAttempts: int,
  idempotencyKey: strOrNull,
  enqueuedAtMs: int,
  runAtMs: int,
  leaseDeadlineMs: msOrNull,
  leasedAtMs: {
    ...msOrNull,
    description: 'when its latest attempt started (a leased job: how long it has run)',
  },
  workerId: strOrNull,
  lastError: strOrNull,
  deadReason,
  failedAtMs: msOrNull,
  completedAtMs: msOrNull,
  expiresAtMs: msOrNull,
  cancelledAtMs: {
    ...msOrNull,
    description: 'when a cancel was asked for (a leased job may not have stopped yet)',
  },
  cancelledBy: strOrNull,
};

export const jobSummary: JsonSchema = {
  type: 'object',
  properties: { ...jobCommon, payloadBytes: int, group: { type: ['string', 'null'] } },
  required: Object.keys(jobCommon),
};

export const jobDetail: JsonSchema = {
  type: 'object',
  properties: {
    ...jobCommon,
    metadata: { type: 'object', additionalProperties: str },
    traceparent: strOrNull,
    tracestate: strOrNull,
    group: { type: ['string', 'null'], description: "the job's group; null when it has none" },
    outcomeOnly: {
      type: 'boolean',
      description:
        'the job was deleted as it finished and this is only its outcome, kept in memory for ' +
        'limits.finished_outcome_ms: no payload, metadata or enqueue times',
    },
    leasedAtMs: msOrNull,
    timeoutMs: {
      type: ['integer', 'null'],
      description: "the job's own hard timeout per attempt; null: its queue's",
    },
    timeoutAtMs: {
      ...msOrNull,
      description: 'when the current attempt must end (its hard timeout); null unless leased with one',
    },
    debounceKey: {
      type: ['string', 'null'],
      description: 'its debounce key: later enqueues with it replace its content while it waits; null: none',
    },
    debounceUntilMs: {
      ...msOrNull,
      description: 'the latest run time a debounced enqueue may push it to; null: no cap',
    },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          attempt: int,
          atMs: int,
          error: str,
          errorClass: { type: ['string', 'null'], description: 'the class the worker named; null: none' },
          stack: { type: ['string', 'null'], description: 'the stack the worker sent; null: none' },
          stoppedByCancel: {
            type: 'boolean',
            description:
              'the error is how a cancel ended the attempt (the worker stopped, or its lease ran out), not a failure',
          },
        },
        required: ['attempt', 'atMs', 'error', 'errorClass', 'stack', 'stoppedByCancel'],
      },
    },
    payload: {
      type: 'object',
      properties: {
        view: { type: 'string', enum: ['json', 'text', 'hex'] },
        text: str,
        bytes: int,
        truncated: { type: 'boolean', description: 'only the first 64 KiB are shown' },
      },
      required: ['view', 'text', 'bytes', 'truncated'],
    },
    result: {
      type: ['object', 'null'],
      description:
        "a completed job's result (kept while its queue retains completed jobs), shown as the payload is",
      properties: {
        view: { type: 'string', enum: ['json', 'text', 'hex'] },
        text: str,
        bytes: int,
        truncated: { type: 'boolean' },
        contentType: str,
      },
      required: ['view', 'text', 'bytes', 'truncated', 'contentType'],
    },
    progress: {
      type: ['object', 'null'],
      description: 'what the worker last reported while holding the lease; null when it never did',
      properties: {
        percent: { type: ['number', 'null'] },
        json: { type: ['string', 'null'], description: 'a JSON document, as text' },
        atMs: int,
      },
      required: ['percent', 'json', 'atMs'],
    },
    timeline: {
      type: 'array',
      items: {
        type: 'object',
        properties: { atMs: int, event: str, detail: str },
        required: ['atMs', 'event', 'detail'],
      },
    },
    ...jobWorkflowFields,
  },
  required: [
    ...Object.keys(jobCommon),
    'metadata',
    'group',
    'errors',
    'payload',
    'result',
    'progress',
    'timeline',
  ],
};

export const jobPage: JsonSchema = {
  type: 'object',
  properties: {
    items: { type: 'array', items: { $ref: '#/components/schemas/JobSummary' } },
    nextCursor: strOrNull,
    total: {
      type: ['integer', 'null'],
      description: 'jobs in this state (from the counters); null with a type filter',
    },
  },
  required: ['items', 'nextCursor', 'total'],
};

export const previousState: JsonSchema = {
  type: 'object',
  properties: { previousState: { type: 'string', enum: [...jobStates] } },
  required: ['previousState'],
};

export const cancelResult: JsonSchema = {
  type: 'object',
  properties: {
    previousState: { type: 'string', enum: [...jobStates] },
    state: {
      type: 'string',
      enum: ['cancelled', 'leased'],
      description: 'leased: the worker was told to stop, and the job becomes cancelled when it does',
    },
  },
  required: ['previousState', 'state'],
};

/**
 * The jobs a request selects by id. No maxItems: the document is built at start, and a reload
 * may change limits.max_batch_jobs, which the handlers read at each call.
 */
export const jobIdsProperty: JsonSchema = {
  type: 'array',
  items: str,
  minItems: 1,
  description: 'at most limits.max_batch_jobs',
};

export const jobIdsBody: JsonSchema = {
  type: 'object',
  properties: { jobIds: jobIdsProperty },
  required: ['jobIds'],
};

export const enqueueBody: JsonSchema = {
  type: 'object',
  properties: {
    type: str,
    payload: { type: 'string', description: 'the payload, as text or base64 (payloadEncoding)' },
    payloadEncoding: { type: 'string', enum: ['text', 'base64'], default: 'text' },
    contentType: {
      type: 'string',
      description: 'default text/plain for text, application/octet-stream for base64',
    },
    priority: { type: 'integer', minimum: 0, maximum: 9 },
    delayMs: int,
    runAtMs: int,
    maxAttempts: int,
    idempotencyKey: str,
    metadata: { type: 'object', additionalProperties: str },
    group: { type: 'string', description: "the job's group (docs/flow-control.md); empty or absent: none" },
  },
  required: ['type', 'payload'],
};
