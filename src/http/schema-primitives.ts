/**
 * The building blocks of the HTTP API's JSON Schemas, shared by the resource schemas
 * (schemas.ts), the operations' bodies (operation-schemas.ts) and the workflow schemas
 * (workflow-schemas.ts).
 */
import { int, type JsonSchema, str, uuid } from '../api-schema/primitives.ts';
import { jobStates } from '../engine/types.ts';

// The blocks the admin API uses too are defined once, in src/api-schema/.
export { int, type JsonSchema, msOrNull, str, strOrNull } from '../api-schema/primitives.ts';

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/** The property names a request schema lists: the fields its reader accepts. */
export function fieldsOf(schema: JsonSchema): string[] {
  const properties = schema.properties;
  if (typeof properties !== 'object' || properties === null)
    throw new Error('bug: a schema without properties');
  return Object.keys(properties);
}

/** A 64-bit integer: a JSON number, or a string of digits (proto3's JSON form). */
export const int64 = (description: string): JsonSchema => ({
  type: ['integer', 'string'],
  pattern: '^-?[0-9]+$',
  description: `${description} (an integer, or a string of digits)`,
});
export const ms: JsonSchema = { type: 'integer', description: 'ms since the Unix epoch' };
export const anyJson: JsonSchema = { description: 'any JSON value' };
export const jobId: JsonSchema = uuid;
export const state: JsonSchema = { type: 'string', enum: [...jobStates] };
export const rejectionReason: JsonSchema = {
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

/** A best-effort enqueue's answer: one result per job, in the request's order. */
export const perJobResults: JsonSchema = {
  type: 'array',
  description: 'one per job, in order: `accepted` or `rejection`',
  items: {
    type: 'object',
    properties: { accepted: ref('EnqueueAccepted'), rejection: ref('JobRejection') },
  },
};

/** The rejections of an all-or-none enqueue (EnqueueAtomic, EnqueueFlow): every failing job by its index. */
export const indexedRejections: JsonSchema = {
  type: 'array',
  items: {
    type: 'object',
    properties: { index: int, reason: rejectionReason, message: str },
    required: ['index', 'reason', 'message'],
  },
};
