/** Turns stored rows into the engine's public shapes. */
import type { JobRow, LeasedRow } from '../../store/rows.ts';
import type { FinishedOutcome } from '../finished-outcomes.ts';
import type { AttemptError, DeadReason, ErrorDetail, JobInfo, JobState, LeasedJob } from '../types.ts';

export function parseMetadata(json: string | null): Record<string, string> {
  return json === null ? {} : (JSON.parse(json) as Record<string, string>);
}

/** One entry of `errors_json`; `class` and `stack` only when the worker gave them (migration 0018). */
interface StoredAttemptError {
  attempt: number;
  at_ms: number;
  error: string;
  class?: string;
  stack?: string;
}

export function parseErrors(json: string | null): AttemptError[] {
  if (json === null) return [];
  return (JSON.parse(json) as StoredAttemptError[]).map((e) => ({
    attempt: e.attempt,
    atMs: e.at_ms,
    error: e.error,
    errorClass: e.class ?? null,
    stack: e.stack ?? null,
  }));
}

/** The stored entry of one failed attempt, with the worker's class and stack when given. */
export function errorEntry(
  attempt: number,
  atMs: number,
  error: string,
  detail: ErrorDetail | null,
): StoredAttemptError {
  const entry: StoredAttemptError = { attempt, at_ms: atMs, error };
  if (detail !== null && detail.errorClass !== null) entry.class = detail.errorClass;
  if (detail !== null && detail.stack !== null) entry.stack = detail.stack;
  return entry;
}

/** Appends one attempt's error to the stored history, keeping the newest `keep`. */
export function appendError(json: string | null, entry: StoredAttemptError, keep: number): string {
  const list = json === null ? [] : (JSON.parse(json) as StoredAttemptError[]);
  list.push(entry);
  return JSON.stringify(list.length > keep ? list.slice(list.length - keep) : list);
}

/** A leased row as its worker gets it; `flowLimited`: its queue had a flow limit as it was leased. */
export function leasedJobFromRow(row: LeasedRow, flowLimited: boolean): LeasedJob {
  return {
    id: row.id,
    queue: row.queue,
    type: row.type,
    payload: row.payload,
    contentType: row.content_type,
    priority: row.priority,
    attempt: row.attempt,
    maxAttempts: row.attempt_base + row.max_attempts,
    leaseDeadlineMs: row.lease_deadline_ms!,
    enqueuedAtMs: row.enqueued_at_ms,
    runAtMs: row.run_at_ms,
    metadata: parseMetadata(row.metadata_json),
    traceparent: row.traceparent,
    tracestate: row.tracestate,
    idempotencyKey: row.idempotency_key,
    lastError: row.last_error,
    group: row.group_key,
    timeoutAtMs: row.timeout_at_ms,
    flowLimited,
    batchId: row.batch_id,
  };
}

/** What GetJob tells of a job deleted as it finished: its outcome, nothing it was enqueued with. */
export function jobInfoFromOutcome(outcome: FinishedOutcome): JobInfo {
  const { state, endedAtMs, lastError } = outcome;
  return {
    id: outcome.id,
    seq: 0,
    queue: outcome.queue,
    type: outcome.type,
    state,
    priority: 0,
    payload: new Uint8Array(0),
    contentType: '',
    attempt: outcome.attempt,
    maxAttempts: 0,
    idempotencyKey: null,
    metadata: {},
    traceparent: null,
    tracestate: null,
    enqueuedAtMs: 0,
    runAtMs: 0,
    leasedAtMs: outcome.startedAtMs ?? null,
    leaseDeadlineMs: null,
    workerId: null,
    lastError,
    errors: [],
    deadReason: outcome.deadReason,
    failedAtMs: state === 'dead' ? endedAtMs : null,
    completedAtMs: state === 'completed' ? endedAtMs : null,
    expiresAtMs: null,
    timeoutMs: null,
    timeoutAtMs: null,
    debounceKey: null,
    debounceUntilMs: null,
    cancelledAtMs: state === 'cancelled' ? endedAtMs : null,
    cancelledBy: outcome.cancelledBy,
    result: outcome.result,
    resultContentType: outcome.result === null ? null : outcome.resultContentType,
    progress: null,
    group: null,
    outcomeOnly: true,
  };
}

export function jobInfoFromRow(row: JobRow): JobInfo {
  return {
    id: row.id,
    seq: row.seq,
    queue: row.queue,
    type: row.type,
    state: row.state as JobState,
    priority: row.priority,
    payload: row.payload,
    contentType: row.content_type,
    attempt: row.attempt,
    maxAttempts: row.attempt_base + row.max_attempts,
    idempotencyKey: row.idempotency_key,
    metadata: parseMetadata(row.metadata_json),
    traceparent: row.traceparent,
    tracestate: row.tracestate,
    enqueuedAtMs: row.enqueued_at_ms,
    runAtMs: row.run_at_ms,
    leasedAtMs: row.leased_at_ms,
    leaseDeadlineMs: row.lease_deadline_ms,
    workerId: row.worker_id,
    lastError: row.last_error,
    errors: parseErrors(row.errors_json),
    deadReason: row.dead_reason as DeadReason | null,
    failedAtMs: row.failed_at_ms,
    completedAtMs: row.completed_at_ms,
    expiresAtMs: row.expires_at_ms,
    timeoutMs: row.timeout_ms ?? null,
    // The attempt's end means something only while it runs.
    timeoutAtMs: row.state === 'leased' ? (row.timeout_at_ms ?? null) : null,
    debounceKey: row.debounce_key ?? null,
    debounceUntilMs: row.debounce_until_ms ?? null,
    cancelledAtMs: row.cancelled_at_ms,
    cancelledBy: row.cancelled_by,
    result: row.result,
    resultContentType: row.result === null ? null : row.result_content_type,
    progress:
      row.progress_at_ms === null
        ? null
        : { percent: row.progress_percent, json: row.progress_json, atMs: row.progress_at_ms },
    group: row.group_key,
    outcomeOnly: false,
  };
}
