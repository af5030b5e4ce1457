/**
 * The JSON Schemas of the HTTP API's resources — a job to enqueue, a leased
 * job, a job, an event, an outcome, an error — in the OpenAPI document's
 * components. Each operation's request and answer bodies are in
 * operation-schemas.ts.
 */
import { lifecycleEventKinds } from '../engine/events/lifecycle-event.ts';
import { deadReasons } from '../engine/types.ts';
import { httpStatusOf } from './errors.ts';
import {
  anyJson,
  int,
  int64,
  type JsonSchema,
  jobId,
  ms,
  msOrNull,
  ref,
  rejectionReason,
  state,
  str,
  strOrNull,
} from './schema-primitives.ts';
import { dependencyPolicies, workflowComponents } from './workflow-schemas.ts';

/** The names of `properties` but those an answer leaves out at times: its `required`. */
const allBut = (properties: Record<string, JsonSchema>, absentAtTimes: readonly string[]): string[] =>
  Object.keys(properties).filter((name) => !absentAtTimes.includes(name));

const metadata: JsonSchema = { type: 'object', additionalProperties: str };
const deadReason: JsonSchema = { type: ['string', 'null'], enum: [...deadReasons, null] };

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

const leasedJobProperties: Record<string, JsonSchema> = {
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
  flowLimited: {
    type: 'boolean',
    description:
      'its queue had a flow limit (max_leased, group_max_leased, a rate limit or a group rate limit) ' +
      'when it was leased: a worker that leases ahead of its free slots by default should stop',
  },
  dependencyResults: {
    type: 'array',
    description:
      'what the jobs it depended on ended with (empty for a job without dependencies); above ' +
      'limits.max_dependency_results_bytes in all, `resultOmitted` and no result: read it with getJob',
    items: ref('DependencyResult'),
  },
  batchId: {
    type: ['string', 'null'],
    description:
      'the batch it is a member of, null when none: a member that has not ended adds to it ' +
      '(POST /v1/batches/{batchId}/jobs with `fromMember` and `fromMemberToken`)',
  },
  leaseToken: {
    type: ['string', 'null'],
    description:
      "only for a batch member (null otherwise): this lease's secret token, which only the worker it was " +
      'handed to holds; it proves the member when it adds to its batch (`fromMemberToken`). A new attempt has a new one',
  },
};

const leasedJob: JsonSchema = {
  type: 'object',
  description: 'A leased job (LeasedJob in job.proto). Ack, nack or extend it with its `attempt`.',
  properties: leasedJobProperties,
  // Every field is always there but the payload, in one of its two forms.
  required: allBut(leasedJobProperties, ['payload', 'payloadBase64']),
};

export const progress: JsonSchema = {
  type: ['object', 'null'],
  properties: {
    percent: { type: ['number', 'null'] },
    json: { ...anyJson, description: 'the last JSON document reported, or null' },
    reportedAtMs: ms,
  },
  required: ['percent', 'json', 'reportedAtMs'],
};

export const resultFields: Record<string, JsonSchema> = {
  result: { ...anyJson, description: 'the result as a JSON value, when its content type is JSON' },
  resultBase64: { type: 'string', contentEncoding: 'base64', description: 'the result as base64, otherwise' },
  resultContentType: strOrNull,
};

const jobProperties: Record<string, JsonSchema> = {
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
};

const job: JsonSchema = {
  type: 'object',
  description: 'Everything the server knows about a job (Job in job.proto); absent values are null.',
  properties: jobProperties,
  // Every field is always there (null when it has no value) but the payload and the result,
  // each in one of its two forms.
  required: allBut(jobProperties, ['payload', 'payloadBase64', 'result', 'resultBase64']),
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
        '`batch_ended`, `batch_first_death`: the batch (then `jobId` is its id): id, state, members, pending, completed, dead, cancelled, completeJobId, successJobId, firstDeadId, deathJobId, completionError',
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
  required: ['jobId', 'finished', 'state', 'atMs'],
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
