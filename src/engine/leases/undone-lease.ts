/**
 * Undone leases: jobs leased for an answer that never reached a worker (a Reserve whose
 * answer was refused before it was sent: rpc/refused-answers.ts), or leased jobs a worker
 * gives back unstarted (a nack's `give_back`), go back as if that lease had not been taken.
 * It is not a failed attempt: nothing joins the job's errors, no attempt is counted against
 * the job, and a job on its last attempt is not dead-lettered. The two differ in the fencing
 * token, the attempt:
 * - `unsent`: the attempt is given back (the next lease takes the same number again). Safe
 *   only because that number never left the server: no one holds it to settle with.
 * - `given_back`: the worker holds the attempt, and may still send a late extend, ack or nack
 *   with it (one already in flight, a client's bug). So the attempt stays and the next lease
 *   takes the next number, which refuses those as stale; the job's attempt budget grows by one
 *   instead (`attempt_base + 1`), so its attempts left, and its backoff (counted from
 *   `attempt_base`), are as before the lease.
 *
 * The job is ready again at its old place in its queue (due time, priority and group as they
 * were), so flow control sees it as any ready job: the queue's leased count (max_leased) and
 * its group's leased jobs (group_max_leased) drop in the same unit, and waiting long-polls
 * are handed it. The rate-limit tokens the lease took go back to the queue's bucket and its
 * group's (flow-control.ts, `tokensBack`). Fenced by the attempt: a job settled, expired or
 * leased again since is left alone. A job asked to stop meanwhile (a cancel request) ends
 * cancelled, as a nack would end it.
 *
 * Told after the commit: a `lease_undone` lifecycle event per job (the `leased` one already
 * published stays: a subscriber sees the lease, then its undoing), and for the metrics
 * `lease_undone` for an unsent answer (sepp_leases_undone_total) or `lease_given_back` for a
 * give-back (sepp_leases_given_back_total). The `reserved` count is not taken back: a counter
 * only goes up, so reserved minus undone is the leases that reached a worker (a given-back
 * lease did reach one, so it is counted apart, not as undone).
 */
import type { AttemptKey } from '../../store/leases.ts';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { EngineContext } from '../context.ts';
import { eventAbout } from '../events/index.ts';
import type { FlowControl } from '../flow-control/index.ts';
import { finishCancelled } from './cancelled-lease.ts';

/** What an undo needs of flow control: giving the leases' rate-limit tokens back. */
export type TokensBack = Pick<FlowControl, 'tokensBack'>;

/** Why a lease is undone: its answer was never sent, or its worker gave it back unstarted. */
export type UndoneBy = 'unsent' | 'given_back';

/** The undone jobs of one queue: how many, and how many of each group. */
interface QueueUndone {
  jobs: number;
  groups: Map<string, number>;
}

/**
 * Undoes the leases of `keys` (job ids distinct) inside a write; returns how many jobs went
 * back to ready.
 */
export function* undoLeasesIn(
  ctx: EngineContext,
  flow: TokensBack,
  tx: StoreTx,
  keys: readonly AttemptKey[],
  by: UndoneBy,
): Op<number> {
  const undone = yield* by === 'unsent' ? tx.leases.undoLeases(keys) : tx.leases.giveBackLeases(keys);
  const nowMs = ctx.clock.nowMs();
  const perQueue = new Map<string, QueueUndone>();
  for (const row of undone) {
    let queue = perQueue.get(row.queue);
    if (queue === undefined) {
      queue = { jobs: 0, groups: new Map() };
      perQueue.set(row.queue, queue);
    }
    queue.jobs++;
    if (row.group_key !== null) queue.groups.set(row.group_key, (queue.groups.get(row.group_key) ?? 0) + 1);
  }
  for (const [queue, { jobs, groups }] of perQueue) {
    yield* ctx.count(tx, queue, 'leased', 'ready', jobs);
    yield* flow.tokensBack(tx, queue, jobs, groups, nowMs);
    ctx.jobsReady(tx, queue, jobs);
    ctx.emit(tx, { kind: by === 'unsent' ? 'lease_undone' : 'lease_given_back', queue, count: jobs });
  }
  if (ctx.events.recording) {
    const attemptOf = new Map(keys.map((key) => [key.jobId, key.attempt]));
    for (const row of undone) {
      const lease = { id: row.id, queue: row.queue, type: row.type, attempt: attemptOf.get(row.id) ?? 0 };
      ctx.record(tx, { ...eventAbout(lease, nowMs), kind: 'lease_undone', state: 'ready' });
    }
  }
  if (undone.length === keys.length) return undone.length;
  // Left alone by the store: ended or leased again since (nothing to do), or asked to stop.
  const back = new Set(undone.map((row) => row.id));
  for (const key of keys) {
    if (back.has(key.jobId)) continue;
    const row = yield* tx.jobs.attempt(key.jobId);
    if (row?.state === 'leased' && row.attempt === key.attempt && row.cancelled_at_ms !== null) {
      yield* finishCancelled(ctx, tx, row, null);
    }
  }
  return undone.length;
}
