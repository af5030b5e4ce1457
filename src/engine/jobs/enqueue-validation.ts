/**
 * Checks one job of an enqueue against the limits and the queue's settings,
 * before anything is written. A problem becomes a typed rejection whose
 * message names the field, the limit and the setting that governs it.
 */
import { checkName, contentTypePattern, formatBytes } from '../checks.ts';
import type { JobRejection, RejectionReason } from '../errors.ts';
import type { QueueRegistry } from '../queue-registry.ts';
import { type EngineLimits, type QueueSettings, queueSettingRanges } from '../settings.ts';
import type { DependencyPolicy, EnqueueRequest } from '../types.ts';
import { normalizeJobId } from './job-id.ts';

/** A job that passed validation, ready to insert. */
export interface ValidJob {
  queue: string;
  type: string;
  payload: Uint8Array;
  contentType: string;
  priority: number;
  runAtMs: number;
  scheduled: boolean;
  maxAttempts: number;
  leaseMs: number | null;
  /** The job's own hard timeout per attempt; null: its queue's default_timeout_ms. */
  timeoutMs: number | null;
  idempotencyKey: string | null;
  /** The key is a duplicate only while a job holding it is unfinished. */
  uniqueWhileActive: boolean;
  /** Not handed out at or after this time; null: never expires. */
  expiresAtMs: number | null;
  metadataJson: string | null;
  traceparent: string | null;
  tracestate: string | null;
  group: string | null;
  /** The API key's name that enqueues it; null: none (EnqueueRequest.createdBy). */
  createdBy: string | null;
  /** That key has the admin role: its edges count as each named job's creator's (EnqueueRequest.createdByAdmin). */
  createdByAdmin: boolean;
  /** The ids it waits for (distinct), and what a failed one does; null: none. */
  dependencies: { ids: readonly string[]; policy: DependencyPolicy } | null;
  /** Its debounce key, quiet period and cap (null: no cap); null: not debounced. */
  debounce: { key: string; delayMs: number; maxMs: number | null } | null;
  settings: QueueSettings;
}

const dependencyPolicies: readonly DependencyPolicy[] = ['cancel', 'run', 'wait'];

/** A job to validate: one of an enqueue, or of a flow (whose `after` names jobs of the same flow). */
type JobToValidate = EnqueueRequest & { after?: readonly string[] };

/** depends_on and its policy, checked without the store (that the jobs exist is the enqueue's). */
function checkDependencies(
  job: JobToValidate,
  limits: EngineLimits,
): ValidJob['dependencies'] | JobRejection {
  const ids = job.dependsOn ?? [];
  const policy = job.onDependencyFailure ?? 'cancel';
  if (!dependencyPolicies.includes(policy)) {
    return reject('invalid_job', `on_dependency_failure is ${String(policy)}; give cancel, run or wait`);
  }
  if (ids.length === 0 && (job.after ?? []).length === 0 && job.onDependencyFailure !== undefined) {
    // Accepted and ignored, it would read as if the job waited on something.
    return reject(
      'invalid_job',
      `on_dependency_failure is ${policy} but the job has no dependencies: it says what a failed dependency does to a job; give depends_on (in a flow, or after), or leave on_dependency_failure out`,
    );
  }
  if (ids.length === 0) return null;
  if (ids.length > limits.maxDependenciesPerJob) {
    return reject(
      'invalid_job',
      `depends_on names ${ids.length} jobs, the limit is ${limits.maxDependenciesPerJob} (limits.max_dependencies_per_job)`,
    );
  }
  const seen = new Set<string>();
  for (const [i, given] of ids.entries()) {
    if (typeof given !== 'string' || given.length === 0 || given.length > 64) {
      return reject('invalid_job', `depends_on[${i}] is not a job id`);
    }
    // A job id is a UUID, stored in lower case; GetJob takes one in either case, and so does
    // depends_on. Anything else names no job: unknown, with a message that says why.
    const id = normalizeJobId(given);
    if (id === null) {
      return reject(
        'unknown_dependency',
        `depends_on[${i}]: ${JSON.stringify(given)} is not a job id (a UUID such as 01a2365f-985c-7000-b7f9-d57e51622832), so it names no job`,
      );
    }
    if (seen.has(id)) return reject('invalid_job', `depends_on names job ${id} twice`);
    seen.add(id);
  }
  return { ids: [...seen], policy };
}

const traceparentPattern = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const maxTracestateLength = 512;

function reject(reason: RejectionReason, message: string): JobRejection {
  return { reason, message };
}

export function validateJob(
  job: JobToValidate,
  nowMs: number,
  queues: QueueRegistry,
  limits: EngineLimits,
): ValidJob | JobRejection {
  const nameProblem =
    checkName('queue', job.queue, limits) ??
    checkName('type', job.type, limits) ??
    (job.group === undefined ? null : checkName('group', job.group, limits));
  if (nameProblem) return nameProblem;
  if (!queues.accepts(job.queue)) {
    return reject(
      'unknown_queue',
      `queue ${job.queue} is not declared and strict_queues is on; declare it as [queues.${job.queue}] in the config`,
    );
  }
  const settings = queues.settingsFor(job.queue);
  if (settings.allowedTypes.length > 0 && !settings.allowedTypes.includes(job.type)) {
    return reject(
      'job_type_not_allowed',
      `job type ${job.type} is not allowed on queue ${job.queue} (allowed_types: ${listed(settings.allowedTypes)})`,
    );
  }
  if (!(job.payload instanceof Uint8Array)) return reject('invalid_job', 'payload must be bytes');
  if (job.payload.byteLength > settings.maxPayloadBytes) {
    return reject(
      'payload_too_large',
      `payload is ${formatBytes(job.payload.byteLength)}, the limit for queue ${job.queue} is ${formatBytes(settings.maxPayloadBytes)} (max_payload_bytes)`,
    );
  }
  const contentType =
    job.contentType === undefined || job.contentType === '' ? 'application/octet-stream' : job.contentType;
  if (!contentTypePattern.test(contentType)) {
    return reject(
      'invalid_job',
      'content_type must be 1–255 printable ASCII characters, such as application/json',
    );
  }
  const priority = job.priority ?? 0;
  if (!Number.isInteger(priority) || priority < 0 || priority > 9) {
    return reject('invalid_job', `priority is ${priority}; it must be an integer from 0 to 9 (9 runs first)`);
  }
  const maxAttempts = job.maxAttempts ?? settings.maxAttempts;
  const attemptsRange = queueSettingRanges.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < attemptsRange.min || maxAttempts > attemptsRange.max) {
    return reject(
      'invalid_job',
      `max_attempts is ${maxAttempts}; it must be an integer from ${attemptsRange.min} to ${attemptsRange.max}`,
    );
  }
  const leaseMs = job.leaseMs === undefined || job.leaseMs === 0 ? null : job.leaseMs;
  const leaseRange = queueSettingRanges.maxLeaseMs;
  if (
    leaseMs !== null &&
    (!Number.isSafeInteger(leaseMs) || leaseMs < leaseRange.min || leaseMs > leaseRange.max)
  ) {
    return reject(
      'invalid_job',
      `lease_ms is ${leaseMs}; it must be an integer from ${leaseRange.min} (1 s) to ${leaseRange.max} (7 days), or 0 for none`,
    );
  }
  const timeoutMs = job.timeoutMs === undefined || job.timeoutMs === 0 ? null : job.timeoutMs;
  const timeoutMax = queueSettingRanges.defaultTimeoutMs.max;
  if (timeoutMs !== null && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > timeoutMax)) {
    return reject(
      'invalid_job',
      `timeout_ms is ${timeoutMs}; it must be an integer from 1 to ${timeoutMax} (30 days), or 0 for the queue's default_timeout_ms`,
    );
  }

  const debounce = checkDebounce(job, limits);
  if (debounce !== null && 'reason' in debounce) return debounce;

  let runAtMs = debounce === null ? nowMs : nowMs + debounce.delayMs;
  if (job.runAtMs !== undefined && job.delayMs !== undefined) {
    return reject('invalid_job', 'give run_at_ms or delay_ms, not both');
  }
  if (job.runAtMs !== undefined) {
    if (!Number.isSafeInteger(job.runAtMs))
      return reject('invalid_job', 'run_at_ms must be an integer (ms since epoch)');
    runAtMs = Math.max(nowMs, job.runAtMs);
  } else if (job.delayMs !== undefined) {
    if (!Number.isSafeInteger(job.delayMs) || job.delayMs < 0) {
      return reject('invalid_job', `delay_ms is ${job.delayMs}; it must be a non-negative integer`);
    }
    runAtMs = nowMs + job.delayMs;
  }
  if (runAtMs - nowMs > limits.maxScheduleAheadMs) {
    const days = Math.round(limits.maxScheduleAheadMs / 86_400_000);
    return reject(
      'scheduled_too_far',
      `the job is scheduled ${Math.ceil((runAtMs - nowMs) / 86_400_000)} days ahead, the limit is ${days} days (limits.max_schedule_ahead_ms)`,
    );
  }

  let idempotencyKey: string | null = null;
  if (job.idempotencyKey !== undefined && job.idempotencyKey !== '') {
    const keyBytes = Buffer.byteLength(job.idempotencyKey);
    if (keyBytes > limits.maxIdempotencyKeyBytes) {
      return reject(
        'invalid_job',
        `idempotency_key is ${keyBytes} bytes, the limit is ${limits.maxIdempotencyKeyBytes} (limits.max_idempotency_key_bytes)`,
      );
    }
    idempotencyKey = job.idempotencyKey;
  }
  const uniqueWhileActive = job.uniqueWhileActive === true;
  if (uniqueWhileActive && idempotencyKey === null) {
    return reject(
      'invalid_job',
      'unique_while_active needs an idempotency_key: the key is what stays unique while the job is unfinished',
    );
  }
  const expiry = checkExpiry(job, nowMs, runAtMs, limits);
  if (typeof expiry !== 'number' && expiry !== null) return expiry;
  const dependencies =
    job.dependsOn === undefined && job.onDependencyFailure === undefined
      ? null
      : checkDependencies(job, limits);
  if (dependencies !== null && 'reason' in dependencies) return dependencies;

  let metadataJson: string | null = null;
  if (job.metadata !== undefined) {
    const entries = Object.entries(job.metadata);
    if (entries.length > limits.maxMetadataEntries) {
      return reject(
        'metadata_too_large',
        `metadata has ${entries.length} entries, the limit is ${limits.maxMetadataEntries} (limits.max_metadata_entries)`,
      );
    }
    let bytes = 0;
    for (const [key, value] of entries) {
      if (key.length === 0) return reject('invalid_job', 'metadata keys must not be empty');
      if (typeof value !== 'string')
        return reject('invalid_job', `metadata value of ${key} must be a string`);
      bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    }
    if (bytes > limits.maxMetadataBytes) {
      return reject(
        'metadata_too_large',
        `metadata is ${formatBytes(bytes)}, the limit is ${formatBytes(limits.maxMetadataBytes)} (limits.max_metadata_bytes)`,
      );
    }
    if (entries.length > 0) metadataJson = JSON.stringify(Object.fromEntries(entries));
  }

  // Invalid trace context is ignored, as W3C Trace Context asks: tracing must never lose a job.
  const traceparent =
    job.traceparent !== undefined && traceparentPattern.test(job.traceparent) ? job.traceparent : null;
  const tracestate =
    traceparent !== null && job.tracestate !== undefined && job.tracestate.length <= maxTracestateLength
      ? job.tracestate || null
      : null;

  return {
    queue: job.queue,
    type: job.type,
    payload: job.payload,
    contentType,
    priority,
    runAtMs,
    scheduled: runAtMs > nowMs,
    maxAttempts,
    leaseMs,
    timeoutMs,
    idempotencyKey,
    uniqueWhileActive,
    expiresAtMs: expiry,
    metadataJson,
    traceparent,
    tracestate,
    group: job.group ?? null,
    createdBy: job.createdBy ?? null,
    createdByAdmin: job.createdByAdmin === true,
    dependencies,
    debounce,
    settings,
  };
}

/**
 * debounce_key, debounce_ms and debounce_max_ms (null: no key). A debounced job's run time
 * is the debounce's, and what a later enqueue would have to reconcile is refused: its own
 * schedule, an expiry, an idempotency key, dependencies.
 */
function checkDebounce(job: EnqueueRequest, limits: EngineLimits): ValidJob['debounce'] | JobRejection {
  const delayMs = job.debounceMs ?? 0;
  const maxMs = job.debounceMaxMs ?? 0;
  if (job.debounceKey === undefined || job.debounceKey === '') {
    if (delayMs !== 0 || maxMs !== 0) {
      return reject('invalid_job', 'debounce_ms and debounce_max_ms need a debounce_key');
    }
    return null;
  }
  const keyBytes = Buffer.byteLength(job.debounceKey);
  if (keyBytes > limits.maxIdempotencyKeyBytes) {
    return reject(
      'invalid_job',
      `debounce_key is ${keyBytes} bytes, the limit is ${limits.maxIdempotencyKeyBytes} (limits.max_idempotency_key_bytes)`,
    );
  }
  const ahead = limits.maxScheduleAheadMs;
  if (!Number.isSafeInteger(delayMs) || delayMs < 0 || delayMs > ahead) {
    return reject(
      'invalid_job',
      `debounce_ms is ${delayMs}; it must be an integer from 0 to ${ahead} (limits.max_schedule_ahead_ms)`,
    );
  }
  if (!Number.isSafeInteger(maxMs) || (maxMs !== 0 && (maxMs < delayMs || maxMs > ahead))) {
    return reject(
      'invalid_job',
      `debounce_max_ms is ${maxMs}; it must be 0 (no cap) or an integer from debounce_ms (${delayMs}) to ${ahead} (limits.max_schedule_ahead_ms)`,
    );
  }
  const conflict =
    job.runAtMs !== undefined || job.delayMs !== undefined
      ? 'run_at_ms or delay_ms (the debounce sets the run time)'
      : job.expiresAtMs !== undefined || job.ttlMs !== undefined
        ? 'expires_at_ms or ttl_ms'
        : job.idempotencyKey !== undefined && job.idempotencyKey !== ''
          ? 'an idempotency_key (docs/protocol.md compares the two)'
          : job.dependsOn !== undefined && job.dependsOn.length > 0
            ? 'depends_on'
            : null;
  if (conflict !== null) return reject('invalid_job', `a job with a debounce_key cannot have ${conflict}`);
  return { key: job.debounceKey, delayMs, maxMs: maxMs === 0 ? null : maxMs };
}

/** The job's expiry from `expiresAtMs` or `ttlMs` (null: none), or why it is refused. */
function checkExpiry(
  job: EnqueueRequest,
  nowMs: number,
  runAtMs: number,
  limits: EngineLimits,
): number | null | JobRejection {
  if (job.expiresAtMs !== undefined && job.ttlMs !== undefined) {
    return reject('invalid_job', 'give expires_at_ms or ttl_ms, not both');
  }
  let expiresAtMs: number;
  if (job.expiresAtMs !== undefined) {
    if (!Number.isSafeInteger(job.expiresAtMs)) {
      return reject('invalid_job', 'expires_at_ms must be an integer (ms since epoch)');
    }
    expiresAtMs = job.expiresAtMs;
  } else if (job.ttlMs !== undefined) {
    if (!Number.isSafeInteger(job.ttlMs) || job.ttlMs <= 0) {
      return reject('invalid_job', `ttl_ms is ${job.ttlMs}; it must be a positive integer`);
    }
    expiresAtMs = nowMs + job.ttlMs;
  } else {
    return null;
  }
  if (expiresAtMs <= runAtMs) {
    return reject(
      'invalid_job',
      `the job would expire (at ${new Date(expiresAtMs).toISOString()}) before it is due (at ${new Date(runAtMs).toISOString()}), so it could never run; give a later expires_at_ms or a longer ttl_ms`,
    );
  }
  if (expiresAtMs - nowMs > limits.maxScheduleAheadMs) {
    const days = Math.round(limits.maxScheduleAheadMs / 86_400_000);
    return reject(
      'invalid_job',
      `the job expires ${Math.ceil((expiresAtMs - nowMs) / 86_400_000)} days ahead, the limit is ${days} days (limits.max_schedule_ahead_ms)`,
    );
  }
  return expiresAtMs;
}

export function isRejection(value: ValidJob | JobRejection): value is JobRejection {
  return 'reason' in value;
}

/** The first few of a list and how many more: a message must not grow with a long allowed_types. */
function listed(items: readonly string[], shown = 5): string {
  const first = items.slice(0, shown).join(', ');
  return items.length > shown ? `${first} … and ${items.length - shown} more` : first;
}
