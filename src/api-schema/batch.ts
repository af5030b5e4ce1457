/**
 * A batch (issue 33) as both JSON APIs answer with it: the engine's BatchInfo, field for
 * field (GET /api/v1/batches/{id} of the admin API; the batch calls of the HTTP API).
 */
import { int, type JsonSchema, msOrNull, uuid } from './primitives.ts';

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
  ],
};
