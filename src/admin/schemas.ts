/**
 * JSON Schemas of the API's bodies, for the OpenAPI document. Route
 * declarations refer to them with ref('Name').
 */
import { settingSources } from '../engine/settings.ts';
import { deadReasons, jobStates } from '../engine/types.ts';
import type { JsonSchema } from './route-spec.ts';
import { adminRoles } from './types.ts';

export const ref = (name: keyof typeof components): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

const int: JsonSchema = { type: 'integer' };
const str: JsonSchema = { type: 'string' };
const msOrNull: JsonSchema = { type: ['integer', 'null'], description: 'ms since the Unix epoch' };
const strOrNull: JsonSchema = { type: ['string', 'null'] };
const deadReason: JsonSchema = {
  type: ['string', 'null'],
  enum: [...deadReasons, null],
};

export const stateCounts: JsonSchema = {
  type: 'object',
  properties: Object.fromEntries(jobStates.map((s) => [s, int])),
  required: [...jobStates],
};

const jobCommon: Record<string, JsonSchema> = {
  id: { type: 'string', format: 'uuid' },
  seq: int,
  queue: str,
  type: str,
  state: { type: 'string', enum: [...jobStates] },
  priority: { type: 'integer', minimum: 0, maximum: 9 },
  contentType: str,
  attempt: int,
  maxAttempts: int,
  idempotencyKey: strOrNull,
  enqueuedAtMs: int,
  runAtMs: int,
  leaseDeadlineMs: msOrNull,
  workerId: strOrNull,
  lastError: strOrNull,
  deadReason,
  failedAtMs: msOrNull,
  completedAtMs: msOrNull,
  expiresAtMs: msOrNull,
  cancelledAtMs: {
    ...msOrNull,
    description: 'when a cancel was asked for (a leased job may not have stopped yet)',
  },
  cancelledBy: strOrNull,
};

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
  Queue: {
    type: 'object',
    properties: {
      name: str,
      paused: { type: 'boolean' },
      counts: stateCounts,
      oldestReadyAgeMs: { type: ['integer', 'null'] },
      waitingWorkers: int,
      throttledWorkers: {
        type: 'integer',
        description:
          'waiting reserves a limit (max_leased, a rate limit, group limits) holds back from ready jobs',
      },
      readyGroups: { type: 'integer', description: 'groups with ready jobs, counted up to 1,000' },
      readyGroupsCapped: { type: 'boolean', description: 'true when there are more groups than readyGroups' },
      settings: {
        type: 'object',
        description: 'the effective settings (defaults, the config file, then run-time overrides)',
      },
      settingSources: {
        type: 'object',
        description: 'where each setting (flat camelCase key) comes from',
        additionalProperties: { type: 'string', enum: [...settingSources] },
      },
      fileSettings: {
        type: 'object',
        description: 'the settings without run-time overrides (flat camelCase keys): what a reset gives back',
      },
      settingValues: {
        type: 'array',
        description: 'every setting by its config-file name, with its value, source and the file value',
        items: {
          type: 'object',
          properties: {
            key: { ...str, description: 'as in the config file, e.g. max_attempts' },
            value: { description: 'the effective value, in the unit the name says' },
            text: { ...str, description: 'the value as one would type it, e.g. 30s' },
            source: { type: 'string', enum: [...settingSources] },
            fileValue: { description: 'the value without a run-time override' },
            fileText: str,
            meaning: {
              type: ['string', 'null'],
              description: 'what the value does where the number alone does not say it, e.g. no limit',
            },
            derivedFrom: {
              type: ['string', 'null'],
              description:
                'the setting this one takes its value from because it is not set, e.g. rate_limit_leases',
            },
          },
          required: ['key', 'value', 'text', 'source', 'fileValue', 'fileText', 'meaning', 'derivedFrom'],
        },
      },
    },
    required: [
      'name',
      'paused',
      'counts',
      'oldestReadyAgeMs',
      'waitingWorkers',
      'throttledWorkers',
      'readyGroups',
      'readyGroupsCapped',
      'settings',
      'settingSources',
      'fileSettings',
      'settingValues',
    ],
  },
  JobSummary: {
    type: 'object',
    properties: { ...jobCommon, payloadBytes: int, group: { type: ['string', 'null'] } },
    required: Object.keys(jobCommon),
  },
  JobDetail: {
    type: 'object',
    properties: {
      ...jobCommon,
      metadata: { type: 'object', additionalProperties: str },
      traceparent: strOrNull,
      tracestate: strOrNull,
      group: { type: ['string', 'null'], description: "the job's group; null when it has none" },
      leasedAtMs: msOrNull,
      errors: {
        type: 'array',
        items: {
          type: 'object',
          properties: { attempt: int, atMs: int, error: str },
          required: ['attempt', 'atMs', 'error'],
        },
      },
      payload: {
        type: 'object',
        properties: {
          view: { type: 'string', enum: ['json', 'text', 'hex'] },
          text: str,
          bytes: int,
          truncated: { type: 'boolean', description: 'only the first 64 KiB are shown' },
        },
        required: ['view', 'text', 'bytes', 'truncated'],
      },
      result: {
        type: ['object', 'null'],
        description:
          "a completed job's result (kept while its queue retains completed jobs), shown as the payload is",
        properties: {
          view: { type: 'string', enum: ['json', 'text', 'hex'] },
          text: str,
          bytes: int,
          truncated: { type: 'boolean' },
          contentType: str,
        },
        required: ['view', 'text', 'bytes', 'truncated', 'contentType'],
      },
      progress: {
        type: ['object', 'null'],
        description: 'what the worker last reported while holding the lease; null when it never did',
        properties: {
          percent: { type: ['number', 'null'] },
          json: { type: ['string', 'null'], description: 'a JSON document, as text' },
          atMs: int,
        },
        required: ['percent', 'json', 'atMs'],
      },
      timeline: {
        type: 'array',
        items: {
          type: 'object',
          properties: { atMs: int, event: str, detail: str },
          required: ['atMs', 'event', 'detail'],
        },
      },
    },
    required: [
      ...Object.keys(jobCommon),
      'metadata',
      'group',
      'errors',
      'payload',
      'result',
      'progress',
      'timeline',
    ],
  },
  JobPage: {
    type: 'object',
    properties: {
      items: { type: 'array', items: { $ref: '#/components/schemas/JobSummary' } },
      nextCursor: strOrNull,
      total: {
        type: ['integer', 'null'],
        description: 'jobs in this state (from the counters); null with a type filter',
      },
    },
    required: ['items', 'nextCursor', 'total'],
  },
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
  Overview: {
    type: 'object',
    properties: {
      server: {
        type: 'object',
        properties: {
          version: str,
          commit: strOrNull,
          startedAtMs: int,
          uptimeMs: int,
          serverTimeMs: int,
          durability: { type: 'string', enum: ['full', 'relaxed'] },
          dbBytes: int,
          walBytes: int,
        },
      },
      totals: stateCounts,
      waitingWorkers: int,
      queues: { type: 'array', items: { $ref: '#/components/schemas/Queue' } },
      rates: {
        type: 'object',
        description:
          'rates over the chosen window: jobs per finished bucket (the bucket in progress is left out), jobs per second over the time covered, and how long leased jobs had waited since due, for the server and per queue',
        properties: {
          window: { type: 'string', enum: ['5m', '1h', '24h'] },
          windowMs: int,
          bucketMs: int,
          startMs: int,
          series: { type: 'object', additionalProperties: { type: 'array', items: int } },
          totals: { type: 'object', additionalProperties: int },
          coveredMs: int,
          current: { $ref: '#/components/schemas/Rates' },
          queues: { type: 'object', additionalProperties: { $ref: '#/components/schemas/Rates' } },
        },
      },
    },
    required: ['server', 'totals', 'waitingWorkers', 'queues', 'rates'],
  },
  Schedule: {
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
        enum: [
          'enqueued',
          'deduplicated',
          'triggered',
          'skipped_overlap',
          'skipped_misfire',
          'rejected',
          null,
        ],
      },
      lastDetail: strOrNull,
      lastJobId: strOrNull,
      ticksEnqueued: int,
      ticksSkipped: int,
      createdAtMs: int,
      updatedAtMs: int,
    },
    required: ['name', 'source', 'timezone', 'template', 'paused', 'nextTickMs', 'nextRunsMs', 'lastOutcome'],
  },
  Rates: {
    type: 'object',
    properties: {
      perSecond: { type: 'object', additionalProperties: { type: 'number' } },
      waitMsAvg: { type: ['number', 'null'], description: 'mean time from due to leased, ms' },
      waitMsMax: { type: ['number', 'null'], description: 'longest time from due to leased, ms' },
    },
    required: ['perSecond', 'waitMsAvg', 'waitMsMax'],
  },
  Changed: {
    type: 'object',
    properties: { changed: int },
    required: ['changed'],
  },
  PreviousState: {
    type: 'object',
    properties: { previousState: { type: 'string', enum: [...jobStates] } },
    required: ['previousState'],
  },
  CancelResult: {
    type: 'object',
    properties: {
      previousState: { type: 'string', enum: [...jobStates] },
      state: {
        type: 'string',
        enum: ['cancelled', 'leased'],
        description: 'leased: the worker was told to stop, and the job becomes cancelled when it does',
      },
    },
    required: ['previousState', 'state'],
  },
} satisfies Record<string, JsonSchema>;

export const jobIdsBody: JsonSchema = {
  type: 'object',
  properties: { jobIds: { type: 'array', items: str, minItems: 1, maxItems: 1000 } },
  required: ['jobIds'],
};

export const enqueueBody: JsonSchema = {
  type: 'object',
  properties: {
    type: str,
    payload: { type: 'string', description: 'the payload, as text or base64 (payloadEncoding)' },
    payloadEncoding: { type: 'string', enum: ['text', 'base64'], default: 'text' },
    contentType: {
      type: 'string',
      description: 'default text/plain for text, application/octet-stream for base64',
    },
    priority: { type: 'integer', minimum: 0, maximum: 9 },
    delayMs: int,
    runAtMs: int,
    maxAttempts: int,
    idempotencyKey: str,
    metadata: { type: 'object', additionalProperties: str },
    group: { type: 'string', description: "the job's group (docs/flow-control.md); empty or absent: none" },
  },
  required: ['type', 'payload'],
};
