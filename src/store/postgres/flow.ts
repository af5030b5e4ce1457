/**
 * What flow control reads (src/engine/flow-control): where the ready work is,
 * by priority and group, the leased jobs of a group, and the rate-limit
 * buckets. Each is one index seek or a range bounded by a limit.
 */

import type { Flow } from '../leases.ts';
import type { BucketRow, ReadyHeadRow } from '../rows.ts';
import { lockLimits, lockLimitsInOrder } from './limits.ts';
import { type Connection, changes, firstRow, rows, statement, value } from './sql.ts';

const topUngrouped = statement(
  `SELECT priority AS v FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key IS NULL AND priority <= $2
    ORDER BY priority DESC LIMIT 1`,
);
const topGrouped = statement(
  `SELECT priority AS v FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key IS NOT NULL AND priority <= $2
    ORDER BY priority DESC LIMIT 1`,
);
const hasUngroupedAt = statement(
  `SELECT true AS v FROM jobs WHERE queue = $1 AND state = 'ready' AND group_key IS NULL AND priority = $2 LIMIT 1`,
);
/** The oldest $2 ready jobs without a group at each priority: one range of jobs_ready per priority. */
const readyHeads = statement(
  `SELECT h.priority, h.run_at_ms, h.seq FROM generate_series(9, 0, -1) AS p(priority)
     CROSS JOIN LATERAL (
       SELECT j.priority, j.run_at_ms, j.seq FROM jobs j
        WHERE j.queue = $1 AND j.state = 'ready' AND j.group_key IS NULL AND j.priority = p.priority
        ORDER BY j.run_at_ms, j.seq LIMIT $2) AS h`,
);
const nextGroupAt = statement(
  `SELECT group_key, run_at_ms FROM jobs
    WHERE queue = $1 AND state = 'ready' AND group_key IS NOT NULL AND priority = $2 AND group_key > $3
    ORDER BY priority DESC, group_key, run_at_ms LIMIT 1`,
);
const leasedInGroup = statement(
  `SELECT count(*) AS v FROM jobs WHERE queue = $1 AND state = 'leased' AND group_key = $2`,
);
const getBucket = statement(
  'SELECT tokens, carry_units, refilled_at_ms FROM flow_buckets WHERE queue = $1 AND group_key = $2',
);
const putBucket = statement(
  `INSERT INTO flow_buckets (queue, group_key, tokens, carry_units, refilled_at_ms) VALUES ($1, $2, $3, $4, $5)
   ON CONFLICT (queue, group_key) DO UPDATE
     SET tokens = excluded.tokens, carry_units = excluded.carry_units, refilled_at_ms = excluded.refilled_at_ms`,
);
const sweepBuckets = statement(
  `DELETE FROM flow_buckets WHERE (queue, group_key) IN (
     SELECT queue, group_key FROM flow_buckets WHERE queue = $1 AND refilled_at_ms < $2
      LIMIT $3 FOR UPDATE SKIP LOCKED)`,
);

export function flowOps(c: Connection): Flow {
  return {
    lockLimits: (queues) => lockLimitsInOrder(c, queues),
    *topPriority(p) {
      return yield* value<number>(c, p.grouped ? topGrouped : topUngrouped, [p.queue, p.maxPriority]);
    },
    *hasUngroupedAt(p) {
      return (yield* value<boolean>(c, hasUngroupedAt, [p.queue, p.priority])) === true;
    },
    *readyHeads(p) {
      return yield* rows<ReadyHeadRow>(c, readyHeads, [p.queue, p.limit]);
    },
    *nextGroupAt(p) {
      return yield* firstRow<{ group_key: string; run_at_ms: number }>(c, nextGroupAt, [
        p.queue,
        p.priority,
        p.after,
      ]);
    },
    *leasedInGroup(p) {
      yield* lockLimits(c, p.queue);
      return (yield* value<number>(c, leasedInGroup, [p.queue, p.groupKey])) ?? 0;
    },
    *bucket(p) {
      yield* lockLimits(c, p.queue);
      return yield* firstRow<BucketRow>(c, getBucket, [p.queue, p.groupKey]);
    },
    *putBucket(p) {
      yield* changes(c, putBucket, [p.queue, p.groupKey, p.tokens, p.carry_units, p.refilled_at_ms]);
    },
    *sweepBuckets(p) {
      return yield* changes(c, sweepBuckets, [p.queue, p.beforeMs, p.limit]);
    },
  };
}
