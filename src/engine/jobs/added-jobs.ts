/**
 * New jobs of one enqueue operation: stored, counted per queue and state, and
 * handed to waiters once at its end. What goes with them (their idempotency
 * keys, their dependency edges, the mark of a queue's first group) is stored
 * with them, so a job costs no store call of its own: the rows go in statements
 * of many (jobs.insert).
 */

import { type DependentsAdded, jobsWaitOnIt } from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { NewJobRow } from '../../store/rows.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { type DependencyEdges, type DependencyQueues, DependentTally } from '../dependencies/index.ts';
import type { FlowControl } from '../flow-control/index.ts';
import type { ValidJob } from './enqueue-validation.ts';

export class AddedJobs {
  /** Added but not stored yet. */
  private rows: NewJobRow[] = [];
  /** How many added rows are stored already (the first of `rows` was added at this position). */
  private storedRows = 0;
  private keys: { queue: string; key: string; jobId: string; expiresAtMs: number }[] | undefined;
  private groupedQueues: Set<string> | undefined;
  /** The dependency edges of added jobs that named depends_on (stored after their rows). */
  private dependencies: { childId: string; queue: string; edges: DependencyEdges }[] | undefined;
  /** Their edges per job they name, not yet in the store's counts (limits.max_dependents_per_job). */
  private dependents: DependentTally | undefined;
  /** Debounce keys of added jobs (set on their rows once stored: jobs without one pay nothing). */
  private debounceKeys: { id: string; key: string; untilMs: number | null }[] | undefined;
  private readonly jobs = new Map<string, { ready: number; scheduled: number; waiting: number }>();

  constructor(
    private readonly flow: FlowControl,
    private readonly dependencyQueues: DependencyQueues,
  ) {}

  add(row: NewJobRow): void {
    this.rows.push(row);
    let perState = this.jobs.get(row.queue);
    if (perState === undefined) {
      perState = { ready: 0, scheduled: 0, waiting: 0 };
      this.jobs.set(row.queue, perState);
    }
    perState[row.state]++;
  }

  /** How many jobs were added so far, stored or not: the position of the next one `add` takes. */
  get count(): number {
    return this.storedRows + this.rows.length;
  }

  /**
   * Marks the job added at `position` as one that others wait on (jobsWaitOnIt) in its row,
   * if that is not stored yet; returns whether it was (its INSERT then writes the flag, and
   * the edges naming it need not write its row again). A row stored already returns false.
   */
  markDependedOn(position: number): boolean {
    const row = this.rows[position - this.storedRows];
    if (row === undefined) return false;
    row.dependency_flags = (row.dependency_flags ?? 0) | jobsWaitOnIt;
    return true;
  }

  /** Remembers a new job's key for the queue's dedup window, with the job. */
  remember(job: ValidJob, jobId: string, nowMs: number): void {
    this.keys ??= [];
    this.keys.push({
      queue: job.queue,
      key: job.idempotencyKey!,
      jobId,
      expiresAtMs: nowMs + job.settings.dedupWindowMs,
    });
  }

  /** A new job named depends_on: its edges are stored with it. */
  depend(childId: string, queue: string, edges: DependencyEdges): void {
    this.dependencies ??= [];
    this.dependencies.push({ childId, queue, edges });
    this.dependents ??= new DependentTally();
    this.dependents.add(edges.edges, 1, true);
  }

  /** Edges to `parentId` of the jobs added so far that the store does not count yet. */
  dependentsOf(parentId: string): DependentsAdded {
    return this.dependents?.of(parentId) ?? { added: 0, others: 0 };
  }

  /** A new job has a debounce key: later enqueues with it may replace its content until `untilMs`. */
  debounce(id: string, key: string, untilMs: number | null): void {
    this.debounceKeys ??= [];
    this.debounceKeys.push({ id, key, untilMs });
  }

  /** A job with a group was added to `queue`: its leases take turns from now on. */
  grouped(queue: string): void {
    if (this.flow.hasGroups(queue)) return;
    this.groupedQueues ??= new Set();
    this.groupedQueues.add(queue);
  }

  /** Jobs added to `queue` so far (not yet in its counts). */
  inQueue(queue: string): number {
    const perState = this.jobs.get(queue);
    return perState === undefined ? 0 : perState.ready + perState.scheduled + perState.waiting;
  }

  /** Stores the jobs added so far (in order), with their keys and group marks, and forgets them. */
  *insertPending(tx: StoreTx): Op<void> {
    if (this.rows.length > 0) {
      const rows = this.rows;
      this.rows = [];
      this.storedRows += rows.length;
      yield* tx.jobs.insert(rows);
    }
    if (this.debounceKeys !== undefined) {
      const marks = this.debounceKeys;
      this.debounceKeys = undefined;
      yield* tx.jobs.markDebounced(marks);
    }
    if (this.keys !== undefined) {
      const keys = this.keys;
      this.keys = undefined;
      for (const key of keys) yield* tx.keys.remember(key);
    }
    if (this.dependencies !== undefined) {
      const dependencies = this.dependencies;
      this.dependencies = undefined;
      for (const { childId, queue, edges } of dependencies) {
        // dependencyEdges refused the job if the store had no dependency capability.
        yield* tx.dependencies!.add({ childId, policy: edges.policy, edges: edges.edges });
        yield* this.dependencyQueues.jobAdded(tx, queue);
      }
      // Each job's count once, however many of the unit's jobs name it (a fan-out of 10,000).
      // A flow's edges to its own new jobs are not counted here (DependentTally.add): often none are.
      if (this.dependents !== undefined && !this.dependents.empty)
        yield* tx.dependencies!.countDependents(this.dependents.take());
    }
    if (this.groupedQueues !== undefined) {
      const queues = this.groupedQueues;
      this.groupedQueues = undefined;
      for (const queue of queues) yield* this.flow.groupedJobAdded(tx, queue);
    }
  }

  *store(tx: StoreTx, ctx: EngineContext): Op<void> {
    yield* this.insertPending(tx);
    for (const [queue, perState] of this.jobs) {
      yield* ctx.count(tx, queue, null, 'ready', perState.ready);
      yield* ctx.count(tx, queue, null, 'scheduled', perState.scheduled);
      yield* ctx.count(tx, queue, null, 'waiting', perState.waiting);
      ctx.jobsReady(tx, queue, perState.ready);
    }
  }
}
