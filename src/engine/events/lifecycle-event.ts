/**
 * Job lifecycle events: what happened to one job, in the order the commits
 * that did it were made. Built by the engine's operations only while someone
 * subscribes (or a backlog is kept for resuming), published after the commit
 * is durable, and kept in the in-memory backlog (event-log.ts).
 *
 * These are not the aggregated `JobEvent`s of types.ts, which count jobs per
 * queue for metrics and exist whether or not anyone subscribes.
 */
import type { DeadReason, JobProgress, JobState } from '../types.ts';
import type { BatchInfo } from '../workflow-types.ts';

export type LifecycleEventKind =
  | 'enqueued'
  | 'leased'
  | 'progress'
  | 'completed'
  | 'retry_scheduled'
  | 'dead_lettered'
  | 'cancelled'
  | 'released'
  | 'batch_ended'
  | 'batch_first_death'
  | 'lease_undone';

export const lifecycleEventKinds: readonly LifecycleEventKind[] = [
  'enqueued',
  'leased',
  'progress',
  'completed',
  'retry_scheduled',
  'dead_lettered',
  'cancelled',
  'released',
  'batch_ended',
  'batch_first_death',
  'lease_undone',
];

interface EventBase {
  /**
   * Position in this server run's event sequence: 1, 2, 3, … in commit order.
   * Assigned when the event is published (0 until then).
   */
  sequence: number;
  /** When the operation ran (the engine's clock). */
  atMs: number;
  jobId: string;
  queue: string;
  type: string;
  /** The job's attempt when the event happened (0 before its first lease). */
  attempt: number;
  /**
   * Read from a store other servers share, not committed here: the end of a job another
   * server settled, for the subscriptions that name it (remote-ends.ts); the others never
   * see it (each server's events are its own commits).
   */
  fromStore?: true;
}

export type LifecycleEvent =
  /** A new job was stored (not a deduplicated one). */
  | (EventBase & {
      kind: 'enqueued';
      state: 'ready' | 'scheduled' | 'waiting';
      runAtMs: number;
      priority: number;
    })
  | (EventBase & { kind: 'leased'; leaseDeadlineMs: number; workerId: string | null })
  | (EventBase & { kind: 'progress'; progress: JobProgress })
  /** Acked; `retained` tells whether the job (and its result) is kept as `completed`. */
  | (EventBase & {
      kind: 'completed';
      result: Uint8Array | null;
      resultContentType: string | null;
      retained: boolean;
    })
  /** A failed attempt (nack or lease expiry) with attempts left: the job runs again at `runAtMs`. */
  | (EventBase & { kind: 'retry_scheduled'; state: 'ready' | 'scheduled'; runAtMs: number; error: string })
  | (EventBase & { kind: 'dead_lettered'; reason: DeadReason; error: string | null })
  /** Ended before it finished: cancelled (kept), or purged (deleted); `previousState` is where it was. */
  | (EventBase & { kind: 'cancelled'; previousState: JobState })
  /** A waiting job's dependencies all resolved (in the commit that ended the last): now ready or scheduled. */
  | (EventBase & { kind: 'released'; state: 'ready' | 'scheduled'; runAtMs: number })
  /**
   * A batch ended, in the commit that enqueued its completion jobs: `jobId` is the batch's id,
   * `queue` and `type` its on_complete job's (empty without one), `batch` its counts then.
   */
  | (EventBase & { kind: 'batch_ended'; batch: BatchInfo })
  /**
   * A batch's first member died, in the commit that counted it (and enqueued its on_death
   * job): `jobId` is the batch's id, `queue` and `type` its on_death job's (empty without
   * one), `batch` its counts then, `firstDeadId` the member.
   */
  | (EventBase & { kind: 'batch_first_death'; batch: BatchInfo })
  /**
   * A lease whose answer never reached a worker was undone (leases/undone-lease.ts): the job
   * is ready again on the attempt it had before; `attempt` is the undone lease's.
   */
  | (EventBase & { kind: 'lease_undone'; state: 'ready' });

/** The fields every lifecycle event of `job` shares (its sequence is assigned when published). */
export function eventAbout(job: { id: string; queue: string; type: string; attempt: number }, atMs: number) {
  return { sequence: 0, atMs, jobId: job.id, queue: job.queue, type: job.type, attempt: job.attempt };
}

/** The events a subscriber wants; an empty list means any. An event must pass all three. */
export interface EventFilter {
  queues: readonly string[];
  jobIds: readonly string[];
  kinds: readonly LifecycleEventKind[];
  /** Besides `queues`: only the queues this allows (an API key scoped to queues); absent, all. */
  queueAllowed?: (queue: string) => boolean;
}

/** Where a subscription starts reading. */
export type EventStart =
  /** Only events published after the subscription (the default). */
  | { kind: 'now' }
  /** Everything still in the backlog, then live. */
  | { kind: 'oldest' }
  /** Resume: the events after `sequence` of the run `streamId` (both from an earlier subscription). */
  | { kind: 'after'; sequence: number; streamId: string };

/** Fixed cost of an event in the backlog's byte count: the object, its strings' headers, the slot. */
const eventOverheadBytes = 160;

/** Estimated memory of one event, counted against limits.event_backlog_bytes. */
export function eventBytes(event: LifecycleEvent): number {
  let bytes = eventOverheadBytes + event.jobId.length + event.queue.length + event.type.length;
  switch (event.kind) {
    case 'leased':
      bytes += event.workerId?.length ?? 0;
      break;
    case 'progress':
      bytes += event.progress.json?.length ?? 0;
      break;
    case 'completed':
      bytes += (event.result?.byteLength ?? 0) + (event.resultContentType?.length ?? 0);
      break;
    case 'retry_scheduled':
      bytes += event.error.length;
      break;
    case 'dead_lettered':
      bytes += event.error?.length ?? 0;
      break;
    default:
      break;
  }
  return bytes;
}
