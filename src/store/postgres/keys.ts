/**
 * Idempotency keys: what a queue's dedup window remembers (`idempotency_keys`)
 * and the keys of unfinished jobs (index jobs_idempotency).
 */
import type { Keys } from '../store.ts';
import { type Connection, changes, firstRow, statement, value } from './sql.ts';

const remembered = statement(
  'SELECT job_id, expires_at_ms FROM idempotency_keys WHERE queue = $1 AND key = $2',
);
const remember = statement(
  `INSERT INTO idempotency_keys (queue, key, job_id, expires_at_ms) VALUES ($1, $2, $3, $4)
   ON CONFLICT (queue, key) DO UPDATE SET job_id = excluded.job_id, expires_at_ms = excluded.expires_at_ms`,
);
const activeJob = statement(
  `SELECT id AS v FROM jobs WHERE queue = $1 AND idempotency_key = $2
      AND state IN ('scheduled', 'ready', 'leased') AND cancelled_at_ms IS NULL
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

export function keyOps(c: Connection): Keys {
  return {
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
