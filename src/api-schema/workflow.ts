/**
 * Workflows (issue 33) as both JSON APIs answer about them: a job's state or null, an edge's
 * state, a link to a job it depends on or that depends on it, a batch (the engine's BatchInfo,
 * field for field) and a batch's member.
 */
import { maxFlowGraphJobs, maxFlowWalkEdges } from '../engine/control/index.ts';
import { SeppError } from '../engine/errors.ts';
import { jobStates } from '../engine/types.ts';
import { type BatchState, batchStates } from '../engine/workflow-types.ts';
import type { QueryParamDoc } from './openapi.ts';
import { int, type JsonSchema, msOrNull, strOrNull, uuid } from './primitives.ts';

export const jobStateOrNull: JsonSchema = {
  type: ['string', 'null'],
  enum: [...jobStates, null],
  description: 'null once the job was swept',
};

export const edgeState: JsonSchema = {
  type: 'string',
  enum: ['pending', 'completed', 'failed'],
  description: 'failed: the dependency failed and the edge counted it (run or cancel policy)',
};

/** A job this job depends on, or one that depends on it; the admin API names its id `id`, the HTTP API `jobId`. */
export const jobLinkSchema = (idField: 'id' | 'jobId'): JsonSchema => ({
  type: 'object',
  properties: {
    [idField]: uuid,
    queue: strOrNull,
    type: strOrNull,
    state: jobStateOrNull,
    edge: edgeState,
    name: {
      type: ['string', 'null'],
      description: "the dependency's name in its flow; null when named by id",
    },
  },
  required: [idField, 'queue', 'type', 'state', 'edge', 'name'],
});

/** A job of a flow (GetFlow); the admin API names its id `id`, the HTTP API `jobId`. */
export const flowNodeSchema = (idField: 'id' | 'jobId'): JsonSchema => ({
  type: 'object',
  properties: {
    [idField]: uuid,
    queue: { type: 'string' },
    type: { type: 'string' },
    state: { type: 'string', enum: [...jobStates] },
    name: { ...strOrNull, description: 'its name in the flow that stored it; null for a job no flow named' },
  },
  required: [idField, 'queue', 'type', 'state', 'name'],
});

/** What says a flow's answer is partial, in both JSON APIs' flow answers. */
export const flowMarkers: Record<'truncated' | 'edgesLimited', JsonSchema> = {
  truncated: { type: 'boolean', description: 'the flow has more jobs than the answer holds (or may have)' },
  edgesLimited: {
    type: 'boolean',
    description: `the walk read as many edges as one read may (${maxFlowWalkEdges.toLocaleString('en-US')}) and stopped: a flow that dense is shown in part, whatever \`limit\` asks`,
  },
};

export const batchMemberSchema: JsonSchema = {
  type: 'object',
  properties: {
    jobId: uuid,
    position: { type: 'integer', description: 'the order it was added in, from 0' },
    memberState: { type: 'string', enum: ['pending', 'completed', 'dead', 'cancelled'] },
    jobState: jobStateOrNull,
  },
  required: ['jobId', 'position', 'memberState', 'jobState'],
};

export const batchSchema: JsonSchema = {
  type: 'object',
  properties: {
    id: uuid,
    state: { type: 'string', enum: [...batchStates] },
    createdAtMs: int,
    sealedAtMs: msOrNull,
    endedAtMs: msOrNull,
    members: { type: 'integer', description: 'jobs ever added' },
    pending: { type: 'integer', description: 'members not ended yet' },
    completed: int,
    dead: int,
    cancelled: int,
    hasOnComplete: { type: 'boolean' },
    hasOnSuccess: { type: 'boolean' },
    hasOnDeath: { type: 'boolean' },
    completeJobId: { type: ['string', 'null'], description: 'the onComplete job the end enqueued' },
    successJobId: {
      type: ['string', 'null'],
      description: 'the onSuccess job (only if every member completed)',
    },
    firstDeadId: {
      type: ['string', 'null'],
      description: 'the member whose death was counted first (null while none died)',
    },
    deathJobId: {
      type: ['string', 'null'],
      description: 'the onDeath job the first death enqueued',
    },
    completionError: {
      type: ['string', 'null'],
      description: 'why a completion job could not be enqueued (its queue refused it)',
    },
    owner: {
      type: 'string',
      description: 'the name of the API key that created it (`anonymous` without API keys)',
    },
  },
  required: [
    'id',
    'state',
    'createdAtMs',
    'sealedAtMs',
    'endedAtMs',
    'members',
    'pending',
    'completed',
    'dead',
    'cancelled',
    'hasOnComplete',
    'hasOnSuccess',
    'hasOnDeath',
    'completeJobId',
    'successJobId',
    'firstDeadId',
    'deathJobId',
    'completionError',
    'owner',
  ],
};

/**
 * The batch list's filter as both APIs take it (admin `GET /api/v1/batches`: `state`, `limit`;
 * HTTP `GET /v1/batches`: `state`, `pageSize`), checked once. A page size goes to the engine
 * as given: its check and default are those of every name page (engine/name-pages.ts: absent
 * or 0 is 100, gRPC ListBatches' and the SDKs' default; at most limits.max_page_size).
 */
export const batchListQuery = {
  state: {
    description: 'only batches in this state',
    schema: { type: 'string', enum: [...batchStates] },
  },
  pageSize: {
    description: 'batches per page: default 100 (none or 0), at most limits.max_page_size',
    schema: { type: 'integer', minimum: 0 },
  },
} as const satisfies Record<string, QueryParamDoc>;

/** A batch list's `state` as a query gave it: none when absent or empty; not a state is invalid_argument. */
export function batchStateFilter(state: string | undefined): { state?: BatchState } {
  if (state === undefined || state === '') return {};
  const known = batchStates.find((s) => s === state);
  if (known === undefined) {
    throw new SeppError(
      'invalid_argument',
      `state: ${JSON.stringify(state)} is no batch state; use ${batchStates.join(', ')}`,
    );
  }
  return { state: known };
}

/**
 * A flow's `limit` (most jobs in the answer) as a query or GetFlow gave it: none for absent or 0,
 * which reads as the default (the most); below 0 or above the most is invalid_argument naming
 * `limit`, as a list's page size.
 */
export function flowLimitOf(limit: number | undefined): number | undefined {
  if (limit === undefined || limit === 0) return undefined;
  if (limit < 0 || limit > maxFlowGraphJobs) {
    throw new SeppError(
      'invalid_argument',
      `limit is ${limit}; it must be an integer from 1 to ${maxFlowGraphJobs} (the most jobs one flow answer lists), or 0 for the default`,
    );
  }
  return limit;
}
