/**
 * Job events from the server's Events stream, as an async iterable that
 * resumes by itself: after a disconnect (UNAVAILABLE) it subscribes again
 * from the last event it saw, so no event is missed or repeated while the
 * server still keeps it. A resume the server can no longer serve (the
 * backlog moved on, or the server restarted) ends the iteration with an
 * OUT_OF_RANGE SeppError: read the state you need with `getJob` and
 * subscribe again.
 *
 * States: connecting → replaying (from the oldest kept event or a resume
 * point) → live (after `caughtUp`) → reconnecting (after UNAVAILABLE, with
 * backoff, unless marked `sepp-retry: operator` or `never`: events turned off
 * on the server) → live …; any → closed (close(), the signal, or an error).
 * Events the application has not read yet are buffered up to a bound; past
 * it the stream stops reading, and a server whose backlog then moves past
 * this subscriber ends it (RESOURCE_EXHAUSTED).
 */
import { type ClientReadableStream, type ServiceError, status } from '@grpc/grpc-js';
import { backoffDelayMs } from './backoff.ts';
import { type BatchInfo, batchOf } from './batches.ts';
import { cancelCall } from './cancel-call.ts';
import type { Connection } from './connection.ts';
import { connectionClosedByServer, SeppError, toSeppError } from './errors.ts';
import {
  type EventsRequest,
  type EventsResponse,
  type JobEvent as ProtoJobEvent,
  JobEventKind as ProtoKind,
} from './gen/sepp/v1/events.js';
import { JobState as ProtoJobState } from './gen/sepp/v1/job.js';
import { deadReasonName, jobStateName } from './jobs.ts';
import { decodeResult, type JobProgress, progressFromProto } from './results.ts';
import type { DeadReason, JobState } from './types.ts';

/** What happened to a job. */
export type JobEventKind =
  | 'enqueued'
  | 'leased'
  | 'progress'
  | 'completed'
  | 'retry_scheduled'
  | 'dead_lettered'
  | 'cancelled'
  /** A waiting job's dependencies all resolved: now ready or scheduled. */
  | 'released'
  /** A batch ended (`jobId` is its id; `batch` its counts); its completion jobs were enqueued. */
  | 'batch_ended'
  /** A batch's first member died (`jobId` is the batch's id; `batch.firstDeadId` the member); its on_death job was enqueued. */
  | 'batch_first_death'
  /**
   * A lease was undone, its job `ready` again with no attempt counted (`attempt` is the undone
   * lease's, as its `leased` event said): its answer never reached a worker (the job is back on
   * the attempt it had before), or its worker gave it back unstarted (the attempt stays, the
   * job's `maxAttempts` grows by one).
   */
  | 'lease_undone';

const kindToProto: Record<JobEventKind, ProtoKind> = {
  enqueued: ProtoKind.ENQUEUED,
  leased: ProtoKind.LEASED,
  progress: ProtoKind.PROGRESS,
  completed: ProtoKind.COMPLETED,
  retry_scheduled: ProtoKind.RETRY_SCHEDULED,
  dead_lettered: ProtoKind.DEAD_LETTERED,
  cancelled: ProtoKind.CANCELLED,
  released: ProtoKind.RELEASED,
  batch_ended: ProtoKind.BATCH_ENDED,
  batch_first_death: ProtoKind.BATCH_FIRST_DEATH,
  lease_undone: ProtoKind.LEASE_UNDONE,
};
const kindNames = new Map<ProtoKind, JobEventKind>(
  Object.entries(kindToProto).map(([name, value]) => [value, name as JobEventKind]),
);

/** One thing that happened to one job (see the protocol's events.proto for which fields each kind sets). */
export interface JobEvent {
  /** Position in the server run's event sequence (commit order). */
  sequence: number;
  kind: JobEventKind;
  /** When it happened (server clock). */
  at: Date;
  jobId: string;
  queue: string;
  type: string;
  /** The job's attempt: 0 when enqueued, the lease's from `leased` on. */
  attempt: number;
  /** `enqueued`, `retry_scheduled`, `released`: `ready` or `scheduled`; `lease_undone`: `ready`. */
  state: JobState | null;
  /** `enqueued`, `retry_scheduled`, `released`: when the job is due. */
  runAt: Date | null;
  /** `enqueued`: the job's priority, 0 to 9 (9 first); null for the other kinds. */
  priority: number | null;
  /** `leased`: when the lease ends. */
  leaseDeadline: Date | null;
  /** `leased`: the worker id, if the worker gave one. */
  workerId: string | null;
  /** `progress`: the job's progress after the report. */
  progress: JobProgress | null;
  /** `completed`: the result decoded by its content type (JSON parsed, text as a string, else a Buffer); null without one. */
  result: unknown;
  /** `completed`: the result's bytes and content type; null without one. */
  resultBytes: Buffer | null;
  resultContentType: string | null;
  /** `completed`: whether `getJob` still finds the job (its queue retains completed jobs). */
  retained: boolean;
  /** `retry_scheduled`, `dead_lettered`: the failed attempt's error. */
  error: string | null;
  /** `dead_lettered`: why. */
  deadReason: DeadReason | null;
  /** `cancelled`: the state the job was removed from. */
  previousState: JobState | null;
  /** `batch_ended`: the batch as it ended; `batch_first_death`: the batch when its first member died. */
  batch: BatchInfo | null;
}

/** Where a subscription is in the server's event sequence: resume from here. */
export interface EventPosition {
  /** The server run's event stream. */
  streamId: string;
  /** The last sequence seen (or, before any event, the newest one when the subscription caught up). */
  sequence: number;
}

/** Which events to receive, and from where. Every filter narrows the others; empty means any. */
export interface EventsOptions {
  /** Only these queues. */
  queues?: readonly string[];
  /** Only these jobs (at most the server's `max_batch_jobs`). */
  jobIds?: readonly string[];
  /** Only these kinds. */
  kinds?: readonly JobEventKind[];
  /** Start with the oldest event the server still keeps instead of now. */
  fromOldest?: boolean;
  /** Resume after this position (from an earlier subscription's `position`). */
  resumeFrom?: EventPosition;
  /**
   * Subscribe again from the last event seen after a disconnect (default
   * true). Only once connected: a first connection that fails ends the
   * subscription with UNAVAILABLE.
   */
  reconnect?: boolean;
  /** Ends the subscription (the iteration finishes). */
  signal?: AbortSignal;
  /** Called each time the subscription has caught up with the server (replay done, live from here). */
  onCaughtUp?: (position: EventPosition) => void;
}

/** Events read from the stream and not yet taken by the application, before the stream stops reading. */
const maxBufferedEvents = 1000;

const stateOrNull = (state: ProtoJobState): JobState | null =>
  state === ProtoJobState.UNSPECIFIED ? null : jobStateName(state);
const dateOrNull = (ms: number): Date | null => (ms === 0 ? null : new Date(ms));

export function eventFromProto(event: ProtoJobEvent): JobEvent {
  const kind = kindNames.get(event.kind);
  if (kind === undefined)
    throw new SeppError(status.INTERNAL, `the server sent an unknown event kind ${event.kind}`);
  const result = event.result;
  return {
    sequence: event.sequence,
    kind,
    at: new Date(event.atMs),
    jobId: event.jobId,
    queue: event.queue,
    type: event.type,
    attempt: event.attempt,
    state: stateOrNull(event.state),
    runAt: dateOrNull(event.runAtMs),
    // The server sends a priority with `enqueued` only; 0 there is a priority, elsewhere unset.
    priority: kind === 'enqueued' ? event.priority : null,
    leaseDeadline: dateOrNull(event.leaseDeadlineMs),
    workerId: event.workerId === '' ? null : event.workerId,
    progress: progressFromProto(event.progress),
    result: result === undefined ? null : decodeResult(result.data, result.contentType),
    resultBytes: result?.data ?? null,
    resultContentType: result === undefined ? null : result.contentType || 'application/octet-stream',
    retained: event.retained,
    error: event.error === '' ? null : event.error,
    deadReason: deadReasonName(event.deadReason),
    previousState: stateOrNull(event.previousState),
    batch: event.batch === undefined ? null : batchOf(event.batch),
  };
}

/** A live subscription to job events: iterate it with `for await`. */
export class EventSubscription implements AsyncIterable<JobEvent> {
  private stream: ClientReadableStream<EventsResponse> | undefined;
  private readonly buffered: JobEvent[] = [];
  private failure: SeppError | undefined;
  private done = false;
  private wake: (() => void) | undefined;
  private reconnects = 0;
  private positionNow: EventPosition | null;
  private paused = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly onAbort = () => this.close();
  private markCaughtUp!: () => void;
  /**
   * Resolves when the subscription first catches up with the server (replay
   * done, live from here), or when it ends before that. Never rejects.
   */
  readonly caughtUp: Promise<void> = new Promise((resolve) => {
    this.markCaughtUp = resolve;
  });

  constructor(
    private readonly conn: Connection,
    private readonly options: EventsOptions,
  ) {
    this.positionNow = options.resumeFrom ?? null;
    if (options.signal?.aborted) {
      this.done = true;
      this.markCaughtUp();
      return;
    }
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    this.open();
  }

  /** The last event seen (or caught-up point): where a later subscription resumes. Null until the first. */
  get position(): EventPosition | null {
    return this.positionNow;
  }

  /** Ends the subscription; the iteration finishes. */
  close(): void {
    if (this.done) return;
    this.done = true;
    this.markCaughtUp();
    clearTimeout(this.reconnectTimer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    if (this.stream !== undefined) cancelCall(this.stream);
    this.stream = undefined;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<JobEvent> {
    try {
      for (;;) {
        const event = this.buffered.shift();
        if (event !== undefined) {
          if (this.paused && this.buffered.length < maxBufferedEvents / 2) {
            this.paused = false;
            this.stream?.resume();
          }
          yield event;
          continue;
        }
        if (this.failure !== undefined) throw this.failure;
        if (this.done) return;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
      }
    } finally {
      this.close();
    }
  }

  private open(): void {
    const { options } = this;
    const position = this.positionNow;
    const request: EventsRequest = {
      queues: [...(options.queues ?? [])],
      jobIds: [...(options.jobIds ?? [])],
      kinds: (options.kinds ?? []).map((kind) => kindToProto[kind]),
      // No kinds named: every kind, also those newer than this SDK (passed over in onMessage).
      allKinds: true,
      // With a stream id this is a resume, also from sequence 0 (a server that had published nothing yet).
      afterSequence: position?.sequence ?? 0,
      streamId: position?.streamId ?? '',
      fromOldest: position === null && options.fromOldest === true,
    };
    const stream = this.conn.rpc.events(request, this.conn.metadata());
    this.stream = stream;
    this.paused = false;
    stream.on('data', (message: EventsResponse) => this.onMessage(stream, message));
    stream.on('error', (error: ServiceError) => this.onBroken(stream, toSeppError(error)));
    stream.on('end', () =>
      this.onBroken(stream, new SeppError(status.UNAVAILABLE, 'the server ended the Events stream')),
    );
  }

  private onMessage(stream: ClientReadableStream<EventsResponse>, message: EventsResponse): void {
    if (stream !== this.stream) return;
    this.reconnects = 0;
    for (const event of message.events) {
      // A kind newer than this SDK (a newer server) is passed over, not a broken stream.
      if (kindNames.has(event.kind)) this.buffered.push(eventFromProto(event));
      this.positionNow = { streamId: message.streamId, sequence: event.sequence };
    }
    if (message.caughtUp) {
      // Every matching event up to here has been seen: a later resume starts from this point.
      const position = { streamId: message.streamId, sequence: message.sequence };
      this.positionNow = position;
      this.markCaughtUp();
      this.options.onCaughtUp?.(position);
    }
    if (this.buffered.length >= maxBufferedEvents && !this.paused) {
      this.paused = true;
      stream.pause();
    }
    this.wake?.();
  }

  private onBroken(stream: ClientReadableStream<EventsResponse>, error: SeppError): void {
    if (stream !== this.stream || this.done) return;
    this.stream = undefined;
    // Only a subscription that was up resumes: one that never got through says so (UNAVAILABLE).
    // Nor does one the server refuses until someone changes it (`sepp-retry: operator`: an
    // Events stream reads no storage, so that is events turned off on the server) or for good.
    const wasUp = this.positionNow !== null;
    if (
      wasUp &&
      error.retry !== 'operator' &&
      error.retry !== 'never' &&
      (error.grpcCode === status.UNAVAILABLE || connectionClosedByServer(error)) &&
      this.options.reconnect !== false &&
      !this.conn.closed
    ) {
      const delayMs = backoffDelayMs(this.reconnects++, 200, 10_000);
      this.reconnectTimer = setTimeout(() => {
        if (!this.done) this.open();
      }, delayMs);
      return;
    }
    this.failure = error;
    this.done = true;
    this.markCaughtUp();
    this.wake?.();
  }
}
