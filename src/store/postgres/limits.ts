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
 */
import type { Op } from '../op.ts';
import { type Connection, statement, writing } from './sql.ts';

/** The advisory-lock class of queue limits (the second key is the queue name's hash). */
const limitLockClass = 0x5e9b;
const lock = statement(`SELECT pg_advisory_xact_lock(${limitLockClass}, hashtext($1))`);

/** Takes `queue`'s limit lock for this transaction (once), when `c` writes; a read takes none. */
export function* lockLimits(c: Connection, queue: string): Op<void> {
  if (!writing(c) || c.deltas === undefined || c.deltas.lockedQueues.has(queue)) return;
  yield c.send(lock, [queue]);
  c.deltas.lockedQueues.add(queue);
}
