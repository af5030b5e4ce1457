/** JSON Schema of the job history in the API (GET /api/v1/history; src/engine/history/). */
import { historyWindows } from '../engine/history/index.ts';
import type { JsonSchema } from './route-spec.ts';
import { int, str } from './schema-primitives.ts';

const msOrNone: JsonSchema = { type: ['number', 'null'], description: 'ms; null when no attempt ended' };

const figures = {
  completed: { type: 'integer', description: 'attempts acked' },
  failed: { type: 'integer', description: 'attempts that failed (nack or lease expiry), retried or not' },
  dead: { type: 'integer', description: 'jobs that went dead, for any reason' },
  failureRate: {
    type: ['number', 'null'],
    description: 'failed / (completed + failed); null when no attempt ended',
  },
  waitP50Ms: {
    ...msOrNone,
    description: 'median wait from due (enqueue, run-at or retry) to start, ms, within 9 %',
  },
  waitP95Ms: { ...msOrNone, description: '95th percentile of that wait, ms, within 9 %' },
  runP50Ms: { ...msOrNone, description: 'median run time, start to ack or failure, ms, within 9 %' },
  runP95Ms: { ...msOrNone, description: '95th percentile of the run time, ms, within 9 %' },
} satisfies Record<string, JsonSchema>;
const figureKeys = Object.keys(figures);

export const history: JsonSchema = {
  type: 'object',
  description:
    'What jobs did over a window, from the history the server writes to its store once a minute. A bucket with coveredMs 0 is no data (no server ran then), not zero.',
  properties: {
    window: { type: 'string', enum: [...historyWindows] },
    bucketMs: { type: 'integer', description: '60000 (window 1h) or 3600000 (24h, 7d)' },
    fromMs: { type: 'integer', description: 'the figures cover [fromMs, toMs), ms since the Unix epoch' },
    toMs: { type: 'integer', description: 'the end of the last whole minute' },
    coveredMs: { type: 'integer', description: 'how much of the window a server ran and counted' },
    firstDataMs: { type: ['integer', 'null'], description: 'the first bucket with data; null: none' },
    buckets: {
      type: 'array',
      items: {
        type: 'object',
        properties: { startMs: int, coveredMs: int, completed: int, failed: int, dead: int },
        required: ['startMs', 'coveredMs', 'completed', 'failed', 'dead'],
      },
    },
    total: { type: 'object', properties: figures, required: figureKeys },
    queues: {
      type: 'array',
      items: { type: 'object', properties: { queue: str, ...figures }, required: ['queue', ...figureKeys] },
    },
    types: {
      type: 'array',
      items: {
        type: 'object',
        properties: { queue: str, type: str, ...figures },
        required: ['queue', 'type', ...figureKeys],
      },
    },
    maxSeries: {
      type: 'integer',
      description: "(queue, type) pairs a server keeps apart; past it they count under '(other)'",
    },
  },
  required: [
    'window',
    'bucketMs',
    'fromMs',
    'toMs',
    'coveredMs',
    'firstDataMs',
    'buckets',
    'total',
    'queues',
    'types',
    'maxSeries',
  ],
};
