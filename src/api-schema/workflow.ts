/**
 * Workflows (issue 33) as both JSON APIs answer about them: a job's state or null, an edge's
 * state, a link to a job it depends on or that depends on it, a batch (the engine's BatchInfo,
 * field for field) and a batch's member.
 */
import { jobStates } from '../engine/types.ts';
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
    state: { type: 'string', enum: ['open', 'sealed', 'ended'] },
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
    completeJobId: { type: ['string', 'null'], description: 'the onComplete job the end enqueued' },
    successJobId: {
      type: ['string', 'null'],
      description: 'the onSuccess job (only if every member completed)',
    },
    completionError: {
      type: ['string', 'null'],
      description: 'why a completion job could not be enqueued at the end (its queue refused it)',
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
    'completeJobId',
    'successJobId',
    'completionError',
    'owner',
  ],
};
