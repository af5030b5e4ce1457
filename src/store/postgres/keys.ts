/**
 * Idempotency keys: what a queue's dedup window remembers (`idempotency_keys`)
 * and the keys of unfinished jobs (index jobs_idempotency).
 *
 * Two servers enqueueing one key at once would both find it free and both store a
 * job, so a write takes a transaction-scoped advisory lock per (queue, key) before
 * it looks its keys up — the lock the SQL function `enqueue` takes (schema/postgres/0002),
 * so its callers and the servers serialise too. The second writer waits for the first's
 * commit, then its lookup (a new snapshot, READ COMMITTED) sees the first's job.
 *
 * Deadlocks: a writer's transaction holds the units of a batch, each with its own keys,
 * and may hold other locks (rows, queue limits) before a unit's keys come. So it waits for
 * keys only when its transaction holds nothing yet (the first statement since BEGIN), and
 * then in hash order; a later unit takes its keys only if they are free, and when one is
 * not the unit goes first in the writer's next batch (LocksBusy). A writer waiting for a
 * key therefore holds no lock anyone waits for but keys of lower hash, and no cycle of
 * waits can pass through a key. (A unit that already sent statements waits instead, as
 * the SQL function does; PostgreSQL then breaks a rare deadlock by failing the batch.)
 */

import type { Keys } from '../jobs.ts';
import type { Op } from '../op.ts';
import { type Connection, changes, firstRow, LocksBusy, statement, value } from './sql.ts';

const remembered = statement(
  'SELECT job_id, expires_at_ms FROM idempotency_keys WHERE queue = $1 AND key = $2',
);
const remember = statement(
  `INSERT INTO idempotency_keys (queue, key, job_id, expires_at_ms) VALUES ($1, $2, $3, $4)
   ON CONFLICT (queue, key) DO UPDATE SET job_id = excluded.job_id, expires_at_ms = excluded.expires_at_ms`,
);
const activeJob = statement(
  `SELECT id AS v FROM jobs WHERE queue = $1 AND idempotency_key = $2
      AND state IN ('waiting', 'scheduled', 'ready', 'leased') AND cancelled_at_ms IS NULL
    ORDER BY seq DESC LIMIT 1`,
);
const newestJob = statement(
  'SELECT id AS v FROM jobs WHERE queue = $1 AND idempotency_key = $2 ORDER BY seq DESC LIMIT 1',
);
const release = statement('DELETE FROM idempotency_keys WHERE queue = $1 AND key = $2 AND job_id = $3');
const sweep = statement(
  `DELETE FROM idempotency_keys WHERE (queue, key) IN (
     SELECT queue, key FROM idempotency_keys WHERE expires_at_ms <= $1
      ORDER BY expires_at_ms LIMIT $2 FOR UPDATE SKIP LOCKED)`,
);

/** The advisory-lock class of keys (as limits.ts's): the second key is hashtext(queue || '\n' || key). */
const keyLockClass = 24219;
const distinctHashes = `SELECT DISTINCT hashtext(k) AS h FROM unnest($1::text[]) AS k ORDER BY 1`;
// The subquery's ORDER BY keeps it from being flattened: the locks are taken in hash order.
const waitForKeys = statement(
  `SELECT count(*) FROM (SELECT pg_advisory_xact_lock(${keyLockClass}, h) FROM (${distinctHashes}) AS s) AS l`,
);
const keysIfFree = statement(
  `SELECT coalesce(bool_and(pg_try_advisory_xact_lock(${keyLockClass}, h)), true) AS v FROM (${distinctHashes}) AS s`,
);

/** Takes the key locks of `keys` for the writer's transaction (see the top of this file). */
function* lockKeys(c: Connection, keys: readonly { queue: string; key: string }[]): Op<void> {
  const t = c.transaction;
  if (t === undefined || keys.length === 0) return;
  const texts = keys.map(({ queue, key }) => `${queue}\n${key}`);
  if (t.statements > 0 && t.statements === t.unitStart) {
    if ((yield* value<boolean>(c, keysIfFree, [texts])) === false) throw new LocksBusy();
  } else {
    yield c.send(waitForKeys, [texts]);
  }
}

export function keyOps(c: Connection): Keys {
  return {
    lock: (keys) => lockKeys(c, keys),
    *remembered({ queue, key }) {
      return yield* firstRow<{ job_id: string; expires_at_ms: number }>(c, remembered, [queue, key]);
    },
    *activeJob({ queue, key }) {
      return yield* value<string>(c, activeJob, [queue, key]);
    },
    *newestJob({ queue, key }) {
      return yield* value<string>(c, newestJob, [queue, key]);
    },
    *remember(p) {
      yield* changes(c, remember, [p.queue, p.key, p.jobId, p.expiresAtMs]);
    },
    *release(p) {
      yield* changes(c, release, [p.queue, p.key, p.jobId]);
    },
    *sweep(p) {
      return yield* changes(c, sweep, [p.nowMs, p.limit]);
    },
  };
}
