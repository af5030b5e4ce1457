/**
 * Job control: cancelling jobs and cancel requests for running ones, changing
 * waiting jobs, an operator's requeue or dead-letter of one job, and expiry.
 * What changes many jobs at once is in bulk.ts.
 */

import { requeuedBatchId } from '../dependencies.ts';
import type { Control } from '../job-control.ts';
import type { ExpiredRow } from '../rows.ts';
import { type Connection, changes, rows, statement, value, writing } from './sql.ts';

const cancelWaiting = statement(
  `UPDATE jobs SET state = 'cancelled', cancelled_at_ms = $2, cancelled_by = $3
    WHERE seq = $1 AND state IN ('scheduled', 'ready', 'waiting')`,
);
const requestCancel = statement(
  `UPDATE jobs SET cancelled_at_ms = $2, cancelled_by = $3
    WHERE seq = $1 AND state = 'leased' AND cancelled_at_ms IS NULL`,
);
const updateWaiting = statement(
  `UPDATE jobs SET state = $2, priority = $3, run_at_ms = $4, group_key = $5
    WHERE seq = $1 AND state IN ('scheduled', 'ready')`,
);
/**
 * A requeue's changes: ready at `nowMs` with a fresh attempt budget, nothing of its last run kept;
 * a batch member its batch's id if its row has none (requeuedBatchId).
 */
export const requeueSet = (nowMs: string) => `state = 'ready', attempt_base = attempt, run_at_ms = ${nowMs},
  dead_reason = NULL, failed_at_ms = NULL, completed_at_ms = NULL, leased_at_ms = NULL, lease_deadline_ms = NULL,
  worker_id = NULL, expires_at_ms = NULL, cancelled_at_ms = NULL, cancelled_by = NULL,
  result = NULL, result_content_type = NULL,
  progress_percent = NULL, progress_json = NULL, progress_at_ms = NULL, ${requeuedBatchId}`;
const requeue = statement(
  `UPDATE jobs SET ${requeueSet('$2')} WHERE seq = $1 AND state IN ('dead', 'completed', 'cancelled')`,
);
const deadLetter = statement(
  `UPDATE jobs SET state = 'dead', dead_reason = 'dead_lettered', failed_at_ms = $2, lease_deadline_ms = NULL
    WHERE seq = $1 AND state IN ('ready', 'scheduled')`,
);
const expiredWaitingSql = `SELECT seq, id, queue, type, attempt, state, idempotency_key, dependency_flags, expires_at_ms FROM jobs
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
    *updateWaiting(p) {
      yield* changes(c, updateWaiting, [p.seq, p.state, p.priority, p.runAtMs, p.groupKey]);
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
  };
}
