/** JSON Schema of a schedule in the API (docs/schedules.md). */
import type { JsonSchema } from './route-spec.ts';
import { int, msOrNull, str, strOrNull } from './schema-primitives.ts';

export const schedule: JsonSchema = {
  type: 'object',
  description: 'a schedule (docs/schedules.md); times in ms since the Unix epoch, null when not set',
  properties: {
    name: str,
    source: { type: 'string', enum: ['config', 'api'] },
    cron: strOrNull,
    intervalMs: { type: ['integer', 'null'] },
    timezone: str,
    template: {
      type: 'object',
      properties: {
        queue: str,
        type: str,
        payload: {
          type: ['object', 'null'],
          description: 'the payload as shown on the job page; null in the list',
        },
        payloadBytes: int,
        contentType: str,
        priority: int,
        metadata: { type: 'object', additionalProperties: str },
        maxAttempts: { type: ['integer', 'null'] },
        leaseMs: { type: ['integer', 'null'] },
        timeoutMs: {
          type: ['integer', 'null'],
          description: "the jobs' hard timeout per attempt; null: the queue's",
        },
      },
      required: ['queue', 'type', 'payload', 'payloadBytes', 'contentType', 'priority', 'metadata'],
    },
    misfire: { type: 'string', enum: ['run_latest', 'skip', 'catch_up'] },
    catchUpMax: int,
    overlap: { type: 'string', enum: ['allow', 'skip'] },
    jitterMs: int,
    startAtMs: msOrNull,
    endAtMs: msOrNull,
    paused: { type: 'boolean' },
    nextTickMs: msOrNull,
    nextRunsMs: { type: 'array', items: int },
    lastTickMs: msOrNull,
    lastRunAtMs: msOrNull,
    lastOutcome: {
      type: ['string', 'null'],
      enum: ['enqueued', 'deduplicated', 'triggered', 'skipped_overlap', 'skipped_misfire', 'rejected', null],
    },
    lastDetail: strOrNull,
    lastJobId: strOrNull,
    ticksEnqueued: int,
    ticksSkipped: int,
    createdAtMs: int,
    updatedAtMs: int,
  },
  required: ['name', 'source', 'timezone', 'template', 'paused', 'nextTickMs', 'nextRunsMs', 'lastOutcome'],
};
