/**
 * JSON Schemas of the API's bodies, for the OpenAPI document. Route
 * declarations refer to them with ref('Name'). Jobs, queues and schedules have
 * their own files (job-schemas.ts, queue-schemas.ts, schedule-schemas.ts).
 */
import { batchSchema } from '../api-schema/workflow.ts';
import { history } from './history-schemas.ts';
import { cancelResult, jobDetail, jobPage, jobSummary, previousState } from './job-schemas.ts';
import { overview, pushStatus, queue, rates } from './queue-schemas.ts';
import type { JsonSchema } from './route-spec.ts';
import { schedule } from './schedule-schemas.ts';
import { int, msOrNull, stateCounts, str, strOrNull } from './schema-primitives.ts';
import { adminRoles } from './types.ts';
import { batchList, batchPage, flowGraph, jobLink, workflowCancelResult } from './workflow-schemas.ts';

export { enqueueBody, jobIdsBody } from './job-schemas.ts';

export const ref = (name: keyof typeof components): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

export const components = {
  Error: {
    type: 'object',
    properties: {
      error: {
        type: 'object',
        properties: { code: str, message: str },
        required: ['code', 'message'],
      },
    },
    required: ['error'],
  },
  Session: {
    type: 'object',
    properties: {
      authenticated: { type: 'boolean' },
      open: {
        type: 'boolean',
        description: 'true when login is off (loopback address, no users configured)',
      },
      user: strOrNull,
      role: { type: ['string', 'null'], enum: [...adminRoles, null] },
      csrfToken: {
        type: ['string', 'null'],
        description: 'send it back in the X-CSRF-Token header of every mutation',
      },
      expiresAtMs: msOrNull,
    },
    required: ['authenticated', 'open', 'user', 'role', 'csrfToken', 'expiresAtMs'],
  },
  StateCounts: stateCounts,
  Queue: queue,
  PushStatus: pushStatus,
  JobSummary: jobSummary,
  JobDetail: jobDetail,
  JobPage: jobPage,
  AuditEntry: {
    type: 'object',
    properties: { id: int, atMs: int, actor: str, action: str, target: str, details: { type: 'object' } },
    required: ['id', 'atMs', 'actor', 'action', 'target', 'details'],
  },
  AuditPage: {
    type: 'object',
    properties: {
      items: { type: 'array', items: { $ref: '#/components/schemas/AuditEntry' } },
      nextCursor: strOrNull,
    },
    required: ['items', 'nextCursor'],
  },
  Overview: overview,
  History: history,
  Schedule: schedule,
  Rates: rates,
  Changed: {
    type: 'object',
    properties: { changed: int },
    required: ['changed'],
  },
  PreviousState: previousState,
  CancelResult: cancelResult,
  JobLink: jobLink,
  Flow: flowGraph,
  Batch: batchSchema,
  BatchList: batchList,
  BatchPage: batchPage,
  WorkflowCancelResult: workflowCancelResult,
} satisfies Record<string, JsonSchema>;
