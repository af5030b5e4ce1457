/**
 * What flow control reads (src/engine/flow-control): where the ready work is,
 * by priority and group, the leased jobs of a group, and the rate-limit
 * buckets. Each is one index seek or a range bounded by a limit
 * (tests/admin/query-plans.test.ts checks every plan); none scans the groups
 * or the ready jobs of a queue. The leases by turns are in leases.ts.
 */

import type { Flow } from '../leases.ts';
import type { BucketRow, ReadyHeadRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareFlowStatements(db: Preparer) {
  return {
    // ---- where the ready work is (jobs_ready: no group; jobs_group_ready: by group)
    /** The highest priority ≤ @maxPriority with a ready job without a group. */
    topUngroupedPriority: db
      .prepare<[{ queue: string; maxPriority: number }], number>(
        `SELECT priority FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
            AND priority <= @maxPriority ORDER BY priority DESC LIMIT 1`,
      )
      .pluck(),
    /** The highest priority ≤ @maxPriority with a ready job of any group. */
    topGroupedPriority: db
      .prepare<[{ queue: string; maxPriority: number }], number>(
        `SELECT priority FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NOT NULL
            AND priority <= @maxPriority ORDER BY priority DESC LIMIT 1`,
      )
      .pluck(),
    /** The oldest @limit ready jobs without a group at each priority (10 bounded ranges of jobs_ready). */
    readyHeads: db.prepare<[{ queue: string; limit: number }], ReadyHeadRow>(
      [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
        .map(
          (priority) =>
            `SELECT * FROM (SELECT priority, run_at_ms, seq FROM jobs
              WHERE queue = @queue AND state = 'ready' AND group_key IS NULL AND priority = ${priority}
              ORDER BY run_at_ms, seq LIMIT CAST(@limit AS INTEGER))`,
        )
        .join(' UNION ALL '),
    ),
    /** Whether a job without a group is ready at @priority. */
    hasUngroupedAt: db
      .prepare<[{ queue: string; priority: number }], number>(
        `SELECT 1 FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL AND priority = @priority
          LIMIT 1`,
      )
      .pluck(),
    /**
     * The first group after @after (in name order; '' = from the start) with a ready
     * job at @priority, and that group's earliest due time there: one seek.
     */
    nextGroupAt: db.prepare<
      [{ queue: string; priority: number; after: string }],
      { group_key: string; run_at_ms: number }
    >(
      `SELECT group_key, run_at_ms FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NOT NULL
          AND priority = @priority AND group_key > @after
        ORDER BY group_key, run_at_ms LIMIT 1`,
    ),
    /** Leased jobs of one group: a range of jobs_group_leased no longer than the group's limit allows. */
    leasedInGroup: db
      .prepare<[{ queue: string; groupKey: string }], number>(
        `SELECT count(*) FROM jobs WHERE queue = @queue AND state = 'leased' AND group_key = @groupKey`,
      )
      .pluck(),

    // ---- rate-limit buckets ('' is the queue's own bucket)
    getBucket: db.prepare<[{ queue: string; groupKey: string }], BucketRow>(
      'SELECT tokens, carry_units, refilled_at_ms FROM flow_buckets WHERE queue = @queue AND group_key = @groupKey',
    ),
    putBucket: db.prepare<[BucketRow & { queue: string; groupKey: string }]>(
      `INSERT INTO flow_buckets (queue, group_key, tokens, carry_units, refilled_at_ms)
       VALUES (@queue, @groupKey, @tokens, @carry_units, @refilled_at_ms)
       ON CONFLICT (queue, group_key) DO UPDATE
         SET tokens = excluded.tokens, carry_units = excluded.carry_units, refilled_at_ms = excluded.refilled_at_ms`,
    ),
    /** Forgets buckets untouched since @beforeMs (they are full again, the same as no row). */
    sweepBuckets: db.prepare<[{ queue: string; beforeMs: number; limit: number }]>(
      `DELETE FROM flow_buckets WHERE (queue, group_key) IN
         (SELECT queue, group_key FROM flow_buckets WHERE queue = @queue AND refilled_at_ms < @beforeMs LIMIT @limit)`,
    ),
  };
}

type FlowStatements = ReturnType<typeof prepareFlowStatements>;

export function flowOps(sql: FlowStatements): Flow {
  return {
    *topPriority(p) {
      // The statement binds the names it has: `grouped` only picks it.
      return (p.grouped ? sql.topGroupedPriority : sql.topUngroupedPriority).get(p);
    },
    *hasUngroupedAt(p) {
      return sql.hasUngroupedAt.get(p) !== undefined;
    },
    *readyHeads(p) {
      return sql.readyHeads.all(p);
    },
    *nextGroupAt(p) {
      return sql.nextGroupAt.get(p);
    },
    *leasedInGroup(p) {
      return sql.leasedInGroup.get(p) ?? 0;
    },
    *bucket(p) {
      return sql.getBucket.get(p);
    },
    *putBucket(p) {
      sql.putBucket.run(p);
    },
    *sweepBuckets(p) {
      return sql.sweepBuckets.run(p).changes;
    },
  };
}
