/**
 * Conversions between the SDK's friendly shapes (types.ts) and the protocol's
 * generated messages. Proto3 zero values stand for "not set" both ways.
 */
import { status } from '@grpc/grpc-js';
import { msArgument, optionalInt32, optionalMs } from './arguments.ts';
import { type RejectionReason, SeppError } from './errors.ts';
import type { GetServerInfoResponse } from './gen/sepp/v1/admin.js';
import { DurabilityMode } from './gen/sepp/v1/admin.js';
import {
  DependencyFailurePolicy,
  type EnqueueJob,
  JobState as ProtoJobState,
  RejectionReason as ProtoRejectionReason,
} from './gen/sepp/v1/job.js';
import {
  ExpiredAction,
  type QueueInfo as ProtoQueueInfo,
  type QueueSettings as ProtoQueueSettings,
  SettingSource as ProtoSettingSource,
} from './gen/sepp/v1/queue.js';
import type { NackRequest, NackResponse } from './gen/sepp/v1/work.js';
import { type WorkerInfo as ProtoWorkerInfo, WorkerTransport } from './gen/sepp/v1/workers.js';
import { activeTraceHeaders } from './trace.ts';
import type {
  EnqueueOptions,
  JobSpec,
  NackResult,
  Payload,
  QueueInfo,
  QueueSettings,
  ServerInfo,
  SettingSource,
  TimeInput,
  WorkerInfo,
} from './types.ts';

const jsonType = 'application/json';
const textType = 'text/plain; charset=utf-8';

function invalid(message: string): SeppError {
  return new SeppError(status.INVALID_ARGUMENT, message);
}

function payloadBytes(payload: Payload | undefined): Buffer {
  if (payload === undefined) return Buffer.alloc(0);
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (Buffer.isBuffer(payload)) return payload;
  if (payload instanceof Uint8Array)
    return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  throw invalid('payload: give a Uint8Array, a Buffer or a string (or use enqueueJson)');
}

export function timeMs(value: TimeInput, field: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (!Number.isFinite(ms)) throw invalid(`${field}: not a valid time`);
  return msArgument(ms, field);
}

/**
 * Builds the protocol's job from the SDK's arguments; throws INVALID_ARGUMENT for what the server
 * could not make sense of. `after`: the names of the flow's jobs it runs after (a flow's job).
 */
export function toEnqueueJob(
  queue: string,
  type: string,
  payload: Buffer,
  contentType: string,
  options: EnqueueOptions,
  after: readonly string[] = [],
): EnqueueJob {
  if (
    options.onDependencyFailure !== undefined &&
    (options.dependsOn ?? []).length === 0 &&
    after.length === 0
  ) {
    // The server refuses it too: accepted and ignored, it would read as if the job waited on something.
    throw invalid(
      'onDependencyFailure is given but the job has no dependencies: give dependsOn (in a flow, or after), or leave onDependencyFailure out',
    );
  }
  let schedule: EnqueueJob['schedule'];
  if (options.runAt !== undefined && options.delayMs !== undefined) {
    throw invalid('give runAt or delayMs, not both');
  }
  if (options.runAt !== undefined) schedule = { $case: 'runAtMs', value: timeMs(options.runAt, 'runAt') };
  else if (options.delayMs !== undefined) {
    schedule = { $case: 'delayMs', value: msArgument(options.delayMs, 'delayMs') };
  }
  if (options.ttlMs !== undefined && options.expiresAt !== undefined) {
    throw invalid('give ttlMs or expiresAt, not both');
  }
  let expiry: EnqueueJob['expiry'];
  if (options.expiresAt !== undefined) {
    expiry = { $case: 'expiresAtMs', value: timeMs(options.expiresAt, 'expiresAt') };
  } else if (options.ttlMs !== undefined) {
    expiry = { $case: 'ttlMs', value: msArgument(options.ttlMs, 'ttlMs') };
  }
  const trace =
    options.traceparent === undefined
      ? activeTraceHeaders()
      : { traceparent: options.traceparent, tracestate: options.tracestate ?? '' };
  return {
    queue,
    type,
    payload,
    contentType,
    priority: optionalInt32(options.priority, 'priority', 0, undefined, 'an integer from 0 to 9'),
    schedule,
    maxAttempts: optionalInt32(options.maxAttempts, 'maxAttempts', 0, undefined, 'an integer from 1 to 1000'),
    idempotencyKey: options.idempotencyKey ?? '',
    metadata: options.metadata === undefined ? {} : { ...options.metadata },
    traceparent: trace.traceparent,
    tracestate: trace.tracestate,
    expiry,
    uniqueWhileActive: options.uniqueWhileActive === true,
    group: options.group ?? '',
    dependsOn: options.dependsOn === undefined ? [] : [...options.dependsOn],
    onDependencyFailure: dependencyPolicyOf(options.onDependencyFailure),
    timeoutMs: optionalMs(options.executionTimeoutMs, 'executionTimeoutMs', 0),
    debounceKey: options.debounceKey ?? '',
    debounceMs: optionalMs(options.debounceMs, 'debounceMs', 0),
    debounceMaxMs: optionalMs(options.debounceMaxMs, 'debounceMaxMs', 0),
  };
}

const dependencyPolicyToProto = {
  unspecified: DependencyFailurePolicy.UNSPECIFIED,
  cancel: DependencyFailurePolicy.CANCEL,
  run: DependencyFailurePolicy.RUN,
  wait: DependencyFailurePolicy.WAIT,
} as const;

function dependencyPolicyOf(policy: EnqueueOptions['onDependencyFailure']): DependencyFailurePolicy {
  const proto = Object.hasOwn(dependencyPolicyToProto, policy ?? 'unspecified')
    ? dependencyPolicyToProto[policy ?? 'unspecified']
    : undefined;
  if (proto === undefined) {
    throw invalid(`onDependencyFailure: ${JSON.stringify(policy)} is not one of cancel, run, wait`);
  }
  return proto;
}

/** `enqueue(queue, type, payload, options)` → the protocol's job (`after`: in a flow, as toEnqueueJob). */
export function jobFromArgs(
  queue: string,
  type: string,
  payload: Payload | undefined,
  options: EnqueueOptions,
  after: readonly string[] = [],
): EnqueueJob {
  const contentType = options.contentType ?? (typeof payload === 'string' ? textType : '');
  return toEnqueueJob(queue, type, payloadBytes(payload), contentType, options, after);
}

/** `enqueueJson(queue, type, value, options)` → the protocol's job (`after`: in a flow, as toEnqueueJob). */
export function jobFromJson(
  queue: string,
  type: string,
  value: unknown,
  options: EnqueueOptions,
  after: readonly string[] = [],
): EnqueueJob {
  const text = JSON.stringify(value);
  if (text === undefined) throw invalid('json: the value has no JSON form (undefined or a function)');
  return toEnqueueJob(
    queue,
    type,
    Buffer.from(text, 'utf8'),
    options.contentType ?? jsonType,
    options,
    after,
  );
}

/** A batch job spec → the protocol's job. */
export function jobFromSpec(spec: JobSpec): EnqueueJob {
  return flowJobFromSpec(spec, []);
}

/** A flow job's spec → the protocol's job; `after`: the names of the flow's jobs it runs after. */
export function flowJobFromSpec(spec: JobSpec, after: readonly string[]): EnqueueJob {
  if (spec.json !== undefined && spec.payload !== undefined) throw invalid('give payload or json, not both');
  return spec.json !== undefined
    ? jobFromJson(spec.queue, spec.type, spec.json, spec, after)
    : jobFromArgs(spec.queue, spec.type, spec.payload, spec, after);
}

/** A string's size on the wire: its UTF-8 bytes, as protobuf encodes it (a character may take up to 4). */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/**
 * A rough upper bound of a job's encoded size, to keep Produce messages under the server's limit:
 * strings count by their UTF-8 bytes, not characters, so metadata or keys in é, 中 or emoji do
 * not make a batch the server refuses for its size.
 */
export function approxEncodedBytes(job: EnqueueJob): number {
  let bytes =
    job.payload.length + utf8Bytes(job.queue) + utf8Bytes(job.type) + utf8Bytes(job.contentType) + 64;
  bytes += utf8Bytes(job.idempotencyKey) + utf8Bytes(job.traceparent) + utf8Bytes(job.tracestate);
  bytes += utf8Bytes(job.group) + utf8Bytes(job.debounceKey);
  for (const key in job.metadata) bytes += utf8Bytes(key) + utf8Bytes(job.metadata[key] ?? '') + 8;
  for (const id of job.dependsOn) bytes += utf8Bytes(id) + 4;
  return bytes;
}

const rejectionNames: Partial<Record<ProtoRejectionReason, RejectionReason>> = {
  [ProtoRejectionReason.UNKNOWN_QUEUE]: 'unknown_queue',
  [ProtoRejectionReason.PAYLOAD_TOO_LARGE]: 'payload_too_large',
  [ProtoRejectionReason.INVALID_NAME]: 'invalid_name',
  [ProtoRejectionReason.METADATA_TOO_LARGE]: 'metadata_too_large',
  [ProtoRejectionReason.SCHEDULED_TOO_FAR]: 'scheduled_too_far',
  [ProtoRejectionReason.QUEUE_FULL]: 'queue_full',
  [ProtoRejectionReason.JOB_TYPE_NOT_ALLOWED]: 'job_type_not_allowed',
  [ProtoRejectionReason.INVALID_JOB]: 'invalid_job',
  [ProtoRejectionReason.UNKNOWN_DEPENDENCY]: 'unknown_dependency',
  [ProtoRejectionReason.DEPENDENCY_FAILED]: 'dependency_failed',
  [ProtoRejectionReason.DEPENDENCIES_UNSUPPORTED]: 'dependencies_unsupported',
};

/** A rejection reason from the protocol; an unknown one (a newer server) reads as `invalid_job`. */
export function rejectionName(reason: ProtoRejectionReason): RejectionReason {
  return rejectionNames[reason] ?? 'invalid_job';
}

/**
 * The protocol's nack directive from NackOptions: a give-back wins, then dead-letter, then a
 * delay; none means backoff.
 */
export function nackDirective(options: {
  retryAfterMs?: number | undefined;
  deadLetter?: boolean | undefined;
  giveBack?: boolean | undefined;
}): NackRequest['directive'] {
  if (options.giveBack === true) return { $case: 'giveBack', value: true };
  if (options.deadLetter === true) return { $case: 'deadLetter', value: true };
  if (options.retryAfterMs !== undefined) {
    return { $case: 'retryDelayMs', value: Math.max(0, msArgument(options.retryAfterMs, 'retryAfterMs')) };
  }
  return undefined;
}

export function nackResultFromProto(response: NackResponse): NackResult {
  const state =
    response.state === ProtoJobState.DEAD
      ? 'dead'
      : response.state === ProtoJobState.CANCELLED
        ? 'cancelled'
        : response.state === ProtoJobState.SCHEDULED
          ? 'scheduled'
          : 'ready';
  const ends = state === 'dead' || state === 'cancelled';
  return { state, runAt: ends || response.runAtMs === 0 ? null : new Date(response.runAtMs) };
}

function settingsFromProto(settings: ProtoQueueSettings | undefined): QueueSettings {
  return {
    maxAttempts: settings?.maxAttempts ?? 0,
    backoff: settings?.backoff ?? { baseMs: 0, factor: 0, capMs: 0, jitter: 0 },
    defaultLeaseMs: settings?.defaultLeaseMs ?? 0,
    maxLeaseMs: settings?.maxLeaseMs ?? 0,
    defaultTimeoutMs: settings?.defaultTimeoutMs ?? 0,
    priorityAgingMs: settings?.priorityAgingMs ?? 0,
    maxPayloadBytes: settings?.maxPayloadBytes ?? 0,
    maxDepth: settings?.maxDepth ?? 0,
    dedupWindowMs: settings?.dedupWindowMs ?? 0,
    deadRetentionMs: settings?.deadRetentionMs ?? 0,
    completedRetentionMs: settings?.completedRetentionMs ?? 0,
    allowedTypes: settings?.allowedTypes ?? [],
    cancelledRetentionMs: settings?.cancelledRetentionMs ?? 0,
    expiredAction: settings?.expiredAction === ExpiredAction.DELETE ? 'delete' : 'dead_letter',
    maxLeased: settings?.maxLeased ?? 0,
    rateLimit: settings?.rateLimit ?? { leases: 0, periodMs: 0, burst: 0 },
    groupMaxLeased: settings?.groupMaxLeased ?? 0,
    groupRateLimit: settings?.groupRateLimit ?? { leases: 0, periodMs: 0, burst: 0 },
    // An older server sends nothing: its queues follow the server's durability.
    durability:
      settings?.durability === 'full' || settings?.durability === 'relaxed' ? settings.durability : 'server',
  };
}

export function queueInfoFromProto(queue: ProtoQueueInfo): QueueInfo {
  const counts = queue.counts ?? {
    scheduled: 0,
    ready: 0,
    leased: 0,
    completed: 0,
    dead: 0,
    cancelled: 0,
    waiting: 0,
  };
  return {
    name: queue.name,
    paused: queue.paused,
    counts,
    // The protocol sends 0 when no job is ready; 0 is also the age of a job due this instant.
    oldestReadyAgeMs: counts.ready > 0 ? queue.oldestReadyAgeMs : null,
    waitingWorkers: queue.waitingWorkers,
    throttledWorkers: queue.throttledWorkers,
    readyGroups: queue.readyGroups,
    readyGroupsCapped: queue.readyGroupsCapped,
    settings: settingsFromProto(queue.settings),
    settingValues: queue.settingValues.map((setting) => ({
      key: setting.key,
      value: parseJson(setting.valueJson),
      source: settingSources[setting.source] ?? 'default',
      fileValue: parseJson(setting.fileValueJson),
    })),
  };
}

const settingSources: Partial<Record<ProtoSettingSource, SettingSource>> = {
  [ProtoSettingSource.DEFAULT]: 'default',
  [ProtoSettingSource.QUEUE_DEFAULTS]: 'queue_defaults',
  [ProtoSettingSource.QUEUE]: 'queue',
  [ProtoSettingSource.OVERRIDE]: 'override',
};

/** A setting value the server sent as JSON; text that is not JSON is kept as it is. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function workerInfoFromProto(worker: ProtoWorkerInfo): WorkerInfo {
  return {
    workerId: worker.workerId,
    address: worker.address,
    transport: worker.transport === WorkerTransport.WORK_STREAM ? 'work_stream' : 'reserve',
    queues: worker.queues,
    connectedAtMs: worker.connectedAtMs,
    lastSeenAtMs: worker.lastSeenAtMs,
    jobsHeld: worker.jobsHeld,
    oldestLeaseAtMs: worker.oldestLeaseAtMs === 0 ? null : worker.oldestLeaseAtMs,
    connections: worker.connections,
    completedRecent: worker.completedRecent,
    failedRecent: worker.failedRecent,
    recentWindowMs: worker.recentWindowMs,
  };
}

export function serverInfoFromProto(info: GetServerInfoResponse): ServerInfo {
  const limits = info.limits;
  return {
    version: info.version,
    gitCommit: info.gitCommit,
    durability:
      info.durability === DurabilityMode.FULL
        ? 'full'
        : info.durability === DurabilityMode.RELAXED
          ? 'relaxed'
          : 'unknown',
    serverTime: new Date(info.serverTimeMs),
    startedAt: new Date(info.startedAtMs),
    limits: {
      maxNameLength: limits?.maxNameLength ?? 0,
      maxMetadataBytes: limits?.maxMetadataBytes ?? 0,
      maxMetadataEntries: limits?.maxMetadataEntries ?? 0,
      maxIdempotencyKeyBytes: limits?.maxIdempotencyKeyBytes ?? 0,
      maxWorkerIdBytes: limits?.maxWorkerIdBytes ?? 0,
      maxErrorBytes: limits?.maxErrorBytes ?? 0,
      maxErrorHistory: limits?.maxErrorHistory ?? 0,
      maxBatchJobs: limits?.maxBatchJobs ?? 0,
      maxReserveJobs: limits?.maxReserveJobs ?? 0,
      maxScheduleAheadMs: limits?.maxScheduleAheadMs ?? 0,
      maxWaitMs: limits?.maxWaitMs ?? 0,
      maxWaiters: limits?.maxWaiters ?? 0,
      maxPageSize: limits?.maxPageSize ?? 0,
      maxMessageBytes: limits?.maxMessageBytes ?? 0,
      maxReserveQueues: limits?.maxReserveQueues ?? 0,
      maxSchedules: limits?.maxSchedules ?? 0,
      maxQueues: limits?.maxQueues ?? 0,
      maxConnections: limits?.maxConnections ?? 0,
      maxStreamsPerConnection: limits?.maxStreamsPerConnection ?? 0,
      handshakeTimeoutMs: limits?.handshakeTimeoutMs ?? 0,
      idleTimeoutMs: limits?.idleTimeoutMs ?? 0,
      keepaliveMs: limits?.keepaliveMs ?? 0,
      keepaliveTimeoutMs: limits?.keepaliveTimeoutMs ?? 0,
      firstMessageTimeoutMs: limits?.firstMessageTimeoutMs ?? 0,
      maxResultBytes: limits?.maxResultBytes ?? 0,
      maxProgressBytes: limits?.maxProgressBytes ?? 0,
      maxEventSubscribers: limits?.maxEventSubscribers ?? 0,
      maxEventSubscribersPerKey: limits?.maxEventSubscribersPerKey ?? 0,
      maxBytesInFlightPerConnection: limits?.maxBytesInFlightPerConnection ?? 0,
      maxBytesInFlightPerKey: limits?.maxBytesInFlightPerKey ?? 0,
      eventBacklogEvents: limits?.eventBacklogEvents ?? 0,
      eventBacklogBytes: limits?.eventBacklogBytes ?? 0,
      eventResumeWindowMs: limits?.eventResumeWindowMs ?? 0,
      finishedOutcomeMs: limits?.finishedOutcomeMs ?? 0,
      maxDependenciesPerJob: limits?.maxDependenciesPerJob ?? 0,
      maxFlowJobs: limits?.maxFlowJobs ?? 0,
      maxFlowDepth: limits?.maxFlowDepth ?? 0,
      maxDependencyResultsBytes: limits?.maxDependencyResultsBytes ?? 0,
      maxOpenBatchesPerKey: limits?.maxOpenBatchesPerKey ?? 0,
      batchRetentionMs: limits?.batchRetentionMs ?? 0,
      maxDependentsPerJob: limits?.maxDependentsPerJob ?? 0,
    },
    queueDefaults: settingsFromProto(info.queueDefaults),
    strictQueues: info.strictQueues,
    store: {
      kind: info.store?.kind ?? '',
      host: info.store?.host ?? '',
      database: info.store?.database ?? '',
      schema: info.store?.schema ?? '',
      signalsConnected: info.store?.signalsConnected ?? false,
      replication: info.store?.replication ?? '',
      standbys: info.store?.standbys ?? 0,
      poolSize: info.store?.poolSize ?? 0,
      maxWaitingReads: info.store?.maxWaitingReads ?? 0,
      maxWaitingReadsPerKey: info.store?.maxWaitingReadsPerKey ?? 0,
      statementTimeoutMs: info.store?.statementTimeoutMs ?? 0,
    },
    identity: {
      hostName: info.identity?.hostName ?? '',
      instanceId: info.identity?.instanceId ?? '',
      pid: info.identity?.pid ?? 0,
      grpcAddress: info.identity?.grpcAddress ?? '',
      adminAddress: info.identity?.adminAddress ?? '',
      httpAddress: info.identity?.httpAddress ?? '',
    },
    features: [...info.features],
  };
}
