/**
 * The end of a job others wait on: in the unit that ends it (the ack, the last failed
 * attempt, the cancel, the expiry), the jobs waiting on it are released, cancelled or
 * left waiting, by each one's policy (docs/decisions/0101-workflows-design.md); in the unit
 * that deletes it (a dead letter deleted, a purge, a bulk delete, an expiry that deletes),
 * the jobs still waiting on it are cancelled, whatever their policy, since nothing could
 * release them any more (docs/workflows.md, "Dependencies"). Called only for a job other
 * jobs wait on (`dependency_flags`), so a job nobody depends on never reaches the
 * dependency tables.
 */
import {
  batchMember,
  type DependencyPolicy,
  dependedOn,
  inBatch,
  type WaitingChildRow,
} from '../../store/dependencies.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { DeletedJob, EngineContext } from '../context.ts';
import { eventAbout } from '../events/index.ts';
import { cancelledOutcome } from '../finished-outcomes.ts';
import type { DependencyFailures } from './failures.ts';

/**
 * How a dependency ended: completed, failed (dead, cancelled, expired), or deleted. A deleted
 * job is a failure that no requeue can undo, so a job that waits on it under the `wait`
 * policy is cancelled as under `cancel`: nothing could release it any more.
 */
export type DependencyOutcome = 'completed' | 'failed' | 'deleted';

/**
 * Who cancelled a job whose dependency failed under the `cancel` policy: names the failed job;
 * `dependency:<id> deleted` when it was deleted (under any policy but `run`).
 */
function cancelledByDependency(jobId: string, outcome: DependencyOutcome): string {
  return outcome === 'deleted' ? `dependency:${jobId} deleted` : `dependency:${jobId}`;
}

/**
 * Resolves the pending edges from `jobId`, which just ended (or was deleted) with `outcome`, inside `tx`.
 * A waiting job whose last edge resolved becomes ready (or scheduled); one cancelled by
 * the `cancel` policy passes its failure on to what waits on it, through a work list.
 * An edge is resolved at most once (the statement checks it is pending), so nothing is
 * released twice. With `failures`, a failure passes on within the unit's bound, and what
 * it does not reach is left to maintenance (failures.ts).
 */
export function* releaseDependents(
  ctx: EngineContext,
  tx: StoreTx,
  jobId: string,
  outcome: DependencyOutcome,
  failures?: DependencyFailures,
): Op<void> {
  yield* releaseEnded(ctx, tx, [{ id: jobId, outcome }], failures);
}

/**
 * The failures of `failed` passed on, the last first (failures.ts: jobs a unit left to
 * maintenance), within `failures`' bound.
 */
export function* passOnFailures(
  ctx: EngineContext,
  tx: StoreTx,
  failed: readonly EndedDependency[],
  failures: DependencyFailures,
): Op<void> {
  yield* releaseEnded(ctx, tx, [...failed], failures);
}

/** A job whose end is to pass on to what waits on it, and how it ended. */
export interface EndedDependency {
  id: string;
  outcome: DependencyOutcome;
}

/**
 * `releaseDependents` of a work list of ended jobs, taken from its end. With `failures`, a
 * failed job is taken only while the unit has visits left (failures.ts); once it has none,
 * the failed jobs still on the list are kept for maintenance.
 */
function* releaseEnded(
  ctx: EngineContext,
  tx: StoreTx,
  ended: EndedDependency[],
  failures: DependencyFailures | undefined,
): Op<void> {
  const deps = tx.dependencies;
  if (deps === undefined) return;
  for (let next = ended.pop(); next !== undefined; next = ended.pop()) {
    const failed = next.outcome !== 'completed';
    if (failures !== undefined && failed && failures.spent(tx)) {
      // Only the first job of a list may have completed: what follows it failed. A deleted job
      // kept is found gone by the pass that takes it (its state null), and passed on as deleted.
      yield* failures.keep(tx, [...ended.map((job) => job.id), next.id]);
      return;
    }
    const children = yield* deps.pendingChildren(next.id);
    failures?.visited(tx, 1 + children.length);
    for (const child of children) {
      const policy: DependencyPolicy =
        next.outcome === 'deleted' && child.policy === 'wait' ? 'cancel' : child.policy;
      if (failed && policy === 'wait') continue;
      const edgeState = failed ? 'failed' : 'completed';
      if (!(yield* deps.resolve({ parentId: next.id, childSeq: child.seq, state: edgeState }))) continue;
      if (failed && policy === 'cancel') {
        yield* cancelWaiting(ctx, tx, child, cancelledByDependency(next.id, next.outcome));
        // Cancelled for a deleted job, it may have waited on other failed ones too (`wait`): those
        // edges say they failed, as a cancel by id makes them say.
        if (child.policy === 'wait') yield* deps.failFromFailed(child.seq);
        if (dependedOn(child.dependency_flags)) ended.push({ id: child.id, outcome: 'failed' });
        continue;
      }
      if (!(yield* deps.anyPending(child.seq))) yield* release(ctx, tx, child);
    }
    // Jobs cancelled before it failed (by id, or by a flow's cancel, newest first): their edges
    // say it failed, as those of the jobs its failure cancelled here do.
    if (failed) yield* deps.resolveToEnded(next.id, 'failed');
  }
}

/**
 * The delete of a job others waited on, passed on: a completed one released what waited on it
 * when it completed, so its delete only resolves, completed, the edges of the jobs cancelled
 * before it completed (shown completed through it while it was kept: shown.ts); any other
 * cancels what still waits on it (`releaseDependents`, `deleted`).
 */
export function* passDeletionOn(
  ctx: EngineContext,
  tx: StoreTx,
  job: DeletedJob,
  failures: DependencyFailures | undefined,
): Op<void> {
  if (job.state !== 'completed') yield* releaseDependents(ctx, tx, job.id, 'deleted', failures);
  else if (tx.dependencies !== undefined) yield* tx.dependencies.resolveToEnded(job.id, 'completed');
}

/**
 * `releaseDependents` of many jobs that all just completed in this unit (an ack batch's jobs
 * others wait on), as sets when the store can (`releaseCompleted`): what is released and how
 * is the same as job by job, each waiting job released once, when its last edge resolves
 * here. The counts, hand-offs and wake-ups once per queue rather than per job.
 */
export function* releaseDependentsOfCompleted(
  ctx: EngineContext,
  tx: StoreTx,
  jobIds: readonly string[],
): Op<void> {
  const deps = tx.dependencies;
  if (deps === undefined || jobIds.length === 0) return;
  if (deps.releaseCompleted === undefined || jobIds.length === 1) {
    for (const jobId of jobIds) yield* releaseDependents(ctx, tx, jobId, 'completed');
    return;
  }
  const nowMs = ctx.clock.nowMs();
  const released = yield* deps.releaseCompleted({ parentIds: jobIds, nowMs });
  if (released.length === 0) return;
  const perQueue = new Map<string, { ready: number; scheduled: number }>();
  for (const job of released) {
    let counts = perQueue.get(job.queue);
    if (counts === undefined) {
      counts = { ready: 0, scheduled: 0 };
      perQueue.set(job.queue, counts);
    }
    counts[job.state]++;
    if (job.state === 'scheduled') ctx.wakeAt(tx, job.run_at_ms);
    if (ctx.events.recording) {
      ctx.record(tx, {
        ...eventAbout(job, nowMs),
        kind: 'released',
        state: job.state,
        runAtMs: job.run_at_ms,
      });
    }
  }
  for (const [queue, { ready, scheduled }] of perQueue) {
    if (ready > 0) {
      yield* ctx.count(tx, queue, 'waiting', 'ready', ready);
      ctx.jobsReady(tx, queue, ready);
    }
    if (scheduled > 0) yield* ctx.count(tx, queue, 'waiting', 'scheduled', scheduled);
  }
}

/** A waiting job whose dependencies all resolved → ready, or scheduled while its run time is ahead. */
function* release(ctx: EngineContext, tx: StoreTx, child: WaitingChildRow): Op<void> {
  const state = child.run_at_ms > ctx.clock.nowMs() ? 'scheduled' : 'ready';
  yield* tx.dependencies!.release({ seq: child.seq, state });
  yield* ctx.count(tx, child.queue, 'waiting', state, 1);
  if (state === 'ready') ctx.jobsReady(tx, child.queue, 1);
  else ctx.wakeAt(tx, child.run_at_ms);
  if (ctx.events.recording) {
    ctx.record(tx, {
      ...eventAbout(child, ctx.clock.nowMs()),
      kind: 'released',
      state,
      runAtMs: child.run_at_ms,
    });
  }
}

/** A waiting job whose dependency failed, under the `cancel` policy (or was deleted) → cancelled `by` it. */
function* cancelWaiting(ctx: EngineContext, tx: StoreTx, child: WaitingChildRow, by: string): Op<void> {
  const nowMs = ctx.clock.nowMs();
  yield* tx.control.cancelWaiting({ seq: child.seq, nowMs, by });
  yield* ctx.count(tx, child.queue, 'waiting', 'cancelled', 1);
  yield* ctx.releaseKey(tx, child.queue, child.idempotency_key, child.id);
  ctx.emit(tx, { kind: 'cancelled', queue: child.queue, count: 1 });
  if (ctx.events.recording) {
    ctx.record(tx, { ...eventAbout(child, nowMs), kind: 'cancelled', previousState: 'waiting' });
  }
  if (ctx.outcomes.enabled && ctx.queues.settingsFor(child.queue).cancelledRetentionMs === 0) {
    ctx.keepOutcome(tx, cancelledOutcome({ ...child, cancelled_by: by }, nowMs, null));
  }
  // Its batch counts it; what waits on it is the caller's work list.
  if (inBatch(child.dependency_flags))
    yield* ctx.jobEnded(tx, { id: child.id, flags: batchMember }, 'cancelled');
}
