/**
 * What the engine's parts share: the store and the one way to write to and
 * read from it, the clock, the queue registry, the event log, and the effects
 * a unit registers for after its commit. The rooms' own objects (flow
 * control, the waiters) are handed to the rooms that use them, not kept here.
 */
import { nothing, type Op } from '../store/op.ts';
import type { ReadUnit, Store, StoreTx, StoreView, WriteUnit } from '../store/store.ts';
import type { Clock } from './clock.ts';
import { type JobRejection, SeppError } from './errors.ts';
import type { EventLog, LifecycleEvent } from './events/index.ts';
import type { FinishedOutcome, FinishedOutcomes } from './finished-outcomes.ts';
import type { QueueRegistry } from './queue-registry.ts';
import type { EngineLimits } from './settings.ts';
import type { JobEvent, JobState } from './types.ts';

/** How a job ended, for what waits on it: completed, or dead (also expired), or cancelled. */
export type JobEnd = 'completed' | 'dead' | 'cancelled';

/** A job deleted in a unit, read before its delete: `state` is the one it was deleted in. */
export interface DeletedJob {
  seq: number;
  id: string;
  /** Its dependency_flags. */
  flags: number;
  state: JobState;
  /** The deleting statement dropped its edges and count of dependents itself (the retention sweep). */
  rowsForgotten?: boolean;
}

export interface EngineContext {
  readonly store: Store;
  /**
   * The one write path: runs `unit` in a transaction of the store, through the
   * lifecycle's gate (refused once closing); resolves after its commit is durable,
   * rejects with a SeppError.
   */
  write<T>(unit: WriteUnit<T>): Promise<T>;
  /** Runs `unit` against a consistent view of the store; refused once closing. */
  read<T>(unit: ReadUnit<T>): Promise<T>;
  readonly clock: Clock;
  readonly limits: EngineLimits;
  readonly queues: QueueRegistry;
  /**
   * Whether `queue` exists: the registry's answer, or — on a miss, with a store other
   * servers share — the store's as `view` sees it (one primary-key read), a queue found
   * being added to the registry (queues/queue-lookup.ts). A check of a call answers
   * NOT_FOUND only after this.
   */
  queueExists(view: StoreView, queue: string): Op<boolean>;
  /**
   * `queueExists` for a check made before the call's transaction: the answer at once when the
   * registry has one (a call that needs no store read adds no turn, so its write joins the
   * batch of this turn); on a miss, a read unit of its own.
   */
  queueExistsNow(queue: string): boolean | Promise<boolean>;
  readonly random: () => number;
  /** Job lifecycle events for subscribers; build them only while `events.recording`. */
  readonly events: EventLog;
  /** Publishes a lifecycle event after the commit that made it (call only while `events.recording`). */
  record(tx: StoreTx, event: LifecycleEvent): void;
  /** The outcomes of jobs deleted as they finished (limits.finishedOutcomeMs), for GetJob. */
  readonly outcomes: FinishedOutcomes;
  /**
   * Keeps the outcome of a job its queue does not keep in that state, after the
   * commit that ended it (call only while `outcomes.enabled`).
   */
  keepOutcome(tx: StoreTx, outcome: FinishedOutcome): void;
  /**
   * Creates the queue's row if this is the queue's first use (inside a write); refuses
   * (RESOURCE_EXHAUSTED) a new queue beyond limits.max_queues. An enqueue asks
   * `newQueueRefusal` first, to answer with a typed rejection instead.
   */
  ensureQueue(tx: StoreTx, queue: string): Op<void>;
  /**
   * Why `queue`, which does not exist, cannot be created now (limits.max_queues), counting
   * `pending` new queues of the same request as existing; null when it can.
   */
  newQueueRefusal(queue: string, pending?: number): JobRejection | null;
  /** Hands `jobs` jobs of `queue` that became ready to waiting long-polls, in the same commit. */
  jobsReady(tx: StoreTx, queue: string, jobs: number): void;
  /** Makes sure maintenance runs by `atMs` (after the commit that created the deadline). */
  wakeAt(tx: StoreTx, atMs: number): void;
  /** Reports what happened to jobs, after the commit that did it (metrics, rates). */
  emit(tx: StoreTx, event: JobEvent): void;
  /**
   * Counts in the job history (src/engine/history/), after the commit: attempts that
   * `completed` or `failed` (each one's wait, due → start, and run time, start → now), or
   * jobs that went `dead`. One after-commit step for all of `jobs` (AckBatches passes a batch).
   */
  attemptsEnded(tx: StoreTx, jobs: readonly EndedJob[], outcome: 'completed' | 'failed' | 'dead'): void;
  /**
   * Keeps the per-queue counts exact: `jobs` jobs of `queue` left state `from` (null:
   * they are new) for state `to` (null: they are gone). Every operation that adds,
   * removes or moves jobs is followed by this, in the same unit.
   */
  count(tx: StoreTx, queue: string, from: JobState | null, to: JobState | null, jobs: number): Op<void>;
  /** Forgets `key` of `queue` if it still names `jobId`: a cancelled or deleted job frees its key. */
  releaseKey(tx: StoreTx, queue: string, key: string | null, jobId: string): Op<void>;
  /**
   * A job that takes part in a workflow (its `dependency_flags` are not 0) ended in `tx`:
   * what waits on it is released, cancelled or left waiting (dependencies/release.ts), and
   * its batch counts it (batches/batches.ts). Call it only for flags ≠ 0, once per end.
   */
  jobEnded(tx: StoreTx, job: { id: string; flags: number }, end: JobEnd): Op<void>;
  /**
   * A job that takes part in a workflow (its `dependency_flags` are not 0) was deleted in `tx`,
   * after its end (if it had not ended, `jobEnded` first): its edges and its count of dependents
   * go with it, and the jobs still waiting on it are cancelled, whatever their policy
   * (dependencies/release.ts: no requeue could release them now). A completed job has no job
   * waiting on it: only the edges of jobs cancelled before it completed are resolved, completed.
   * `state` is the deleted row's. Call it once per deleted job.
   */
  jobDeleted(tx: StoreTx, job: DeletedJob): Op<void>;
  /**
   * Tells the store how durable the unit's commit must be for a change to `queue`
   * (its `durability` setting). `count` does it for every change of state; changes
   * that move no job (extend, progress) call it themselves.
   */
  wroteTo(tx: StoreTx, queue: string): void;
}

/** What the job history needs of a job whose attempt ended. */
export interface EndedJob {
  queue: string;
  type: string;
  run_at_ms: number;
  leased_at_ms: number | null;
  /** Who held the attempt (the worker's recent counts); null: none or not known. */
  worker_id?: string | null;
}

/** The job history's counter (JobHistory.record). */
export type HistoryRecorder = (
  queue: string,
  type: string,
  outcome: 'completed' | 'failed' | 'dead',
  waitMs: number | null,
  runMs: number | null,
  workerId: string | null,
) => void;

export interface ContextParts {
  store: Store;
  write: EngineContext['write'];
  read: EngineContext['read'];
  clock: Clock;
  limits: EngineLimits;
  queues: QueueRegistry;
  /** Finds a queue the registry misses (queues/queue-lookup.ts). */
  queueLookup: Pick<EngineContext, 'queueExists' | 'queueExistsNow'>;
  events: EventLog;
  outcomes: FinishedOutcomes;
  random?: () => number;
  onEvent?: (event: JobEvent) => void;
  /** Counts ended attempts and dead jobs in the job history; without it nothing is counted. */
  history?: HistoryRecorder;
  /** Pulls the maintenance timer forward to `atMs` (after a commit that created that deadline). */
  wakeAt: (atMs: number) => void;
  /** Hands jobs that became ready in a unit to waiting long-polls (the waiters' hand-off). */
  jobsReady: EngineContext['jobsReady'];
  /** Jobs of a queue left `leased` in a unit (flow control wakes throttled reserves after the commit). */
  leaseEnded: (queue: string, jobs: number) => void;
  /** Jobs were deleted in a unit (after a full disk, their room may let enqueues in again). */
  jobsRemoved?: () => void;
  /** A job in a workflow ended (EngineContext.jobEnded); without it, nothing happens. */
  jobEnded?: EngineContext['jobEnded'];
  /** A job in a workflow was deleted (EngineContext.jobDeleted). */
  jobDeleted: EngineContext['jobDeleted'];
}

/** The hooks every engine part uses, over the parts the engine's opening built. */
export function createEngineContext(parts: ContextParts): EngineContext {
  const { queues, clock, events, outcomes, onEvent, leaseEnded, limits } = parts;
  const jobsRemoved = parts.jobsRemoved ?? (() => {});
  const newQueueRefusal = (queue: string, pending = 0): JobRejection | null =>
    queues.count + pending < limits.maxQueues || queues.isDeclared(queue) || queues.isCreating(queue)
      ? null
      : {
          reason: 'unknown_queue',
          message:
            `queue ${queue} does not exist and the server already has ${queues.count + pending} queues, its limit ` +
            `(limits.max_queues = ${limits.maxQueues}); enqueue to an existing queue, delete unused ` +
            'queues (DeleteQueue), or raise limits.max_queues',
        };
  const wroteTo = (tx: StoreTx, queue: string) => {
    const durability = queues.settingsFor(queue).durability;
    tx.durability(durability === 'server' ? 'default' : durability);
  };
  return {
    newQueueRefusal,
    store: parts.store,
    write: parts.write,
    read: parts.read,
    clock,
    limits: parts.limits,
    queues,
    queueExists: (view, queue) => parts.queueLookup.queueExists(view, queue),
    queueExistsNow: (queue) => parts.queueLookup.queueExistsNow(queue),
    random: parts.random ?? Math.random,
    events,
    record: (tx, event) => tx.afterCommit(() => events.append(event)),
    outcomes,
    keepOutcome: (tx, outcome) => tx.afterCommit(() => outcomes.add(outcome, outcome.endedAtMs)),
    *ensureQueue(tx, queue) {
      if (queues.exists(queue)) return;
      const refusal = newQueueRefusal(queue);
      if (refusal !== null) throw new SeppError('resource_exhausted', refusal.message);
      queues.markCreating(queue);
      yield* tx.queues.create({
        name: queue,
        createdAtMs: clock.nowMs(),
        settingsJson: JSON.stringify(queues.settingsFor(queue)),
      });
      tx.afterCommit(() => queues.markExisting(queue, false));
    },
    jobsReady: parts.jobsReady,
    jobEnded: parts.jobEnded ?? (() => nothing),
    jobDeleted: parts.jobDeleted,
    wakeAt: (tx, atMs) => tx.afterCommit(() => parts.wakeAt(atMs)),
    count: (tx, queue, from, to, jobs) => {
      if (jobs === 0) return nothing;
      wroteTo(tx, queue);
      if (from === 'leased') leaseEnded(queue, jobs);
      if (to === null) jobsRemoved();
      return tx.counts.adjust({ queue, from, to, jobs });
    },
    wroteTo,
    *releaseKey(tx, queue, key, jobId) {
      if (key !== null) yield* tx.keys.release({ queue, key, jobId });
    },
    emit: (tx, event) => {
      if (onEvent !== undefined && event.count > 0) tx.afterCommit(() => onEvent(event));
    },
    attemptsEnded: (tx, jobs, outcome) => {
      const { history } = parts;
      if (history === undefined || jobs.length === 0) return;
      const endedAtMs = clock.nowMs();
      tx.afterCommit(() => {
        for (const job of jobs) {
          const { leased_at_ms: startedMs } = job;
          const attempt = outcome !== 'dead' && startedMs !== null;
          const waitMs = attempt ? startedMs - job.run_at_ms : null;
          const runMs = attempt ? endedAtMs - startedMs : null;
          history(job.queue, job.type, outcome, waitMs, runMs, job.worker_id ?? null);
        }
      });
    },
  };
}
