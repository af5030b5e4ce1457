/** JSON Schemas of queues in the API, and of the overview page with its rates. */
import { settingSources } from '../engine/settings.ts';
import type { JsonSchema } from './route-spec.ts';
import { int, stateCounts, str, strOrNull } from './schema-primitives.ts';

export const queue: JsonSchema = {
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
};

export const overview: JsonSchema = {
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
        store: {
          type: 'object',
          description:
            'the store the jobs are kept in; host, database and schema for PostgreSQL (never a password); the kind alone (the rest null) for the viewer role',
          properties: {
            kind: { type: 'string', enum: ['sqlite', 'postgres'] },
            host: strOrNull,
            database: strOrNull,
            schema: strOrNull,
            signalsConnected: {
              type: ['boolean', 'null'],
              description: 'PostgreSQL: whether this server hears the other servers now (else it polls)',
            },
            replication: {
              type: ['string', 'null'],
              enum: ['synchronous', 'asynchronous', 'none', null],
              description:
                "PostgreSQL: the primary's replication when the server last connected: whether a commit waits for a standby",
            },
            standbys: {
              type: ['integer', 'null'],
              description: 'PostgreSQL: the standbys streaming from the primary then',
            },
            poolSize: { type: ['integer', 'null'], description: 'PostgreSQL: store.pool_size' },
            maxWaitingReads: {
              type: ['integer', 'null'],
              description: 'PostgreSQL: store.max_waiting_reads',
            },
            maxWaitingReadsPerKey: {
              type: ['integer', 'null'],
              description: 'PostgreSQL: store.max_waiting_reads_per_key',
            },
            statementTimeoutMs: {
              type: ['integer', 'null'],
              description: 'PostgreSQL: store.statement_timeout_ms',
            },
          },
          required: [
            'kind',
            'host',
            'database',
            'schema',
            'signalsConnected',
            'replication',
            'standbys',
            'poolSize',
            'maxWaitingReads',
            'maxWaitingReadsPerKey',
            'statementTimeoutMs',
          ],
        },
        identity: {
          type: ['object', 'null'],
          description:
            'which server process answered (servers sharing one PostgreSQL are told apart by it); null for the viewer role (shown from operator up)',
          properties: {
            hostName: str,
            instanceId: { type: 'string', description: 'random, made when the process started' },
            pid: int,
            grpcAddress: { type: 'string', description: 'host:port as bound' },
            adminAddress: { type: 'string', description: 'host:port as bound' },
            httpAddress: { ...strOrNull, description: 'host:port as bound; null when the HTTP API is off' },
          },
          required: ['hostName', 'instanceId', 'pid', 'grpcAddress', 'adminAddress', 'httpAddress'],
        },
        features: {
          type: 'array',
          items: str,
          description:
            'the protocol features this server has that older ones lack, by name (GetServerInfo\'s `features`; docs/protocol.md, "Features")',
        },
      },
    },
    storeHealth: {
      type: 'object',
      description:
        "the store's health as this server sees it: its maintenance passes (retried each second while they fail) and this request's reads",
      properties: {
        available: { type: 'boolean' },
        unavailableSinceMs: {
          type: ['integer', 'null'],
          description:
            "the outage's first failed maintenance pass; null while available, and while only this request's read has failed",
        },
        lastError: {
          type: ['string', 'null'],
          description:
            "the latest failure (a pass's or this request's read's); null while available. Unavailable, it is why totals, queueCount and queues are null when they are",
        },
        failures: { type: 'integer', description: 'failed maintenance passes in this outage' },
      },
      required: ['available', 'unavailableSinceMs', 'lastError', 'failures'],
    },
    totals: { ...stateCounts, type: ['object', 'null'] },
    waitingWorkers: int,
    queueCount: { type: ['integer', 'null'], description: 'queues there are in all' },
    queues: {
      type: ['array', 'null'],
      description: 'one page of the queues, in name order (page_size)',
      items: { $ref: '#/components/schemas/Queue' },
    },
    nextPageToken: {
      type: ['string', 'null'],
      description: 'page_token of the next page of queues; null on the last',
    },
    rates: {
      type: 'object',
      description:
        'rates over the chosen window: jobs per finished bucket (the bucket in progress is left out), jobs per second over the time covered, and how long leased jobs had waited since due, for the server and per queue',
      properties: {
        window: { type: 'string', enum: ['5m', '1h', '24h'] },
        windowMs: int,
        bucketMs: int,
        startMs: int,
        series: {
          type: 'object',
          description:
            'jobs per finished bucket; null for a bucket that ended before the server started (no data)',
          additionalProperties: { type: 'array', items: { type: ['integer', 'null'] } },
        },
        totals: { type: 'object', additionalProperties: int },
        coveredMs: int,
        coveredFromMs: {
          type: 'integer',
          description:
            'the rates cover [coveredFromMs, now): the window, or less since the server started (the UI then says "since …", not "last hour")',
        },
        current: { $ref: '#/components/schemas/Rates' },
        queues: { type: 'object', additionalProperties: { $ref: '#/components/schemas/Rates' } },
      },
    },
  },
  required: [
    'server',
    'storeHealth',
    'totals',
    'waitingWorkers',
    'queueCount',
    'queues',
    'nextPageToken',
    'rates',
  ],
};

export const rates: JsonSchema = {
  type: 'object',
  properties: {
    perSecond: { type: 'object', additionalProperties: { type: 'number' } },
    avgWaitMs: { type: ['number', 'null'], description: 'mean time from due to leased, ms' },
    maxWaitMs: { type: ['number', 'null'], description: 'longest time from due to leased, ms' },
  },
  required: ['perSecond', 'avgWaitMs', 'maxWaitMs'],
};

/** A push queue's delivery status (PushStatusView in api-types.ts), or null when the queue does not push. */
export const pushStatus: JsonSchema = {
  type: ['object', 'null'],
  properties: {
    url: { type: 'string', description: 'the target, without credentials or query' },
    running: { type: 'boolean' },
    inFlight: { type: 'integer' },
    maxInFlight: { type: 'integer' },
    delivered: { type: 'integer' },
    failed: { type: 'integer' },
    resultsDropped: {
      type: 'integer',
      description: 'answers larger than limits.max_result_bytes, acked without a result',
    },
    lastSuccessAtMs: { type: ['integer', 'null'] },
    lastErrors: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          atMs: { type: 'integer' },
          jobId: { type: 'string' },
          attempt: { type: 'integer' },
          error: { type: 'string' },
        },
        required: ['atMs', 'jobId', 'attempt', 'error'],
      },
    },
    latency: {
      type: ['object', 'null'],
      properties: {
        samples: { type: 'integer' },
        p50Ms: { type: 'number' },
        p95Ms: { type: 'number' },
        maxMs: { type: 'number' },
      },
    },
  },
};
