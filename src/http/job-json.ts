/**
 * Jobs in JSON, both ways: the HTTP API's requests and answers, and the body
 * of a push delivery (src/push/). Field names are the protocol's JSON names
 * (proto/sepp/v1/*.proto in lowerCamelCase); what differs from proto3's JSON
 * mapping, for people writing curl and jq:
 *
 * - A payload (or result) whose content type is JSON (`application/json`,
 *   `…+json`) travels as the JSON value itself, in `payload` (`result`), byte
 *   for byte as the producer sent it; any other content, or bytes that are not
 *   valid JSON, travel as base64 in `payloadBase64` (`resultBase64`).
 * - Absent values are null, not proto3's zero values ("" and 0); states,
 *   reasons and kinds are the engine's lower-case strings (`ready`,
 *   `queue_full`), as the docs and the `sepp-error-code` trailer spell them.
 * - Integers are written as JSON numbers (every time in ms fits in 2^53) and
 *   read as numbers or strings of digits.
 */
import type { LifecycleEvent } from '../engine/events/index.ts';
import { normalizeJobId } from '../engine/jobs/index.ts';
import type {
  Ack,
  DependencyPolicy,
  EnqueueAccepted,
  EnqueueRequest,
  EnqueueResult,
  JobInfo,
  JobLink,
  JobProgress,
  LeasedJob,
  NackDirective,
  ProgressReport,
} from '../engine/types.ts';
import { boundedMessage } from './answer-bounds.ts';
import { ApiNames } from './api-names.ts';
import { invalid } from './errors.ts';
import type { JsonInput } from './json-input.ts';
import { ackRequest, progressRequest } from './operation-schemas.ts';
import { isJsonContentType, jsonDocument, type RawJson } from './raw-json.ts';
import { fieldsOf } from './schema-primitives.ts';
import { components } from './schemas.ts';
import { dependencyPolicies } from './workflow-schemas.ts';

const enqueueFields = fieldsOf(components.EnqueueJob ?? {});
/** A job's rejection names the fields of the job as this API does. */
const enqueueNames = ApiNames.of([components.EnqueueJob ?? {}], components);
const ackFields = fieldsOf(ackRequest);
const progressFields = fieldsOf(progressRequest);

// Characters alone, checked in one pass: a pattern of groups of four (`(?:…{4})*`) made V8's
// matcher overflow its stack on strings past 3 MiB, and a large payload was answered 500.
const base64Alphabet = /^[A-Za-z0-9+/]*$/;
const base64UrlAlphabet = /^[A-Za-z0-9_-]*$/;

/** Strict base64 (standard or URL-safe alphabet, padding optional): Node's decoder skips bad characters silently. */
export function decodeBase64(text: string, field: string): Buffer {
  const padding = text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0;
  const body = padding === 0 ? text : text.slice(0, -padding);
  // Groups of four, then a last one of 3 characters and at most one `=`, or of 2 and then `=` or
  // `==` (standard alphabet) or nothing or `==` (URL-safe).
  const rest = body.length % 4;
  const last = rest === 0 ? padding === 0 : rest === 3 ? padding < 2 : rest === 2;
  if (last && (rest !== 2 || padding > 0) && base64Alphabet.test(body)) return Buffer.from(text, 'base64');
  if (last && (rest !== 2 || padding !== 1) && base64UrlAlphabet.test(body)) {
    return Buffer.from(text, 'base64url');
  }
  throw invalid(`${field}: not valid base64`);
}

/** An optional string field where "" means not set, as in the protocol. */
function optional(input: JsonInput, field: string): string | undefined {
  const value = input.string(field);
  return value === '' ? undefined : value;
}

/** Bytes and their content type from `payload` (JSON) or `payloadBase64` (anything). */
function bytesFrom(
  input: JsonInput,
  fields: { json: string; base64: string; contentType: string },
): { bytes: Uint8Array; contentType: string | undefined } | undefined {
  const contentType = optional(input, fields.contentType);
  const json = input.json(fields.json);
  // Not capped like other strings: http.max_request_bytes bounds the body, and the engine holds the
  // decoded bytes to the queue's max_payload_bytes (limits.max_result_bytes), as over gRPC.
  const base64 = input.string(fields.base64, { maxLength: Number.MAX_SAFE_INTEGER });
  if (json !== undefined && base64 !== undefined) {
    throw invalid(
      `${input.name(fields.json)}: give ${fields.json} (a JSON value) or ${fields.base64} (bytes as base64), not both`,
    );
  }
  if (json !== undefined) {
    if (contentType !== undefined && !isJsonContentType(contentType)) {
      throw invalid(
        `${input.name(fields.json)}: holds JSON, but ${fields.contentType} is ${JSON.stringify(contentType.slice(0, 100))}; ` +
          `send other content as ${fields.base64}`,
      );
    }
    return { bytes: Buffer.from(json, 'utf8'), contentType: contentType ?? 'application/json' };
  }
  if (base64 !== undefined) return { bytes: decodeBase64(base64, input.name(fields.base64)), contentType };
  return undefined;
}

/** One job of an enqueue, checked for its types; the engine checks everything else. */
export function enqueueRequestFromJson(input: JsonInput): EnqueueRequest {
  input.only(enqueueFields);
  const payload = bytesFrom(input, { json: 'payload', base64: 'payloadBase64', contentType: 'contentType' });
  const request: EnqueueRequest = {
    queue: input.string('queue') ?? '',
    type: input.string('type') ?? '',
    payload: payload?.bytes ?? new Uint8Array(),
    priority: input.integer('priority') ?? 0,
  };
  const contentType = payload?.contentType ?? optional(input, 'contentType');
  if (contentType !== undefined) request.contentType = contentType;
  const runAtMs = input.integer('runAtMs');
  const delayMs = input.integer('delayMs');
  if (runAtMs !== undefined && delayMs !== undefined) {
    throw invalid(`${input.name('runAtMs')}: give runAtMs or delayMs, not both`);
  }
  if (runAtMs !== undefined) request.runAtMs = runAtMs;
  // As in the protocol, a delay of 0 or less means now.
  if (delayMs !== undefined) request.delayMs = Math.max(0, delayMs);
  const maxAttempts = input.integer('maxAttempts');
  if (maxAttempts !== undefined && maxAttempts !== 0) request.maxAttempts = maxAttempts;
  const idempotencyKey = optional(input, 'idempotencyKey');
  if (idempotencyKey !== undefined) request.idempotencyKey = idempotencyKey;
  const metadata = input.stringMap('metadata');
  if (metadata !== undefined && Object.keys(metadata).length > 0) request.metadata = metadata;
  const traceparent = optional(input, 'traceparent');
  if (traceparent !== undefined) request.traceparent = traceparent;
  const tracestate = optional(input, 'tracestate');
  if (tracestate !== undefined) request.tracestate = tracestate;
  const expiresAtMs = input.integer('expiresAtMs');
  const ttlMs = input.integer('ttlMs');
  if (expiresAtMs !== undefined && ttlMs !== undefined) {
    throw invalid(`${input.name('expiresAtMs')}: give expiresAtMs or ttlMs, not both`);
  }
  if (expiresAtMs !== undefined) request.expiresAtMs = expiresAtMs;
  if (ttlMs !== undefined) request.ttlMs = ttlMs;
  const timeoutMs = input.integer('timeoutMs');
  if (timeoutMs !== undefined && timeoutMs !== 0) request.timeoutMs = timeoutMs;
  if (input.boolean('uniqueWhileActive') === true) request.uniqueWhileActive = true;
  const group = optional(input, 'group');
  if (group !== undefined) request.group = group;
  const debounceKey = optional(input, 'debounceKey');
  if (debounceKey !== undefined) request.debounceKey = debounceKey;
  const debounceMs = input.integer('debounceMs');
  if (debounceMs !== undefined && debounceMs !== 0) request.debounceMs = debounceMs;
  const debounceMaxMs = input.integer('debounceMaxMs');
  if (debounceMaxMs !== undefined && debounceMaxMs !== 0) request.debounceMaxMs = debounceMaxMs;
  // How many dependencies a job may name is the engine's rule (limits.max_dependencies_per_job).
  const dependsOn = input
    .strings('dependsOn', Number.MAX_SAFE_INTEGER)
    .map((id, i) => jobIdFrom(id, `${input.name('dependsOn')}[${i}]`));
  if (dependsOn.length > 0) request.dependsOn = dependsOn;
  const policy = optional(input, 'onDependencyFailure');
  if (policy !== undefined) {
    if (!(dependencyPolicies as readonly string[]).includes(policy)) {
      throw invalid(`${input.name('onDependencyFailure')}: must be one of ${dependencyPolicies.join(', ')}`);
    }
    request.onDependencyFailure = policy as DependencyPolicy;
  }
  return request;
}

/** A job id (or a batch id: `what`) from the path or a field: a UUID (upper-case hex accepted). */
export function jobIdFrom(value: string, field: string, what: 'job' | 'batch' = 'job'): string {
  if (value === '') throw invalid(`${field}: required`);
  const id = normalizeJobId(value);
  if (id === null) {
    throw invalid(
      `${field}: ${JSON.stringify(value.slice(0, 64))} is not a ${what} id (a UUID such as 01a2365f-985c-7000-b7f9-d57e51622832)`,
    );
  }
  return id;
}

/** The fencing token: the attempt the lease was given. */
export function attemptFrom(input: JsonInput): number {
  const attempt = input.integer('attempt');
  if (attempt === undefined || attempt < 1) {
    throw invalid(`${input.name('attempt')}: required, the attempt number the lease was given (1 or more)`);
  }
  return attempt;
}

/** An ack; in a batch its item also names the job (`jobId`, checked by the caller). */
export function ackFromJson(input: JsonInput, jobId: string, extraFields: readonly string[] = []): Ack {
  input.only([...ackFields, ...extraFields]);
  const ack: Ack = { jobId, attempt: attemptFrom(input) };
  const result = bytesFrom(input, {
    json: 'result',
    base64: 'resultBase64',
    contentType: 'resultContentType',
  });
  if (result !== undefined) {
    ack.result = result.bytes;
    if (result.contentType !== undefined) ack.resultContentType = result.contentType;
  }
  return ack;
}

export function nackDirectiveFromJson(input: JsonInput): NackDirective {
  const backoff = input.boolean('backoff');
  const retryDelayMs = input.integer('retryDelayMs');
  const deadLetter = input.boolean('deadLetter');
  const giveBack = input.boolean('giveBack');
  const given = [backoff, retryDelayMs, deadLetter, giveBack].filter((value) => value !== undefined);
  if (given.length > 1) {
    throw invalid(
      `${input.name('retryDelayMs')}: give at most one of backoff, retryDelayMs, deadLetter and giveBack`,
    );
  }
  if (retryDelayMs !== undefined) return { kind: 'delay', delayMs: Math.max(0, retryDelayMs) };
  if (deadLetter === true) return { kind: 'dead_letter' };
  if (giveBack === true) return { kind: 'give_back' };
  return { kind: 'backoff' };
}

export function progressFromJson(input: JsonInput, jobId: string): ProgressReport {
  input.only(progressFields);
  const report: ProgressReport = { jobId, attempt: attemptFrom(input) };
  const percent = input.number('percent');
  if (percent !== undefined) report.percent = percent;
  const json = input.json('json');
  if (json !== undefined && input.value.json !== null) report.json = json;
  if (report.percent === undefined && report.json === undefined) {
    throw invalid('percent or json: report at least one (a percentage from 0 to 100, or a JSON document)');
  }
  return report;
}

/** A payload or result: the JSON value when it is JSON, else base64. */
function bytesToJson(
  bytes: Uint8Array | null,
  contentType: string | null,
  names: { json: string; base64: string },
): Record<string, RawJson | string | null> {
  if (bytes === null) return { [names.json]: null };
  const document = jsonDocument(bytes, contentType);
  if (document !== null) return { [names.json]: document };
  return { [names.base64]: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}

export function payloadToJson(
  bytes: Uint8Array,
  contentType: string,
): Record<string, RawJson | string | null> {
  return bytesToJson(bytes, contentType, { json: 'payload', base64: 'payloadBase64' });
}

export function resultToJson(
  bytes: Uint8Array | null,
  contentType: string | null,
): Record<string, RawJson | string | null> {
  return {
    ...bytesToJson(bytes, contentType, { json: 'result', base64: 'resultBase64' }),
    resultContentType: bytes === null ? null : contentType,
  };
}

export function acceptedToJson(accepted: EnqueueAccepted) {
  return {
    jobId: accepted.jobId,
    deduplicated: accepted.deduplicated,
    debounced: accepted.debounced === true,
  };
}

export function enqueueResultToJson(result: EnqueueResult) {
  return result.ok
    ? { accepted: acceptedToJson(result) }
    : { rejection: { reason: result.reason, message: boundedMessage(enqueueNames.rewrite(result.message)) } };
}

/** The rejections of an all-or-none enqueue (atomic, a flow), each by its job's index. */
export function indexedRejectionsToJson(
  rejections: readonly { index: number; reason: string; message: string }[],
) {
  return rejections.map((r) => ({
    index: r.index,
    reason: r.reason,
    message: boundedMessage(enqueueNames.rewrite(r.message)),
  }));
}

/** A leased job as a worker (or a push receiver) gets it: LeasedJob in job.proto. */
export function leasedJobToJson(job: LeasedJob) {
  return {
    jobId: job.id,
    queue: job.queue,
    type: job.type,
    ...payloadToJson(job.payload, job.contentType),
    contentType: job.contentType,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    leaseDeadlineMs: job.leaseDeadlineMs,
    enqueuedAtMs: job.enqueuedAtMs,
    runAtMs: job.runAtMs,
    metadata: job.metadata,
    traceparent: job.traceparent,
    tracestate: job.tracestate,
    idempotencyKey: job.idempotencyKey,
    lastError: job.lastError,
    group: job.group,
    timeoutAtMs: job.timeoutAtMs,
    flowLimited: job.flowLimited,
    dependencyResults: (job.dependencyResults ?? []).map((d) => ({
      jobId: d.jobId,
      name: d.name,
      state: d.state,
      ...resultToJson(d.result, d.resultContentType),
      resultOmitted: d.resultOmitted,
    })),
    batchId: job.batchId,
    // Only a batch member's lease has one; the worker it was handed to proves the member with it.
    leaseToken: job.leaseToken ?? null,
  };
}

export function progressToJson(progress: JobProgress | null) {
  if (progress === null) return null;
  return {
    percent: progress.percent,
    json:
      progress.json === null ? null : (jsonDocument(Buffer.from(progress.json), 'application/json') ?? null),
    reportedAtMs: progress.atMs,
  };
}

/** Everything the server knows about a job: Job in job.proto. */
export function jobToJson(job: JobInfo) {
  return {
    jobId: job.id,
    queue: job.queue,
    type: job.type,
    state: job.state,
    priority: job.priority,
    ...payloadToJson(job.payload, job.contentType),
    payloadBytes: job.payload.length,
    contentType: job.contentType,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    idempotencyKey: job.idempotencyKey,
    metadata: job.metadata,
    traceparent: job.traceparent,
    tracestate: job.tracestate,
    enqueuedAtMs: job.enqueuedAtMs,
    runAtMs: job.runAtMs,
    leasedAtMs: job.leasedAtMs,
    leaseDeadlineMs: job.leaseDeadlineMs,
    workerId: job.workerId,
    lastError: job.lastError,
    errors: job.errors.map((e) => ({
      attempt: e.attempt,
      atMs: e.atMs,
      error: e.error,
      errorClass: e.errorClass,
      errorStack: e.stack,
    })),
    deadReason: job.deadReason,
    failedAtMs: job.failedAtMs,
    completedAtMs: job.completedAtMs,
    expiresAtMs: job.expiresAtMs,
    timeoutMs: job.timeoutMs,
    timeoutAtMs: job.timeoutAtMs,
    debounceKey: job.debounceKey,
    debounceUntilMs: job.debounceUntilMs,
    cancelledAtMs: job.cancelledAtMs,
    cancelledBy: job.cancelledBy,
    ...resultToJson(job.result, job.resultContentType),
    progress: progressToJson(job.progress),
    group: job.group,
    dependencies: (job.dependencies ?? []).map(jobLinkToJson),
    dependents: (job.dependents ?? []).map(jobLinkToJson),
    batchId: job.batchId ?? null,
    outcomeOnly: job.outcomeOnly,
  };
}

function jobLinkToJson(link: JobLink) {
  return {
    jobId: link.id,
    queue: link.queue,
    type: link.type,
    state: link.state,
    edge: link.edge,
    name: link.name,
  };
}

/** A job lifecycle event: JobEvent in events.proto, with only the fields its kind has. */
export function eventToJson(event: LifecycleEvent) {
  const base = {
    sequence: event.sequence,
    kind: event.kind,
    atMs: event.atMs,
    jobId: event.jobId,
    queue: event.queue,
    type: event.type,
    attempt: event.attempt,
  };
  switch (event.kind) {
    case 'enqueued':
      return { ...base, state: event.state, runAtMs: event.runAtMs, priority: event.priority };
    case 'leased':
      return { ...base, leaseDeadlineMs: event.leaseDeadlineMs, workerId: event.workerId };
    case 'progress':
      return { ...base, progress: progressToJson(event.progress) };
    case 'completed':
      return { ...base, retained: event.retained, ...resultToJson(event.result, event.resultContentType) };
    case 'retry_scheduled':
      return { ...base, state: event.state, runAtMs: event.runAtMs, error: event.error };
    case 'dead_lettered':
      return { ...base, deadReason: event.reason, error: event.error };
    case 'cancelled':
      return { ...base, previousState: event.previousState };
    case 'released':
      return { ...base, state: event.state, runAtMs: event.runAtMs };
    case 'lease_undone':
      return { ...base, state: event.state };
    case 'batch_ended':
    case 'batch_first_death':
      return { ...base, batch: event.batch };
  }
}
