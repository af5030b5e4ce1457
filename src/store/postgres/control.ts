/**
 * Job control: cancelling jobs and cancel requests for running ones, changing
 * waiting jobs, an operator's requeue or dead-letter of one job, purges, and
 * expiry. The bulk forms change at most `limit` rows per call (the engine runs
 * them in chunks) and skip rows another server has locked.
 */
import type { EndedJobRow, ExpiredRow } from '../rows.ts';
import type { Control, JobMatch } from '../store.ts';
import { type Connection, changes, rows, statement, value, writing } from './sql.ts';

/** $2 the type and $3 the group of a JobMatch (null: any). */
const filterMatch = '($2::text IS NULL OR type = $2) AND ($3::text IS NULL OR group_key = $3)';
const match = (p: JobMatch) => [p.queue, p.type, p.group];

const cancelWaiting = statement(
  `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = $2, cancelled_by = $3
    WHERE seq = $1 AND state IN ('scheduled', 'ready')`,
);
const requestCancel = statement(
  `UPDATE jobs SET cancelled_at_ms = $2, cancelled_by = $3
    WHERE seq = $1 AND state = 'leased' AND cancelled_at_ms IS NULL`,
);
const cancelWaitingMany = statement(
  `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = $5, cancelled_by = $6
    WHERE seq IN (SELECT seq FROM jobs WHERE queue = $1 AND state = $4 AND ${filterMatch}
                   ORDER BY seq LIMIT $7 FOR UPDATE SKIP LOCKED)
   RETURNING id, idempotency_key, type, attempt`,
);
const requestCancelMany = statement(
  `UPDATE jobs SET cancelled_at_ms = $4, cancelled_by = $5
    WHERE seq IN (SELECT seq FROM jobs WHERE queue = $1 AND state = 'leased' AND ${filterMatch}
                    AND cancelled_at_ms IS NULL ORDER BY seq LIMIT $6 FOR UPDATE SKIP LOCKED)
   RETURNING id, attempt, worker_id, idempotency_key`,
);
const countMatching = statement(
  `SELECT count(*) AS v FROM jobs WHERE queue = $1 AND state = $4 AND ${filterMatch}`,
);
const countLeasedNotCancelled = statement(
  `SELECT count(*) AS v FROM jobs WHERE queue = $1 AND state = 'leased' AND ${filterMatch}
      AND cancelled_at_ms IS NULL`,
);
const updateWaiting = statement(
  `UPDATE jobs SET state = $2, priority = $3, run_at_ms = $4, group_key = $5
    WHERE seq = $1 AND state IN ('scheduled', 'ready')`,
);
const runNowMany = statement(
  `UPDATE jobs SET state = 'ready', run_at_ms = $4, priority = coalesce($5, priority)
    WHERE seq IN (SELECT seq FROM jobs WHERE queue = $1 AND state = 'scheduled' AND ${filterMatch}
                   ORDER BY seq LIMIT $6 FOR UPDATE SKIP LOCKED)`,
);
const setPriorityMany = statement(
  `UPDATE jobs SET priority = $5
    WHERE seq IN (SELECT seq FROM jobs WHERE queue = $1 AND state = $4 AND ${filterMatch}
                    AND priority <> $5 ORDER BY seq LIMIT $6 FOR UPDATE SKIP LOCKED)`,
);
const requeue = statement(
  `UPDATE jobs SET state = 'ready', attempt_base = attempt, run_at_ms = $2, dead_reason = NULL,
                   failed_at_ms = NULL, completed_at_ms = NULL, leased_at_ms = NULL, lease_deadline_ms = NULL,
                   worker_id = NULL, expires_at_ms = NULL, cancelled_at_ms = NULL, cancelled_by = NULL,
                   result = NULL, result_content_type = NULL,
                   progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL
    WHERE seq = $1 AND state IN ('dead', 'completed', 'cancelled')`,
);
const deadLetter = statement(
  `UPDATE jobs SET state = 'dead', dead_reason = 'dead_lettered', failed_at_ms = $2, lease_deadline_ms = NULL
    WHERE seq = $1 AND state IN ('ready', 'scheduled')`,
);
const deleteWaitingMany = statement(
  `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE queue = $1 AND state = $2
                                   ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED)
   RETURNING id, idempotency_key, type, attempt`,
);
const expiredWaitingSql = `SELECT seq, id, queue, type, attempt, state, idempotency_key, expires_at_ms FROM jobs
    WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready') AND expires_at_ms <= $1
    ORDER BY expires_at_ms LIMIT $2`;
const expiredWaiting = statement(expiredWaitingSql);
/** In a write (maintenance on every server): each server takes different expired jobs. */
const expiredWaitingLocked = statement(`${expiredWaitingSql} FOR UPDATE SKIP LOCKED`);
const nextExpiry = statement(
  "SELECT min(expires_at_ms) AS v FROM jobs WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready')",
);
const expire = statement(
  `UPDATE jobs SET state = 'dead', dead_reason = 'expired', failed_at_ms = $2, last_error = $3,
                   attempt = attempt - $4, lease_deadline_ms = NULL
    WHERE seq = $1`,
);

export function controlOps(c: Connection): Control {
  return {
    *countMatching(p) {
      return (yield* value<number>(c, countMatching, [...match(p), p.state])) ?? 0;
    },
    *countLeasedNotCancelled(p) {
      return (yield* value<number>(c, countLeasedNotCancelled, match(p))) ?? 0;
    },
    *expiredWaiting(p) {
      return yield* rows<ExpiredRow>(c, writing(c) ? expiredWaitingLocked : expiredWaiting, [
        p.nowMs,
        p.limit,
      ]);
    },
    *nextExpiryMs() {
      return (yield* value<number | null>(c, nextExpiry, [])) ?? null;
    },
    *cancelWaiting(p) {
      yield* changes(c, cancelWaiting, [p.seq, p.nowMs, p.by]);
    },
    *requestCancel(p) {
      yield* changes(c, requestCancel, [p.seq, p.nowMs, p.by]);
    },
    *cancelWaitingMany(p) {
      return yield* rows<EndedJobRow>(c, cancelWaitingMany, [...match(p), p.state, p.nowMs, p.by, p.limit]);
    },
    *requestCancelMany(p) {
      return yield* rows<{
        id: string;
        attempt: number;
        worker_id: string | null;
        idempotency_key: string | null;
      }>(c, requestCancelMany, [...match(p), p.nowMs, p.by, p.limit]);
    },
    *updateWaiting(p) {
      yield* changes(c, updateWaiting, [p.seq, p.state, p.priority, p.runAtMs, p.groupKey]);
    },
    *runNowMany(p) {
      return yield* changes(c, runNowMany, [...match(p), p.nowMs, p.priority, p.limit]);
    },
    *setPriorityMany(p) {
      return yield* changes(c, setPriorityMany, [...match(p), p.state, p.priority, p.limit]);
    },
    *expire(p) {
      yield* changes(c, expire, [p.seq, p.nowMs, p.error, p.undoLease ? 1 : 0]);
    },
    *requeue(p) {
      return (yield* changes(c, requeue, [p.seq, p.nowMs])) > 0;
    },
    *deadLetter(p) {
      return (yield* changes(c, deadLetter, [p.seq, p.nowMs])) > 0;
    },
    *deleteWaitingMany(p) {
      return yield* rows<EndedJobRow>(c, deleteWaitingMany, [p.queue, p.state, p.limit]);
    },
  };
}
