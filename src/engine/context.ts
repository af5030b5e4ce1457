/**
 * What the engine's parts share: the one place they reach the store, the
 * clock, the queue registry, the waiters and each other's after-commit effects.
 */
import type { GroupCommitter, Transaction } from '../store/group-commit.ts';
import type { Db } from '../store/open.ts';
import type { Statements } from '../store/statements.ts';
import type { Clock } from './clock.ts';
import type { QueueRegistry } from './queue-registry.ts';
import type { EngineLimits } from './settings.ts';
import type { JobEvent, JobState } from './types.ts';
import type { WaiterRegistry } from './waiters.ts';

export interface EngineContext {
  readonly db: Db;
  readonly sql: Statements;
  readonly clock: Clock;
  readonly limits: EngineLimits;
  readonly queues: QueueRegistry;
  readonly waiters: WaiterRegistry;
  readonly writer: GroupCommitter;
  readonly random: () => number;
  /** Creates the queue row if this is the queue's first use (inside a write). */
  ensureQueue(tx: Transaction, queue: string): void;
  /** Wakes long-polls on `queue` after the commit that made `jobs` jobs ready. */
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
}
