/**
 * Conversions between protocol messages (clients/typescript/src/gen) and engine shapes.
 * Proto3 zero values mean "not set": empty strings and zero numbers become
 * undefined so the engine applies its defaults.
 */

import {
  DeadReason,
  DependencyEdgeState,
  DependencyFailurePolicy,
  type EnqueueAccepted,
  type EnqueueJob,
  type EnqueueResult,
  type Job,
  type JobLink,
  type JobProgress,
  JobState,
  type LeasedJob,
  type DependencyResult as ProtoDependencyResult,
  RejectionReason as ProtoRejectionReason,
} from '../../clients/typescript/src/gen/sepp/v1/job.js';
import {
  ExpiredAction,
  type QueueSettings as ProtoQueueSettings,
  type QueueInfo,
  type QueueSettingValue,
  SettingSource,
} from '../../clients/typescript/src/gen/sepp/v1/queue.js';
import type {
  AckRequest,
  NackRequest,
  ReportProgressRequest,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { type WorkerInfo, WorkerTransport } from '../../clients/typescript/src/gen/sepp/v1/workers.js';
import type { WorkerInfo as EngineWorkerInfo } from '../engine/admin-types.ts';
import { type JobRejection, type RejectionReason, SeppError } from '../engine/errors.ts';
import {
  type ExpiredAction as EngineExpiredAction,
  type SettingSource as EngineSettingSource,
  flattenQueueSettings,
  type QueueSettings,
  queueSettingKeys,
  queueSettingName,
} from '../engine/settings.ts';
import type {
  Ack,
  EnqueueAccepted as EngineAccepted,
  DeadReason as EngineDeadReason,
  DependencyResult as EngineDependencyResult,
  EnqueueRequest as EngineEnqueueRequest,
  EnqueueResult as EngineEnqueueResult,
  JobLink as EngineJobLink,
  JobProgress as EngineJobProgress,
  JobState as EngineJobState,
  LeasedJob as EngineLeasedJob,
  QueueInfo as EngineQueueInfo,
  JobInfo,
  NackDirective,
  ProgressReport,
} from '../engine/types.ts';
import { wireMessage } from './status.ts';

/**
 * Bytes of the engine (a Uint8Array: what the store hands out) as the generated
 * protocol types want them (a Buffer). The SQLite store's bytes are Buffers
 * already, so this wraps nothing on the lease path; another store's are viewed,
 * not copied.
 */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export function enqueueRequestFromProto(job: EnqueueJob | undefined): EngineEnqueueRequest {
  if (job === undefined) return { queue: '', type: '', payload: new Uint8Array() };
  const request: EngineEnqueueRequest = {
    queue: job.queue,
    type: job.type,
    payload: job.payload,
    priority: job.priority,
  };
  if (job.contentType !== '') request.contentType = job.contentType;
  if (job.schedule?.$case === 'runAtMs') request.runAtMs = job.schedule.value;
  // Proto documents a delay ≤ 0 as "now".
  else if (job.schedule?.$case === 'delayMs') request.delayMs = Math.max(0, job.schedule.value);
  if (job.maxAttempts !== 0) request.maxAttempts = job.maxAttempts;
  if (job.idempotencyKey !== '') request.idempotencyKey = job.idempotencyKey;
  if (Object.keys(job.metadata).length > 0) request.metadata = job.metadata;
  if (job.traceparent !== '') request.traceparent = job.traceparent;
  if (job.tracestate !== '') request.tracestate = job.tracestate;
  if (job.expiry?.$case === 'expiresAtMs') request.expiresAtMs = job.expiry.value;
  else if (job.expiry?.$case === 'ttlMs') request.ttlMs = job.expiry.value;
  if (job.uniqueWhileActive) request.uniqueWhileActive = true;
  // Negative is refused by the engine's validation, as any other out-of-range value.
  if (job.timeoutMs !== 0) request.timeoutMs = job.timeoutMs;
  if (job.debounceKey !== '') request.debounceKey = job.debounceKey;
  if (job.debounceMs !== 0) request.debounceMs = job.debounceMs;
  if (job.debounceMaxMs !== 0) request.debounceMaxMs = job.debounceMaxMs;
  if (job.group !== '') request.group = job.group;
  // Old clients send neither field (an absent repeated field decodes as []).
  if (job.dependsOn !== undefined && job.dependsOn.length > 0) request.dependsOn = job.dependsOn;
  const policy = dependencyPolicyFromProto(job.onDependencyFailure);
  if (policy !== undefined) request.onDependencyFailure = policy;
  return request;
}

/** The policy of a job's dependencies; undefined for UNSPECIFIED (the default, cancel). */
function dependencyPolicyFromProto(
  policy: DependencyFailurePolicy | undefined,
): EngineEnqueueRequest['onDependencyFailure'] {
  switch (policy) {
    case DependencyFailurePolicy.CANCEL:
      return 'cancel';
    case DependencyFailurePolicy.RUN:
      return 'run';
    case DependencyFailurePolicy.WAIT:
      return 'wait';
    case undefined:
    case DependencyFailurePolicy.UNSPECIFIED:
      return undefined;
    default:
      // A value this server does not know is refused, never read as the default.
      throw new SeppError(
        'invalid_argument',
        `on_dependency_failure is ${policy}, which this server does not know; give CANCEL, RUN or WAIT`,
      );
  }
}

const rejectionToProto: Record<RejectionReason, ProtoRejectionReason> = {
  unknown_queue: ProtoRejectionReason.UNKNOWN_QUEUE,
  payload_too_large: ProtoRejectionReason.PAYLOAD_TOO_LARGE,
  invalid_name: ProtoRejectionReason.INVALID_NAME,
  metadata_too_large: ProtoRejectionReason.METADATA_TOO_LARGE,
  scheduled_too_far: ProtoRejectionReason.SCHEDULED_TOO_FAR,
  queue_full: ProtoRejectionReason.QUEUE_FULL,
  job_type_not_allowed: ProtoRejectionReason.JOB_TYPE_NOT_ALLOWED,
  invalid_job: ProtoRejectionReason.INVALID_JOB,
  unknown_dependency: ProtoRejectionReason.UNKNOWN_DEPENDENCY,
  dependency_failed: ProtoRejectionReason.DEPENDENCY_FAILED,
  dependencies_unsupported: ProtoRejectionReason.DEPENDENCIES_UNSUPPORTED,
};

export function rejectionToProtoMessage(rejection: JobRejection): {
  reason: ProtoRejectionReason;
  message: string;
} {
  return { reason: rejectionToProto[rejection.reason], message: wireMessage(rejection) };
}

/** A refused job of an atomic batch, with its index. */
export function atomicRejectionToProto(rejection: JobRejection & { index: number }) {
  return { index: rejection.index, ...rejectionToProtoMessage(rejection) };
}

export function acceptedToProto(accepted: EngineAccepted): EnqueueAccepted {
  return {
    jobId: accepted.jobId,
    deduplicated: accepted.deduplicated,
    debounced: accepted.debounced === true,
  };
}

export function enqueueResultToProto(result: EngineEnqueueResult): EnqueueResult {
  return result.ok
    ? { outcome: { $case: 'accepted', value: acceptedToProto(result) } }
    : { outcome: { $case: 'rejection', value: rejectionToProtoMessage(result) } };
}

export function leasedJobToProto(job: EngineLeasedJob): LeasedJob {
  return {
    jobId: job.id,
    queue: job.queue,
    type: job.type,
    payload: asBuffer(job.payload),
    contentType: job.contentType,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    leaseDeadlineMs: job.leaseDeadlineMs,
    enqueuedAtMs: job.enqueuedAtMs,
    runAtMs: job.runAtMs,
    metadata: job.metadata,
    traceparent: job.traceparent ?? '',
    tracestate: job.tracestate ?? '',
    idempotencyKey: job.idempotencyKey ?? '',
    lastError: job.lastError ?? '',
    group: job.group ?? '',
    timeoutAtMs: job.timeoutAtMs ?? 0,
    flowLimited: job.flowLimited,
    dependencyResults:
      job.dependencyResults === undefined
        ? noDependencyResults
        : job.dependencyResults.map(dependencyResultToProto),
    batchId: job.batchId ?? '',
    leaseToken: job.leaseToken ?? '',
  };
}

/** The answer of every job without dependencies: one shared empty list (never changed). */
const noDependencyResults: ProtoDependencyResult[] = [];

function dependencyResultToProto(result: EngineDependencyResult): ProtoDependencyResult {
  return {
    jobId: result.jobId,
    name: result.name ?? '',
    state: result.state === null ? JobState.UNSPECIFIED : stateToProto[result.state],
    result: result.result === null ? Buffer.alloc(0) : asBuffer(result.result),
    resultContentType: result.resultContentType ?? '',
    resultOmitted: result.resultOmitted,
  };
}

const stateToProto: Record<EngineJobState, JobState> = {
  scheduled: JobState.SCHEDULED,
  ready: JobState.READY,
  leased: JobState.LEASED,
  completed: JobState.COMPLETED,
  dead: JobState.DEAD,
  cancelled: JobState.CANCELLED,
  waiting: JobState.WAITING,
};

export function jobStateToProto(state: EngineJobState): JobState {
  return stateToProto[state];
}

/** An engine state from the protocol's; undefined for UNSPECIFIED or a value this server does not know. */
export function jobStateFromProto(state: JobState): EngineJobState | undefined {
  for (const [name, value] of Object.entries(stateToProto))
    if (value === state) return name as EngineJobState;
  return undefined;
}

export const deadReasonToProto: Record<EngineDeadReason, DeadReason> = {
  attempts_exhausted: DeadReason.ATTEMPTS_EXHAUSTED,
  lease_expired: DeadReason.LEASE_EXPIRED,
  dead_lettered: DeadReason.DEAD_LETTERED,
  expired: DeadReason.EXPIRED,
  timeout: DeadReason.TIMEOUT,
};

export function deadReasonFromProto(reason: DeadReason): EngineDeadReason | undefined {
  for (const [name, value] of Object.entries(deadReasonToProto))
    if (value === reason) return name as EngineDeadReason;
  return undefined;
}

/** A job for GetJob; `withPayload: false` leaves payload and history out (listing pages). */
export function jobToProto(job: JobInfo, withPayload: boolean): Job {
  return {
    jobId: job.id,
    queue: job.queue,
    type: job.type,
    state: stateToProto[job.state],
    priority: job.priority,
    payload: withPayload ? asBuffer(job.payload) : Buffer.alloc(0),
    payloadBytes: job.payload.byteLength,
    contentType: job.contentType,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey ?? '',
    metadata: job.metadata,
    traceparent: job.traceparent ?? '',
    tracestate: job.tracestate ?? '',
    enqueuedAtMs: job.enqueuedAtMs,
    runAtMs: job.runAtMs,
    leasedAtMs: job.leasedAtMs ?? 0,
    leaseDeadlineMs: job.leaseDeadlineMs ?? 0,
    workerId: job.workerId ?? '',
    lastError: job.lastError ?? '',
    errors: withPayload
      ? job.errors.map((e) => ({
          attempt: e.attempt,
          atMs: e.atMs,
          error: e.error,
          errorClass: e.errorClass ?? '',
          errorStack: e.stack ?? '',
        }))
      : [],
    deadReason: job.deadReason === null ? DeadReason.UNSPECIFIED : deadReasonToProto[job.deadReason],
    failedAtMs: job.failedAtMs ?? 0,
    completedAtMs: job.completedAtMs ?? 0,
    expiresAtMs: job.expiresAtMs ?? 0,
    timeoutMs: job.timeoutMs ?? 0,
    timeoutAtMs: job.timeoutAtMs ?? 0,
    debounceKey: job.debounceKey ?? '',
    debounceUntilMs: job.debounceUntilMs ?? 0,
    cancelledAtMs: job.cancelledAtMs ?? 0,
    cancelledBy: job.cancelledBy ?? '',
    result:
      job.result === null
        ? undefined
        : {
            data: withPayload ? asBuffer(job.result) : Buffer.alloc(0),
            contentType: job.resultContentType ?? '',
          },
    resultBytes: job.result?.byteLength ?? 0,
    progress: job.progress === null ? undefined : progressToProto(job.progress),
    group: job.group ?? '',
    outcomeOnly: job.outcomeOnly,
    dependencies: (job.dependencies ?? []).map(jobLinkToProto),
    dependents: (job.dependents ?? []).map(jobLinkToProto),
    batchId: job.batchId ?? '',
  };
}

export const edgeStateToProto = {
  pending: DependencyEdgeState.PENDING,
  completed: DependencyEdgeState.COMPLETED,
  failed: DependencyEdgeState.FAILED,
} as const;

function jobLinkToProto(link: EngineJobLink): JobLink {
  return {
    jobId: link.id,
    queue: link.queue ?? '',
    type: link.type ?? '',
    state: link.state === null ? JobState.UNSPECIFIED : stateToProto[link.state],
    edge: edgeStateToProto[link.edge],
    name: link.name ?? '',
  };
}

const expiredActionToProto: Record<EngineExpiredAction, ExpiredAction> = {
  dead_letter: ExpiredAction.DEAD_LETTER,
  delete: ExpiredAction.DELETE,
};
export function progressToProto(progress: EngineJobProgress): JobProgress {
  return {
    percent: progress.percent ?? 0,
    hasPercent: progress.percent !== null,
    json: progress.json ?? '',
    reportedAtMs: progress.atMs,
  };
}

/** An ack as the engine takes it: the result only when the request carries one. */
export function ackFromProto(request: AckRequest, jobId: string, attempt: number): Ack {
  if (request.result === undefined) return { jobId, attempt };
  return { jobId, attempt, result: request.result.data, resultContentType: request.result.contentType };
}

export function progressReportFromProto(
  request: ReportProgressRequest,
  jobId: string,
  attempt: number,
): ProgressReport {
  const report: ProgressReport = { jobId, attempt };
  if (request.hasPercent) report.percent = request.percent;
  if (request.json !== '') report.json = request.json;
  return report;
}

export function queueSettingsToProto(settings: QueueSettings): ProtoQueueSettings {
  return {
    maxAttempts: settings.maxAttempts,
    backoff: { ...settings.backoff },
    defaultLeaseMs: settings.defaultLeaseMs,
    maxLeaseMs: settings.maxLeaseMs,
    maxPayloadBytes: settings.maxPayloadBytes,
    maxDepth: settings.maxDepth,
    dedupWindowMs: settings.dedupWindowMs,
    deadRetentionMs: settings.deadRetentionMs,
    completedRetentionMs: settings.completedRetentionMs,
    allowedTypes: [...settings.allowedTypes],
    cancelledRetentionMs: settings.cancelledRetentionMs,
    expiredAction: expiredActionToProto[settings.expiredAction],
    maxLeased: settings.maxLeased,
    rateLimit: { ...settings.rateLimit },
    groupMaxLeased: settings.groupMaxLeased,
    groupRateLimit: { ...settings.groupRateLimit },
    durability: settings.durability,
    defaultTimeoutMs: settings.defaultTimeoutMs,
    priorityAgingMs: settings.priorityAgingMs,
  };
}

export function queueInfoToProto(queue: EngineQueueInfo): QueueInfo {
  return {
    name: queue.name,
    paused: queue.paused,
    counts: { ...queue.counts },
    oldestReadyAgeMs: queue.oldestReadyAgeMs ?? 0,
    waitingWorkers: queue.waitingWorkers,
    settings: queueSettingsToProto(queue.settings),
    throttledWorkers: queue.throttledWorkers,
    readyGroups: queue.readyGroups,
    readyGroupsCapped: queue.readyGroupsCapped,
    settingValues: settingValuesToProto(queue),
  };
}

const settingSourceToProto: Readonly<Record<EngineSettingSource, SettingSource>> = {
  default: SettingSource.DEFAULT,
  queue_defaults: SettingSource.QUEUE_DEFAULTS,
  queue: SettingSource.QUEUE,
  override: SettingSource.OVERRIDE,
};

/** Every setting as name, JSON value, source and the file's value (what a reset gives back). */
function settingValuesToProto(queue: EngineQueueInfo): QueueSettingValue[] {
  const effective = flattenQueueSettings(queue.settings);
  return queueSettingKeys.map((key) => ({
    key: queueSettingName(key),
    valueJson: JSON.stringify(effective[key]),
    source: settingSourceToProto[queue.settingSources[key]],
    fileValueJson: JSON.stringify(queue.fileSettings[key]),
  }));
}

export function nackDirectiveFromProto(request: NackRequest): NackDirective {
  switch (request.directive?.$case) {
    case 'retryDelayMs':
      return { kind: 'delay', delayMs: request.directive.value };
    case 'deadLetter':
      return request.directive.value ? { kind: 'dead_letter' } : { kind: 'backoff' };
    case 'giveBack':
      return request.directive.value ? { kind: 'give_back' } : { kind: 'backoff' };
    default:
      return { kind: 'backoff' };
  }
}

export function workerInfoToProto(worker: EngineWorkerInfo): WorkerInfo {
  return {
    workerId: worker.workerId,
    address: worker.address,
    transport: worker.transport === 'work_stream' ? WorkerTransport.WORK_STREAM : WorkerTransport.RESERVE,
    queues: worker.queues,
    connectedAtMs: worker.connectedAtMs,
    lastSeenAtMs: worker.lastSeenAtMs,
    jobsHeld: worker.jobsHeld,
    oldestLeaseAtMs: worker.oldestLeaseAtMs ?? 0,
    connections: worker.connections,
    completedRecent: worker.completedRecent,
    failedRecent: worker.failedRecent,
    recentWindowMs: worker.recentWindowMs,
  };
}
