/**
 * JSON Schemas of workflows in the API (issue 33): a job's links, a flow's graph, a batch's
 * members (a link, a batch and a member are src/api-schema/workflow.ts, the HTTP API's too).
 */
import {
  batchMemberSchema,
  edgeState,
  flowMarkers,
  flowNodeSchema,
  jobLinkSchema,
} from '../api-schema/workflow.ts';
import type { JsonSchema } from './route-spec.ts';
import { strOrNull, uuid } from './schema-primitives.ts';

/** A job this job depends on, or one that depends on it (GetJob's links). */
export const jobLink = jobLinkSchema('id');

/** The fields a job detail has when it is in a workflow. */
export const jobWorkflowFields: Record<string, JsonSchema> = {
  dependencies: {
    type: 'array',
    items: { $ref: '#/components/schemas/JobLink' },
    description: 'the jobs it depends on, in enqueue order; absent for a job without depends_on',
  },
  dependents: {
    type: 'array',
    items: { $ref: '#/components/schemas/JobLink' },
    description: 'up to 100 jobs that depend on it, oldest first; absent when none does',
  },
  batchId: { ...uuid, description: 'the batch it is a member of; absent when none' },
};

export const flowGraph: JsonSchema = {
  type: 'object',
  description:
    'The jobs connected to a job through dependencies, either way, in enqueue order, and the edges between them.',
  properties: {
    jobs: {
      type: 'array',
      items: flowNodeSchema('id'),
    },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          jobId: { type: 'string', description: 'the job that waits' },
          dependsOn: { type: 'string', description: 'the job it waits on' },
          state: edgeState,
          name: strOrNull,
        },
        required: ['jobId', 'dependsOn', 'state', 'name'],
      },
    },
    ...flowMarkers,
  },
  required: ['jobs', 'edges', 'truncated', 'edgesLimited'],
};

export const batchList: JsonSchema = {
  type: 'object',
  properties: {
    batches: { type: 'array', items: { $ref: '#/components/schemas/Batch' } },
    nextCursor: {
      type: ['string', 'null'],
      description: 'pass as cursor for the next page; null at the end',
    },
  },
  required: ['batches', 'nextCursor'],
};

export const batchPage: JsonSchema = {
  type: 'object',
  properties: {
    batch: { $ref: '#/components/schemas/Batch' },
    members: {
      type: 'array',
      items: batchMemberSchema,
    },
    nextCursor: {
      type: ['string', 'null'],
      description: 'pass as cursor for the next members; null at the end',
    },
  },
  required: ['batch', 'members', 'nextCursor'],
};

export const workflowCancelResult: JsonSchema = {
  type: 'object',
  properties: {
    cancelled: { type: 'integer', description: 'jobs cancelled at once (waiting, scheduled, ready)' },
    cancelRequested: {
      type: 'integer',
      description: 'leased jobs whose workers were told to stop: they end cancelled when their attempt ends',
    },
  },
  required: ['cancelled', 'cancelRequested'],
};
