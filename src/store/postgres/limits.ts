/**
 * Limits exact across servers (design note 0100, section 8): a write that reads
 * what a limit counts — a queue's leased jobs (max_leased), a group's
 * (group_max_leased), a rate-limit bucket — first takes the queue's advisory
 * transaction lock. A server leasing from a limited queue therefore waits for
 * the other servers' leases of it to commit, and its next statement (a new
 * snapshot, in READ COMMITTED) counts them: a limited queue's leases are
 * serialised across servers, one transaction at a time. Queues without limits
 * never take it. Acks do not take it either: an ack that commits meanwhile can
 * only make a count too high (fewer leases this time), never too low.
 *
 * Deadlocks: a reserve may name several limited queues, and a writer's batch holds
 * several reserves, so two servers could take two queues' locks in opposite orders.
 * A reserve's unit therefore takes the locks of all its limited queues at once, before
 * it leases (`lockLimitsInOrder`, called by the engine through `Flow.lockLimits`), by
 * the rule the idempotency keys follow (keys.ts): it waits for them, in hash order,
 * only while its transaction holds nothing else (or once the unit itself has written);
 * otherwise it takes them only if all are free, and when one is not the unit goes first
 * in the writer's next batch (LocksBusy), where it may wait. What is left: a reserve
 * served inside another unit's commit (a waiting reserve handed the jobs an enqueue
 * made ready, waiters.ts) takes each lock as it comes to the queue, and PostgreSQL
 * breaks a rare deadlock there by failing the batch.
 */
import type { Op } from '../op.ts';
import { type Connection, LocksBusy, statement, value, writing } from './sql.ts';

/** The advisory-lock class of queue limits (the second key is the queue name's hash). */
const limitLockClass = 0x5e9b;
const lock = statement(`SELECT pg_advisory_xact_lock(${limitLockClass}, hashtext($1))`);
const distinctHashes = 'SELECT DISTINCT hashtext(q) AS h FROM unnest($1::text[]) AS q ORDER BY 1';
// The subquery's ORDER BY keeps it from being flattened: the locks are taken in hash order.
const waitForLimits = statement(
  `SELECT count(*) FROM (SELECT pg_advisory_xact_lock(${limitLockClass}, h) FROM (${distinctHashes}) AS s) AS l`,
);
const limitsIfFree = statement(
  `SELECT coalesce(bool_and(pg_try_advisory_xact_lock(${limitLockClass}, h)), true) AS v FROM (${distinctHashes}) AS s`,
);

/** Takes `queue`'s limit lock for this transaction (once), when `c` writes; a read takes none. */
export function* lockLimits(c: Connection, queue: string): Op<void> {
  if (!writing(c) || c.deltas === undefined || c.deltas.lockedQueues.has(queue)) return;
  yield c.send(lock, [queue]);
  c.deltas.lockedQueues.add(queue);
}

/** Takes the limit locks of `queues` for the writer's transaction, in a fixed order (see the top of this file). */
export function* lockLimitsInOrder(c: Connection, queues: readonly string[]): Op<void> {
  const held = c.deltas?.lockedQueues;
  const t = c.transaction;
  if (!writing(c) || held === undefined) return;
  const wanted = [...new Set(queues)].filter((queue) => !held.has(queue));
  if (wanted.length === 0) return;
  if (t !== undefined && t.statements > 0 && t.statements === t.unitStart) {
    if ((yield* value<boolean>(c, limitsIfFree, [wanted])) === false) throw new LocksBusy();
  } else {
    yield c.send(waitForLimits, [wanted]);
  }
  for (const queue of wanted) held.add(queue);
}
