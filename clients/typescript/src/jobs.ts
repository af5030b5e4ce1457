/**
 * Jobs as the SDK hands them out: a leased job (from `reserve` or a Worker)
 * and a job's full record (from `getJob` and dead-letter listings). Both keep
 * the payload as bytes and decode it on request.
 */
import {
  DependencyEdgeState,
  DeadReason as ProtoDeadReason,
  type DependencyResult as ProtoDependencyResult,
  type Job as ProtoJob,
  type JobLink as ProtoJobLink,
  JobState as ProtoJobState,
  type LeasedJob as ProtoLeasedJob,
} from './gen/sepp/v1/job.js';
import { decodeResult, type JobProgress, progressFromProto } from './results.ts';
import type { AttemptError, DeadReason, JobState, LeaseRef } from './types.ts';

export const jobStateToProto: Record<JobState, ProtoJobState> = {
  scheduled: ProtoJobState.SCHEDULED,
  ready: ProtoJobState.READY,
  leased: ProtoJobState.LEASED,
  completed: ProtoJobState.COMPLETED,
  dead: ProtoJobState.DEAD,
  cancelled: ProtoJobState.CANCELLED,
  waiting: ProtoJobState.WAITING,
};

/** name → protocol value, turned around. */
function invert<N extends string, V extends number>(toProto: Record<N, V>): Partial<Record<V, N>> {
  return Object.fromEntries(Object.entries(toProto).map(([name, value]) => [value, name])) as Partial<
    Record<V, N>
  >;
}

const stateNames = invert(jobStateToProto);

export function jobStateName(state: ProtoJobState): JobState {
  const name = stateNames[state];
  if (name === undefined) throw new TypeError(`the server sent an unknown job state ${state}`);
  return name;
}

export const deadReasonToProto: Record<DeadReason, ProtoDeadReason> = {
  attempts_exhausted: ProtoDeadReason.ATTEMPTS_EXHAUSTED,
  lease_expired: ProtoDeadReason.LEASE_EXPIRED,
  dead_lettered: ProtoDeadReason.DEAD_LETTERED,
  expired: ProtoDeadReason.EXPIRED,
  timeout: ProtoDeadReason.TIMEOUT,
};

const deadReasonNames = invert(deadReasonToProto);

/** The SDK's name of a protocol dead reason; null for none (or one this SDK does not know). */
export function deadReasonName(reason: ProtoDeadReason): DeadReason | null {
  return deadReasonNames[reason] ?? null;
}

const dateOrNull = (ms: number): Date | null => (ms === 0 ? null : new Date(ms));
const textOrNull = (text: string): string | null => (text === '' ? null : text);

/** A job leased to this worker: run it, then ack or nack it (with its `attempt`) before `leaseDeadline`. */
/** What one job a leased job depended on ended with. */
export interface DependencyResult {
  /** The dependency's id. */
  jobId: string;
  /** Its name in the flow that made the dependency; null when named by id. */
  name: string | null;
  /** Its state now; null once it was swept, or (then without result) when of a queue the worker's key may not see. */
  state: JobState | null;
  /** Its result decoded by its content type (JSON parsed, `text/*` a string, else a Buffer); null without one. */
  result: unknown;
  /** The result's bytes; null without one, or when left out. */
  resultBytes: Buffer | null;
  resultContentType: string | null;
  /** True when the results together were above the server's limit: fetch this one with `getJob`. */
  resultOmitted: boolean;
}

const noDependencyResults: readonly DependencyResult[] = Object.freeze([]);

function dependencyResultFromProto(d: ProtoDependencyResult): DependencyResult {
  const bytes = d.result.length === 0 && d.resultContentType === '' ? null : d.result;
  return {
    jobId: d.jobId,
    name: textOrNull(d.name),
    state: d.state === ProtoJobState.UNSPECIFIED ? null : jobStateName(d.state),
    result: bytes === null ? null : decodeResult(bytes, d.resultContentType),
    resultBytes: bytes,
    resultContentType: textOrNull(d.resultContentType),
    resultOmitted: d.resultOmitted,
  };
}

export class LeasedJob implements LeaseRef {
  /** The job's id. */
  readonly id: string;
  /** The queue it came from. */
  readonly queue: string;
  /** The job type: which handler should run it. */
  readonly type: string;
  /** The job's input, as enqueued. */
  readonly payload: Buffer;
  /** MIME type of the payload (`application/octet-stream` when the producer gave none). */
  readonly contentType: string;
  /** 0 to 9, 9 first. */
  readonly priority: number;
  /** The lease's fencing token: 1 on first delivery, one more on each redelivery. */
  readonly attempt: number;
  /** Deliveries allowed before the job goes dead; `attempt === maxAttempts` is the last try. */
  readonly maxAttempts: number;
  /** When the lease ends, in ms since the Unix epoch on the server's clock. */
  readonly leaseDeadlineMs: number;
  /** When the job was enqueued, in ms since the Unix epoch. */
  readonly enqueuedAtMs: number;
  /** When the job became due, in ms since the Unix epoch. */
  readonly runAtMs: number;
  /** The metadata given at enqueue. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The producer's W3C traceparent, or null. */
  readonly traceparent: string | null;
  /** The producer's W3C tracestate, or null. */
  readonly tracestate: string | null;
  /** The idempotency key given at enqueue, or null. */
  readonly idempotencyKey: string | null;
  /** The previous attempt's error, or null. */
  readonly lastError: string | null;
  /** The group given at enqueue, or null. */
  readonly group: string | null;
  /**
   * When this attempt must end (its hard timeout: `executionTimeoutMs` at enqueue, or the
   * queue's `defaultTimeoutMs`), in ms since the Unix epoch on the server's clock;
   * null when it has none. The lease never extends past it.
   */
  readonly timeoutAtMs: number | null;
  /**
   * What the jobs it depended on (`dependsOn`, a flow's `after`) ended with, in
   * enqueue order; empty for a job without dependencies.
   */
  readonly dependencyResults: readonly DependencyResult[];
  /**
   * The batch the job is a member of, or null outside batches: its handler adds to it with
   * `addToBatch(job.batchId, jobs, { fromMember: job.id })` (the SDK passes the lease's token).
   */
  readonly batchId: string | null;
  /** Kept off the object's own properties, so that logging or serialising the job leaves it out. */
  readonly #leaseToken: string | null;

  /** Wraps a protocol message; the SDK builds these, applications receive them. */
  constructor(job: ProtoLeasedJob) {
    this.id = job.jobId;
    this.queue = job.queue;
    this.type = job.type;
    this.payload = job.payload;
    this.contentType = job.contentType;
    this.priority = job.priority;
    this.attempt = job.attempt;
    this.maxAttempts = job.maxAttempts;
    this.leaseDeadlineMs = job.leaseDeadlineMs;
    this.enqueuedAtMs = job.enqueuedAtMs;
    this.runAtMs = job.runAtMs;
    this.metadata = job.metadata;
    this.traceparent = textOrNull(job.traceparent);
    this.tracestate = textOrNull(job.tracestate);
    this.idempotencyKey = textOrNull(job.idempotencyKey);
    this.lastError = textOrNull(job.lastError);
    this.group = textOrNull(job.group);
    this.timeoutAtMs = job.timeoutAtMs === 0 ? null : job.timeoutAtMs;
    this.dependencyResults =
      job.dependencyResults === undefined || job.dependencyResults.length === 0
        ? noDependencyResults
        : job.dependencyResults.map(dependencyResultFromProto);
    this.batchId = textOrNull(job.batchId ?? '');
    this.#leaseToken = this.batchId === null ? null : textOrNull(job.leaseToken ?? '');
  }

  /**
   * Only for a batch member: the secret token of this lease, which proves the member when it
   * adds to its sealed batch (`fromMemberToken`; the SDK passes it itself while the handler
   * runs in this process). Null outside batches. Keep it as secret as an API key: whoever
   * holds it may add jobs to the batch while this lease lasts.
   */
  get leaseToken(): string | null {
    return this.#leaseToken;
  }

  /** When the lease ends (server clock). */
  get leaseDeadline(): Date {
    return new Date(this.leaseDeadlineMs);
  }

  /** When the job was enqueued. */
  get enqueuedAt(): Date {
    return new Date(this.enqueuedAtMs);
  }

  /** True on the last allowed attempt: failing now makes the job dead. */
  get isLastAttempt(): boolean {
    return this.attempt >= this.maxAttempts;
  }

  /** The payload parsed as JSON (throws a SyntaxError when it is not JSON). */
  json<T = unknown>(): T {
    return JSON.parse(this.payload.toString('utf8')) as T;
  }

  /** The payload as UTF-8 text. */
  text(): string {
    return this.payload.toString('utf8');
  }
}

/** Everything the server knows about a job. */
export class Job {
  /** The job's id (UUIDv7, time-ordered). */
  readonly id: string;
  /** The queue it is on. */
  readonly queue: string;
  /** The job type. */
  readonly type: string;
  /** Where the job is in its lifecycle. */
  readonly state: JobState;
  /** 0 to 9, 9 first. */
  readonly priority: number;
  /** The job's input (empty in dead-letter listings; see `payloadBytes`). */
  readonly payload: Buffer;
  /** Size of the payload in bytes (also set in listings). */
  readonly payloadBytes: number;
  /** MIME type of the payload. */
  readonly contentType: string;
  /** Deliveries so far (0 before the first). */
  readonly attempt: number;
  /** Deliveries allowed before the job goes dead. */
  readonly maxAttempts: number;
  /** The idempotency key given at enqueue, or null. */
  readonly idempotencyKey: string | null;
  /** The metadata given at enqueue. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The producer's W3C traceparent, or null. */
  readonly traceparent: string | null;
  /** The producer's W3C tracestate, or null. */
  readonly tracestate: string | null;
  /** When the job was enqueued. */
  readonly enqueuedAt: Date;
  /** When the job is (or was) due. */
  readonly runAt: Date;
  /** When the current lease began; null unless leased. */
  readonly leasedAt: Date | null;
  /** When the current lease ends; null unless leased. */
  readonly leaseDeadline: Date | null;
  /** The worker id of the current lease, or null. */
  readonly workerId: string | null;
  /** The most recent attempt's error, or null. */
  readonly lastError: string | null;
  /** The error of every failed attempt, oldest first (bounded; empty in listings). */
  readonly errors: readonly AttemptError[];
  /** Why the job is dead; null unless dead. */
  readonly deadReason: DeadReason | null;
  /** When the job went dead; null unless dead. */
  readonly failedAt: Date | null;
  /** When the job was acked; null unless completed. */
  readonly completedAt: Date | null;
  /** When the job stops being handed out (its TTL); null when it never expires. */
  readonly expiresAt: Date | null;
  /** The job's own hard timeout per attempt, in ms; null when it takes its queue's `defaultTimeoutMs`. */
  readonly timeoutMs: number | null;
  /** When the current attempt must end (its hard timeout); null unless leased with one. */
  readonly timeoutAt: Date | null;
  /** The debounce key given at enqueue (`debounceKey`); null if none. */
  readonly debounceKey: string | null;
  /** The latest time a debounced enqueue may push the job's run time to (first enqueue + `debounceMaxMs`); null: no cap. */
  readonly debounceUntil: Date | null;
  /** When a cancel was asked for; null if never (set on cancelled jobs and on leased ones being stopped). */
  readonly cancelledAt: Date | null;
  /** Who asked for the cancel (`key:NAME`, an admin UI user or `anonymous`); null if never. */
  readonly cancelledBy: string | null;
  /**
   * What the job returned (a completed job's ack result), decoded by its
   * content type: JSON parsed, `text/*` as a string, anything else a Buffer;
   * null when it has none. Kept while the queue retains completed jobs.
   */
  readonly result: unknown;
  /** The result's bytes, or null (empty in listings; see `resultSize`). */
  readonly resultBytes: Buffer | null;
  /** The result's size in bytes (also in listings); 0 without a result. */
  readonly resultSize: number;
  /** The result's MIME type, or null without a result. */
  readonly resultContentType: string | null;
  /** How far along the job is, as its worker last reported; null when it never did. */
  readonly progress: JobProgress | null;
  /** The group given at enqueue, or null. */
  readonly group: string | null;
  /**
   * True when the job was deleted as it finished (acked on a queue that keeps
   * no completed jobs, or dead or cancelled where that retention is 0) and the
   * server answered with its outcome only, which it keeps in memory for
   * `limits.finished_outcome_ms` (default 5 minutes; not across a restart): then
   * only `id`, `queue`, `type`, `state`, `attempt`, when it ended (`completedAt`,
   * `failedAt` or `cancelledAt`), the result, `lastError` and `deadReason`, and
   * `cancelledBy` are set; the payload is empty, the metadata and the error
   * history are not kept, and `enqueuedAt` and `runAt` are the epoch.
   */
  readonly outcomeOnly: boolean;
  /** The jobs it depends on (`dependsOn`, a flow's `after`), in enqueue order; empty for other jobs. */
  readonly dependencies: readonly JobLink[];
  /** Up to 100 jobs that depend on it, oldest first (`client.getFlow` has them all). */
  readonly dependents: readonly JobLink[];
  /** The batch it is a member of, or null. */
  readonly batchId: string | null;

  /** Wraps a protocol message; the SDK builds these, applications receive them. */
  constructor(job: ProtoJob) {
    this.id = job.jobId;
    this.queue = job.queue;
    this.type = job.type;
    this.state = jobStateName(job.state);
    this.priority = job.priority;
    this.payload = job.payload;
    this.payloadBytes = job.payloadBytes;
    this.contentType = job.contentType;
    this.attempt = job.attempt;
    this.maxAttempts = job.maxAttempts;
    this.idempotencyKey = textOrNull(job.idempotencyKey);
    this.metadata = job.metadata;
    this.traceparent = textOrNull(job.traceparent);
    this.tracestate = textOrNull(job.tracestate);
    this.enqueuedAt = new Date(job.enqueuedAtMs);
    this.runAt = new Date(job.runAtMs);
    this.leasedAt = dateOrNull(job.leasedAtMs);
    this.leaseDeadline = dateOrNull(job.leaseDeadlineMs);
    this.workerId = textOrNull(job.workerId);
    this.lastError = textOrNull(job.lastError);
    this.errors = job.errors.map((e) => ({
      attempt: e.attempt,
      at: new Date(e.atMs),
      error: e.error,
      errorClass: textOrNull(e.errorClass),
      stack: textOrNull(e.errorStack),
    }));
    this.deadReason = deadReasonNames[job.deadReason] ?? null;
    this.failedAt = dateOrNull(job.failedAtMs);
    this.completedAt = dateOrNull(job.completedAtMs);
    this.expiresAt = dateOrNull(job.expiresAtMs);
    this.timeoutMs = job.timeoutMs === 0 ? null : job.timeoutMs;
    this.timeoutAt = dateOrNull(job.timeoutAtMs);
    this.debounceKey = textOrNull(job.debounceKey);
    this.debounceUntil = dateOrNull(job.debounceUntilMs);
    this.cancelledAt = dateOrNull(job.cancelledAtMs);
    this.cancelledBy = textOrNull(job.cancelledBy);
    const result = job.result;
    this.resultBytes = result?.data ?? null;
    this.resultSize = job.resultBytes;
    this.resultContentType = result === undefined ? null : result.contentType || 'application/octet-stream';
    this.dependencies = (job.dependencies ?? []).map(jobLinkOf);
    this.dependents = (job.dependents ?? []).map(jobLinkOf);
    this.batchId = textOrNull(job.batchId ?? '');
    this.result = result === undefined ? null : decodeResult(result.data, this.resultContentType!);
    this.progress = progressFromProto(job.progress);
    this.group = textOrNull(job.group);
    this.outcomeOnly = job.outcomeOnly;
  }

  /** The payload parsed as JSON (throws a SyntaxError when it is not JSON). */
  json<T = unknown>(): T {
    return JSON.parse(this.payload.toString('utf8')) as T;
  }

  /** The payload as UTF-8 text. */
  text(): string {
    return this.payload.toString('utf8');
  }
}

/** A job at the other end of a dependency (`Job.dependencies`, `Job.dependents`). */
export interface JobLink {
  id: string;
  /** null once that job was swept (the edge outlives it). */
  queue: string | null;
  type: string | null;
  state: JobState | null;
  /** The edge: `pending`, `completed`, or `failed` (the dependency failed and the edge counted it). */
  edge: 'pending' | 'completed' | 'failed';
  /** The dependency's name in its flow; null when named by id (and for dependents). */
  name: string | null;
}

const edgeNames: Record<number, JobLink['edge']> = {
  [DependencyEdgeState.PENDING]: 'pending',
  [DependencyEdgeState.COMPLETED]: 'completed',
  [DependencyEdgeState.FAILED]: 'failed',
};

/** A protocol edge state as the SDK names it. */
export function edgeStateName(state: DependencyEdgeState): JobLink['edge'] {
  return edgeNames[state] ?? 'pending';
}

function jobLinkOf(link: ProtoJobLink): JobLink {
  return {
    id: link.jobId,
    queue: textOrNull(link.queue),
    type: textOrNull(link.type),
    state: link.state === ProtoJobState.UNSPECIFIED ? null : jobStateName(link.state),
    edge: edgeStateName(link.edge),
    name: textOrNull(link.name),
  };
}
