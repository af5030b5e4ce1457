/**
 * The bound on a failure passed on through dependencies (SECURITY.md, "Workflows under
 * attack"). A job that waits on another under the `cancel` policy is cancelled when that one
 * fails, and passes the failure on to what waits on it in turn (release.ts): a chain of jobs
 * each waiting on the one before, made over many requests, is as long as its maker made it.
 * So a unit (one transaction) visits at most `failureVisitsPerUnit` jobs on the way (each
 * job whose failure it passes on, and each job waiting on one), counted over every failure
 * the unit passes on; a job is never left half done, so a unit may go past the bound by the
 * waiting jobs of its last one (at most limits.max_dependents_per_job). The jobs whose
 * failure it did not pass on yet are kept in the store in the same transaction
 * (`keepFailures`, schema/0027_dependency_failures.sql), and maintenance passes take them on
 * (`runDue`), a bounded unit each, one right after the other: nothing is left waiting, and a
 * crash between two passes loses nothing (the next start's first pass finds them).
 *
 * A kept job is passed on only while it is still dead or cancelled (or deleted): a job
 * requeued meanwhile runs again, and its own end decides for what waits on it. A kept job
 * no longer stored passes on as deleted (release.ts): what waits on it under the `wait`
 * policy is cancelled too, since no requeue can release it now.
 */
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';

/** Jobs a unit visits passing failures on before it leaves the rest to maintenance. */
export const failureVisitsPerUnit = 1000;
/** Kept jobs a maintenance pass takes at most (each is one more visit). */
const takenPerPass = 100;
/**
 * On a store several servers share, how often a server looks for jobs kept by another one
 * that stopped before it passed them on (one index probe of an empty table, as a rule).
 */
const lookAgainMs = 60_000;
/** The states in which a kept job's failure is still to pass on (null: deleted since). */
const failedStates = new Set<string | null>(['dead', 'cancelled', null]);

export class DependencyFailures {
  /** Visits per unit so far: a unit's transaction object lives as long as the unit. */
  private readonly visits = new WeakMap<StoreTx, number>();
  /** When maintenance should next take kept jobs: at once at start (a crash may have left some). */
  private nextDueMs = 0;
  /** Commits that kept jobs: a pass that saw none kept does not put off those kept meanwhile. */
  private keptCommits = 0;

  constructor(
    private readonly ctx: Pick<EngineContext, 'clock' | 'wakeAt'>,
    /** Whether other servers share the store: then one of them may have left jobs kept. */
    private readonly shared: boolean,
  ) {}

  /** Counts `jobs` visits in `tx`. */
  visited(tx: StoreTx, jobs: number): void {
    this.visits.set(tx, (this.visits.get(tx) ?? 0) + jobs);
  }

  /** Whether `tx` visited as many jobs as a unit may: the failures still to pass on are kept. */
  spent(tx: StoreTx): boolean {
    return (this.visits.get(tx) ?? 0) >= failureVisitsPerUnit;
  }

  /**
   * Keeps `jobIds`, whose failure `tx` leaves to maintenance, and has a pass come after its
   * commit. Their edges to jobs no longer waiting (cancelled before them: a flow's cancel, newest
   * first) say they failed at once, as the pass would make them say (release.ts), in a statement
   * each that moves no job; a job left with no pending edge, which no waiting job waits on, is
   * not kept (keepFailures): a big cancelFlow keeps none of its jobs.
   */
  *keep(tx: StoreTx, jobIds: readonly string[]): Op<void> {
    const deps = tx.dependencies;
    if (jobIds.length === 0 || deps === undefined) return;
    for (const id of jobIds) yield* deps.resolveToEnded(id, 'failed');
    yield* deps.keepFailures(jobIds);
    const nowMs = this.ctx.clock.nowMs();
    tx.afterCommit(() => {
      this.keptCommits++;
      this.nextDueMs = Math.min(this.nextDueMs, nowMs);
    });
    this.ctx.wakeAt(tx, nowMs);
  }

  /** When a maintenance pass should take kept jobs (TimedWork). */
  dueMs(): number {
    return this.nextDueMs;
  }

  /**
   * Takes kept jobs and passes their failures on with `passOn` (release.ts, within this
   * unit's bound: what it cannot reach is kept again). More is due at once while jobs are
   * kept; else, on a shared store, in `lookAgainMs`.
   */
  *runDue(
    tx: StoreTx,
    nowMs: number,
    passOn: (tx: StoreTx, failed: { id: string; outcome: 'failed' | 'deleted' }[]) => Op<void>,
  ): Op<{ more: boolean; nextDueMs: number }> {
    const deps = tx.dependencies;
    const keptBefore = this.keptCommits;
    if (deps === undefined) return this.done(tx, nowMs, Number.POSITIVE_INFINITY, keptBefore);
    const taken = yield* deps.takeFailures(takenPerPass);
    this.visited(tx, taken.length);
    const failed = taken
      .filter((job) => failedStates.has(job.state))
      .map((job) => ({
        id: job.id,
        outcome: job.state === null ? ('deleted' as const) : ('failed' as const),
      }));
    // The oldest first: the work list is taken from its end.
    if (failed.length > 0) yield* passOn(tx, failed.reverse());
    if (taken.length === takenPerPass || this.spent(tx)) return this.done(tx, nowMs, nowMs, keptBefore);
    const next = this.shared ? nowMs + lookAgainMs : Number.POSITIVE_INFINITY;
    return this.done(tx, nowMs, next, keptBefore);
  }

  /** The pass's answer; its due time is set once it commits (a failed pass leaves it due). */
  private done(
    tx: StoreTx,
    nowMs: number,
    nextDueMs: number,
    keptBefore: number,
  ): { more: boolean; nextDueMs: number } {
    tx.afterCommit(() => {
      // Jobs kept by a unit that committed since the pass began (its own included) are still due.
      this.nextDueMs = this.keptCommits === keptBefore ? nextDueMs : Math.min(nextDueMs, this.nextDueMs);
    });
    return { more: nextDueMs <= nowMs, nextDueMs };
  }
}
