/**
 * The HTTP API's JSON Schemas of workflows (issue 33): a job's links, what a worker gets of
 * its dependencies, flows and batches (FlowJob, Batch, BatchMember in job.proto and
 * admin.proto). schemas.ts puts them in the document's components.
 */
import {
  batchMemberSchema,
  batchSchema,
  edgeState,
  flowMarkers,
  flowNodeSchema,
  jobLinkSchema,
  jobStateOrNull,
} from '../api-schema/workflow.ts';
import type { DependencyPolicy } from '../engine/types.ts';
import {
  indexedRejections,
  type JsonSchema,
  jobId,
  perJobResults,
  ref,
  str,
  strOrNull,
} from './schema-primitives.ts';

export const dependencyPolicies: readonly DependencyPolicy[] = ['cancel', 'run', 'wait'];

const jobLink = jobLinkSchema('jobId');

const dependencyResult: JsonSchema = {
  type: 'object',
  properties: {
    jobId,
    name: strOrNull,
    state: jobStateOrNull,
    result: { description: 'the result as a JSON value, when its content type is JSON' },
    resultBase64: {
      type: 'string',
      contentEncoding: 'base64',
      description: 'the result as base64, otherwise',
    },
    resultContentType: strOrNull,
    resultOmitted: { type: 'boolean', description: 'left out to stay under the limit: read it with getJob' },
  },
  required: ['jobId', 'name', 'state', 'resultContentType', 'resultOmitted'],
};

const flowJob: JsonSchema = {
  type: 'object',
  description: 'A job of a flow: a name unique in the request, the names it waits for, and the job.',
  properties: {
    name: { type: 'string', description: 'same rules as a queue name; the answer maps it to the job id' },
    after: { type: 'array', items: str, description: 'names of jobs of this request it waits for' },
    job: ref('EnqueueJob'),
  },
  required: ['name', 'job'],
  additionalProperties: false,
};

export const workflowComponents: Record<string, JsonSchema> = {
  JobLink: jobLink,
  DependencyResult: dependencyResult,
  FlowJob: flowJob,
  Batch: batchSchema,
};

// ---------------------------------------------------------------- requests and answers

export const enqueueFlowRequest: JsonSchema = {
  type: 'object',
  properties: { jobs: { type: 'array', items: ref('FlowJob') } },
  required: ['jobs'],
  additionalProperties: false,
};

export const enqueueFlowResponse: JsonSchema = {
  type: 'object',
  description: 'Either every job stored (`committed`, one entry per job) or none (`rejections`).',
  properties: {
    committed: { type: 'boolean' },
    jobs: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: str, jobId, deduplicated: { type: 'boolean' } },
        required: ['name', 'jobId', 'deduplicated'],
      },
    },
    rejections: indexedRejections,
  },
  required: ['committed', 'jobs', 'rejections'],
};

export const flowResponse: JsonSchema = {
  type: 'object',
  description:
    'The jobs connected to a job through dependencies, either way, in enqueue order, and their edges.',
  properties: {
    jobs: {
      type: 'array',
      items: flowNodeSchema('jobId'),
    },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        properties: { jobId, dependsOn: jobId, state: edgeState, name: strOrNull },
        required: ['jobId', 'dependsOn', 'state', 'name'],
      },
    },
    ...flowMarkers,
  },
  required: ['jobs', 'edges', 'truncated', 'edgesLimited'],
};

export const workflowCancelResponse: JsonSchema = {
  type: 'object',
  properties: {
    cancelled: { type: 'integer', description: 'jobs cancelled at once (waiting, scheduled, ready)' },
    cancelRequested: { type: 'integer', description: 'leased jobs whose workers were told to stop' },
  },
  required: ['cancelled', 'cancelRequested'],
};

export const createBatchRequest: JsonSchema = {
  type: 'object',
  properties: {
    onComplete: {
      ...ref('EnqueueJob'),
      description: 'enqueued when the batch ends; no dependsOn, idempotencyKey, runAtMs or expiresAtMs',
    },
    onSuccess: {
      ...ref('EnqueueJob'),
      description: 'enqueued when the batch ends only if every member completed',
    },
    onDeath: {
      ...ref('EnqueueJob'),
      description: 'enqueued once, when the first member dies (the rest may still run)',
    },
    jobs: {
      type: 'array',
      items: ref('EnqueueJob'),
      description: 'the first members, each on its own merits',
    },
    seal: { type: 'boolean', description: 'seal it with these jobs' },
    sealIfAllStored: {
      type: 'boolean',
      description:
        'seal it with these jobs only if every one was stored (none refused), else leave it open; ' +
        "ignored with seal; the answer's batch state says which",
    },
  },
  additionalProperties: false,
};

export const addToBatchRequest: JsonSchema = {
  type: 'object',
  properties: {
    jobs: { type: 'array', items: ref('EnqueueJob') },
    seal: { type: 'boolean', description: 'seal the batch after these jobs' },
    sealIfAllStored: {
      type: 'boolean',
      description:
        'seal it after these jobs only if every one was stored (none refused), else leave it open; ' +
        "ignored with seal; the answer's batch state says which. Repeated after its answer was lost, " +
        'an add that sealed is answered again (every job found by its key in this batch)',
    },
    fromMember: {
      type: 'string',
      description:
        'the id of a member running now: it may add to its own sealed batch (with fromMemberToken)',
    },
    fromMemberToken: {
      type: 'string',
      description:
        "with fromMember: the `leaseToken` of the member's current lease, which only its worker was handed; " +
        "without it, or with one that is not that lease's (another job's, an earlier attempt's), the add is refused (403)",
    },
    fromMemberAttempt: {
      type: 'integer',
      deprecated: true,
      description:
        'proves nothing (any key reading jobs sees the attempt) and is not read: fromMember needs fromMemberToken',
    },
  },
  required: ['jobs'],
  additionalProperties: false,
};

export const batchAddResponse: JsonSchema = {
  type: 'object',
  properties: {
    batch: ref('Batch'),
    results: perJobResults,
  },
  required: ['batch', 'results'],
};

export const sealBatchResponse: JsonSchema = {
  type: 'object',
  properties: { batch: ref('Batch') },
  required: ['batch'],
};

export const listBatchesResponse: JsonSchema = {
  type: 'object',
  properties: {
    batches: { type: 'array', items: ref('Batch') },
    nextPageToken: { ...strOrNull, description: 'pass as pageToken for the next page; null on the last' },
  },
  required: ['batches', 'nextPageToken'],
};

export const getBatchResponse: JsonSchema = {
  type: 'object',
  properties: {
    batch: ref('Batch'),
    members: {
      type: 'array',
      items: batchMemberSchema,
    },
  },
  required: ['batch', 'members'],
};
