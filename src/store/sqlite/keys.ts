/**
 * Idempotency keys: what a queue's dedup window remembers (`idempotency_keys`)
 * and the keys of unfinished jobs (index jobs_idempotency). A keyed enqueue
 * costs one or two index probes; an enqueue without a key costs nothing here.
 */
import type { Keys } from '../jobs.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareKeyStatements(db: Preparer) {
  return {
    findIdempotencyKey: db.prepare<[string, string], { job_id: string; expires_at_ms: number }>(
      'SELECT job_id, expires_at_ms FROM idempotency_keys WHERE queue = ? AND key = ?',
    ),
    putIdempotencyKey: db.prepare<[{ queue: string; key: string; jobId: string; expiresAtMs: number }]>(
      `INSERT INTO idempotency_keys (queue, key, job_id, expires_at_ms) VALUES (@queue, @key, @jobId, @expiresAtMs)
       ON CONFLICT (queue, key) DO UPDATE SET job_id = excluded.job_id, expires_at_ms = excluded.expires_at_ms`,
    ),
    /** The newest unfinished job of a queue with this key (index jobs_idempotency): a key in use. */
    activeJobByKey: db
      .prepare<[{ queue: string; key: string }], string>(
        `SELECT id FROM jobs WHERE queue = @queue AND idempotency_key = @key
            AND state IN ('waiting', 'scheduled', 'ready', 'leased') AND cancelled_at_ms IS NULL
          ORDER BY seq DESC LIMIT 1`,
      )
      .pluck(),
    /** The newest stored job of a queue with this idempotency key. */
    jobIdByIdempotencyKey: db
      .prepare<[{ queue: string; key: string }], string>(
        'SELECT id FROM jobs WHERE queue = @queue AND idempotency_key = @key ORDER BY seq DESC LIMIT 1',
      )
      .pluck(),
    /** Forgets a key, if it still names this job (cancel and delete release keys). */
    releaseKey: db.prepare<[{ queue: string; key: string; jobId: string }]>(
      'DELETE FROM idempotency_keys WHERE queue = @queue AND key = @key AND job_id = @jobId',
    ),
    sweepIdempotencyKeys: db.prepare<[{ nowMs: number; limit: number }]>(
      `DELETE FROM idempotency_keys WHERE (queue, key) IN
         (SELECT queue, key FROM idempotency_keys WHERE expires_at_ms <= @nowMs LIMIT @limit)`,
    ),
  };
}

type KeyStatements = ReturnType<typeof prepareKeyStatements>;

export function keyOps(sql: KeyStatements): Keys {
  return {
    *remembered({ queue, key }) {
      return sql.findIdempotencyKey.get(queue, key);
    },
    *activeJob(p) {
      return sql.activeJobByKey.get(p);
    },
    *newestJob(p) {
      return sql.jobIdByIdempotencyKey.get(p);
    },
    *remember(p) {
      sql.putIdempotencyKey.run(p);
    },
    *release(p) {
      sql.releaseKey.run(p);
    },
    *sweep(p) {
      return sql.sweepIdempotencyKeys.run(p).changes;
    },
  };
}
