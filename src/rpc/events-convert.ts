/** Conversions between the Events protocol (events.proto) and the engine's lifecycle events. */

import {
  type EventsRequest,
  type JobEvent,
  JobEventKind,
} from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { DeadReason, JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { SeppError } from '../engine/errors.ts';
import type { EventFilter, EventStart, LifecycleEvent, LifecycleEventKind } from '../engine/events/index.ts';
import { batchToProto } from './batch-handlers.ts';
import { deadReasonToProto, jobStateToProto, progressToProto } from './convert.ts';

const kindToProto: Record<LifecycleEventKind, JobEventKind> = {
  enqueued: JobEventKind.ENQUEUED,
  leased: JobEventKind.LEASED,
  progress: JobEventKind.PROGRESS,
  completed: JobEventKind.COMPLETED,
  retry_scheduled: JobEventKind.RETRY_SCHEDULED,
  dead_lettered: JobEventKind.DEAD_LETTERED,
  cancelled: JobEventKind.CANCELLED,
  released: JobEventKind.RELEASED,
  batch_ended: JobEventKind.BATCH_ENDED,
  batch_first_death: JobEventKind.BATCH_FIRST_DEATH,
  lease_undone: JobEventKind.LEASE_UNDONE,
};
/**
 * The kinds of the first protocol version: what an empty `kinds` means without
 * `all_kinds` (events.proto). SDKs written before `released`, the batch kinds and
 * `lease_undone` stop on a kind they do not know, so later kinds go only to those who ask.
 */
const firstVersionKinds: readonly LifecycleEventKind[] = [
  'enqueued',
  'leased',
  'progress',
  'completed',
  'retry_scheduled',
  'dead_lettered',
  'cancelled',
];
const kindFromProto = new Map<number, LifecycleEventKind>(
  Object.entries(kindToProto).map(([name, value]) => [value, name as LifecycleEventKind]),
);

/** Longer than any stream id a server sends (a UUID, 36 characters). */
const streamIdLengthMax = 64;

/** The filter and starting point of an EventsRequest; malformed requests are invalid_argument. */
export function subscriptionFromProto(request: EventsRequest): { filter: EventFilter; start: EventStart } {
  const kinds = request.kinds.map((kind, i) => {
    const name = kindFromProto.get(kind);
    if (name === undefined) {
      throw new SeppError('invalid_argument', `kinds[${i}]: ${kind} is not a job event kind`);
    }
    return name;
  });
  let start: EventStart = { kind: 'now' };
  if (request.afterSequence > 0 && request.streamId === '') {
    throw new SeppError(
      'invalid_argument',
      'stream_id: required with after_sequence; send the stream_id of the stream the sequence came from',
    );
  }
  if (request.streamId !== '') {
    // A stream id is a UUID: a longer one is none of this server's, and is not quoted back whole.
    if (request.streamId.length > streamIdLengthMax) {
      throw new SeppError(
        'out_of_range',
        `stream_id is ${request.streamId.length} characters long, so it is not this server's event stream ` +
          '(a UUID): subscribe again without after_sequence',
      );
    }
    if (request.fromOldest) {
      throw new SeppError('invalid_argument', 'give a resume point (stream_id) or from_oldest, not both');
    }
    start = { kind: 'after', sequence: request.afterSequence, streamId: request.streamId };
  } else if (request.fromOldest) {
    start = { kind: 'oldest' };
  }
  const everyKind = kinds.length === 0 && !request.allKinds;
  return {
    filter: { queues: request.queues, jobIds: request.jobIds, kinds: everyKind ? firstVersionKinds : kinds },
    start,
  };
}

export function eventToProto(event: LifecycleEvent): JobEvent {
  const message: JobEvent = {
    sequence: event.sequence,
    kind: kindToProto[event.kind],
    atMs: event.atMs,
    jobId: event.jobId,
    queue: event.queue,
    type: event.type,
    attempt: event.attempt,
    state: JobState.UNSPECIFIED,
    runAtMs: 0,
    priority: 0,
    leaseDeadlineMs: 0,
    workerId: '',
    progress: undefined,
    result: undefined,
    retained: false,
    error: '',
    deadReason: DeadReason.UNSPECIFIED,
    previousState: JobState.UNSPECIFIED,
  };
  switch (event.kind) {
    case 'enqueued':
      message.state = jobStateToProto(event.state);
      message.runAtMs = event.runAtMs;
      message.priority = event.priority;
      break;
    case 'leased':
      message.leaseDeadlineMs = event.leaseDeadlineMs;
      message.workerId = event.workerId ?? '';
      break;
    case 'progress':
      message.progress = progressToProto(event.progress);
      break;
    case 'completed':
      message.retained = event.retained;
      if (event.result !== null) {
        const { buffer, byteOffset, byteLength } = event.result;
        message.result = {
          data: Buffer.from(buffer, byteOffset, byteLength),
          contentType: event.resultContentType ?? '',
        };
      }
      break;
    case 'retry_scheduled':
      message.state = jobStateToProto(event.state);
      message.runAtMs = event.runAtMs;
      message.error = event.error;
      break;
    case 'dead_lettered':
      message.deadReason = deadReasonToProto[event.reason];
      message.error = event.error ?? '';
      break;
    case 'cancelled':
      message.previousState = jobStateToProto(event.previousState);
      break;
    case 'released':
      message.state = jobStateToProto(event.state);
      message.runAtMs = event.runAtMs;
      break;
    case 'lease_undone':
      message.state = jobStateToProto(event.state);
      break;
    case 'batch_ended':
    case 'batch_first_death':
      message.batch = batchToProto(event.batch);
      break;
  }
  return message;
}
