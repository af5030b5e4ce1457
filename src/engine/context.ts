/**
 * What the engine's parts share: the one place they reach the store, the
 * clock, the queue registry, the waiters and each other's after-commit effects.
 */
import { type ControlStatements, prepareControlStatements } from '../store/sqlite/control-statements.ts';
import { type BatchStats, GroupCommitter, type Transaction } from '../store/sqlite/group-commit.ts';
import type { Db } from '../store/sqlite/open.ts';
import { prepareStatements, type Statements } from '../store/sqlite/statements.ts';
import type { Clock } from './clock.ts';
import { EventLog } from './events/event-log.ts';
import type { LifecycleEvent } from './events/lifecycle-event.ts';
import { FlowControl } from './flow-control/flow-control.ts';
import { QueueRegistry } from './queue-registry.ts';
import type { EngineLimits, EngineOptions } from './settings.ts';
import type { JobEvent, JobState } from './types.ts';
import { WaiterRegistry } from './waiters.ts';

export interface EngineContext {
  readonly db: Db;
  readonly sql: Statements;
  /** Job control: cancel, update, expiry, keys (store/sqlite/control-statements.ts). */
  readonly control: ControlStatements;
  readonly clock: Clock;
  readonly limits: EngineLimits;
  readonly queues: QueueRegistry;
  readonly waiters: WaiterRegistry;
  readonly writer: GroupCommitter;
  /** Concurrency and rate limits, groups (src/engine/flow-control). */
  readonly flow: FlowControl;
  readonly random: () => number;
  /** Job lifecycle events for subscribers; build them only while `events.recording`. */
  readonly events: EventLog;
  /** Publishes a lifecycle event after the commit that made it (call only while `events.recording`). */
  record(tx: Transaction, event: LifecycleEvent): void;
  /** Creates the queue row if this is the queue's first use (inside a write). */
  ensureQueue(tx: Transaction, queue: string): void;
  /** Hands `jobs` jobs of `queue` that became ready to waiting long-polls, in the same commit. */
  jobsReady(tx: Transaction, queue: string, jobs: number): void;
  /** Makes sure maintenance runs by `atMs` (after the commit that created the deadline). */
  wakeAt(tx: Transaction, atMs: number): void;
  /** Reports what happened to jobs, after the commit that did it (metrics, rates). */
  emit(tx: Transaction, event: JobEvent): void;
  /**
   * Keeps queue_counts exact: `jobs` jobs of `queue` left state `from` (null: they
   * are new) for state `to` (null: they are gone). Every statement that adds,
   * removes or moves jobs is followed by this, in the same write operation.
   */
  count(queue: string, from: JobState | null, to: JobState | null, jobs: number): void;
  /** Forgets `key` of `queue` if it still names `jobId`: a cancelled or deleted job frees its key. */
  releaseKey(queue: string, key: string | null, jobId: string): void;
}

/** Submits a write operation to the group committer; resolves after its commit is durable. */
export type Write = <T>(op: (tx: Transaction) => T) => Promise<T>;

export interface ContextDeps {
  clock: Clock;
  random?: () => number;
  onBatch?: (stats: BatchStats) => void;
  onHookError?: (error: unknown) => void;
  onEvent?: (event: JobEvent) => void;
  maxBatchOperations?: number;
  /** The error a failed commit rejects its operations with. */
  commitFailed: (cause: unknown) => Error;
  /** The error operations submitted after close are rejected with. */
  closed: () => Error;
  /** Pulls the maintenance timer forward to `atMs` (after a commit that created that deadline). */
  wakeAt: (atMs: number) => void;
  /** Names this run's event stream (random, so a resume against a restarted server is recognised). */
  eventStreamId: string;
}

/** Prepares the statements, the registries and the one writer, and the hooks every engine part uses. */
export function createEngineContext(db: Db, options: EngineOptions, deps: ContextDeps): EngineContext {
  const sql = prepareStatements(db);
  const control = prepareControlStatements(db);
  const queues = new QueueRegistry(options);
  const waiters = new WaiterRegistry();
  const flow = new FlowControl(db, sql, deps.clock, waiters, (queue) => queues.settingsFor(queue));
  const { onBatch } = deps;
  const writer = new GroupCommitter(db, {
    commitFailed: deps.commitFailed,
    closed: deps.closed,
    // Reserves held back by a limit are woken by the leases this batch ended.
    onBatch:
      onBatch === undefined
        ? () => flow.flushLeaseEnds()
        : (stats) => {
            flow.flushLeaseEnds();
            onBatch(stats);
          },
    ...(deps.onHookError === undefined ? {} : { onHookError: deps.onHookError }),
    ...(deps.maxBatchOperations === undefined ? {} : { maxBatchOperations: deps.maxBatchOperations }),
  });
  const { clock, onEvent } = deps;
  const events = new EventLog(options.limits, clock, deps.eventStreamId);
  return {
    db,
    sql,
    control,
    clock,
    limits: options.limits,
    queues,
    waiters,
    writer,
    flow,
    random: deps.random ?? Math.random,
    events,
    record: (tx, event) => tx.afterCommit(() => events.append(event)),
    ensureQueue: (tx, queue) => {
      if (queues.exists(queue)) return;
      sql.insertQueue.run({
        name: queue,
        created_at_ms: clock.nowMs(),
        settings_json: JSON.stringify(queues.settingsFor(queue)),
      });
      tx.afterCommit(() => queues.markExisting(queue, false));
    },
    jobsReady: (tx, queue, jobs) => waiters.handOff(tx, queue, jobs),
    wakeAt: (tx, atMs) => tx.afterCommit(() => deps.wakeAt(atMs)),
    count: (queue, from, to, jobs) => {
      if (jobs === 0) return;
      if (from === 'leased') flow.leaseEnded(queue, jobs);
      if (from !== null) sql.adjustCount.run({ queue, state: from, delta: -jobs });
      if (to !== null) sql.adjustCount.run({ queue, state: to, delta: jobs });
    },
    releaseKey: (queue, key, jobId) => {
      if (key !== null) control.releaseKey.run({ queue, key, job_id: jobId });
    },
    emit: (tx, event) => {
      if (onEvent !== undefined && event.count > 0) tx.afterCommit(() => onEvent(event));
    },
  };
}
