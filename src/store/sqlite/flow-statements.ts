/**
 * The statements of flow control (src/engine/flow-control): leasing by group
 * and priority, the counts the limits read, and the rate-limit buckets. Each is
 * one index seek or a range bounded by a limit (tests/admin/query-plans.test.ts
 * checks every plan); none scans the groups or the ready jobs of a queue.
 */
import type { Db } from './open.ts';
import { type LeasedRow, leasedColumns, leaseSet, leaseStatement } from './statements.ts';

export interface LeaseParams {
  now_ms: number;
  lease_deadline_ms: number;
  /** The deadline of the queue's max_lease_ms, which caps a job's own lease_ms. */
  max_lease_deadline_ms: number;
  worker_id: string | null;
}

export interface BucketRow {
  tokens: number;
  carry_units: number;
  refilled_at_ms: number;
}

export function prepareFlowStatements(db: Db) {
  return {
    // ---- where the ready work is (jobs_ready: no group; jobs_group_ready: by group)
    /** The highest priority ≤ @max_priority with a ready job without a group. */
    topUngroupedPriority: db
      .prepare<[{ queue: string; max_priority: number }], number>(
        `SELECT priority FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
            AND priority <= @max_priority ORDER BY priority DESC LIMIT 1`,
      )
      .pluck(),
    /** The highest priority ≤ @max_priority with a ready job of any group. */
    topGroupedPriority: db
      .prepare<[{ queue: string; max_priority: number }], number>(
        `SELECT priority FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NOT NULL
            AND priority <= @max_priority ORDER BY priority DESC LIMIT 1`,
      )
      .pluck(),
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

    // ---- leases
    /** Up to @limit ready jobs without a group at @priority, oldest due first. */
    leaseUngroupedAt: leaseStatement(
      db.prepare<[LeaseParams & { queue: string; priority: number; limit: number }], LeasedRow>(
        `UPDATE jobs ${leaseSet}
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key IS NULL
                        AND priority = @priority ORDER BY run_at_ms, seq LIMIT CAST(@limit AS INTEGER))
        RETURNING ${leasedColumns}`,
      ),
    ),
    /** Up to @limit ready jobs of one group at @priority, oldest due first. */
    leaseGroupAt: leaseStatement(
      db.prepare<
        [LeaseParams & { queue: string; priority: number; group_key: string; limit: number }],
        LeasedRow
      >(
        `UPDATE jobs ${leaseSet}
        WHERE seq IN (SELECT seq FROM jobs WHERE queue = @queue AND state = 'ready' AND group_key = @group_key
                        AND priority = @priority ORDER BY run_at_ms, seq LIMIT CAST(@limit AS INTEGER))
        RETURNING ${leasedColumns}`,
      ),
    ),

    // ---- what the limits read
    /** Leased jobs of a queue, from the maintained counters. */
    leasedInQueue: db
      .prepare<[string], number>("SELECT jobs FROM queue_counts WHERE queue = ? AND state = 'leased'")
      .pluck(),
    /** Ready jobs of a queue, from the maintained counters. */
    readyInQueue: db
      .prepare<[string], number>("SELECT jobs FROM queue_counts WHERE queue = ? AND state = 'ready'")
      .pluck(),
    /** Leased jobs of one group: a range of jobs_group_leased no longer than the group's limit allows. */
    leasedInGroup: db
      .prepare<[{ queue: string; group_key: string }], number>(
        `SELECT count(*) FROM jobs WHERE queue = @queue AND state = 'leased' AND group_key = @group_key`,
      )
      .pluck(),

    // ---- queues with groups
    queuesWithGroups: db.prepare<[], string>('SELECT name FROM queues WHERE has_groups = 1').pluck(),
    markQueueHasGroups: db.prepare<[string]>('UPDATE queues SET has_groups = 1 WHERE name = ?'),

    // ---- rate-limit buckets ('' is the queue's own bucket)
    getBucket: db.prepare<[{ queue: string; group_key: string }], BucketRow>(
      'SELECT tokens, carry_units, refilled_at_ms FROM flow_buckets WHERE queue = @queue AND group_key = @group_key',
    ),
    putBucket: db.prepare<[BucketRow & { queue: string; group_key: string }]>(
      `INSERT INTO flow_buckets (queue, group_key, tokens, carry_units, refilled_at_ms)
       VALUES (@queue, @group_key, @tokens, @carry_units, @refilled_at_ms)
       ON CONFLICT (queue, group_key) DO UPDATE
         SET tokens = excluded.tokens, carry_units = excluded.carry_units, refilled_at_ms = excluded.refilled_at_ms`,
    ),
    /** Every bucket of a queue (the queue is deleted). */
    deleteQueueBuckets: db.prepare<[string]>('DELETE FROM flow_buckets WHERE queue = ?'),
    /** Forgets buckets untouched since @before_ms (they are full again, the same as no row). */
    sweepBuckets: db.prepare<[{ queue: string; before_ms: number; limit: number }]>(
      `DELETE FROM flow_buckets WHERE (queue, group_key) IN
         (SELECT queue, group_key FROM flow_buckets WHERE queue = @queue AND refilled_at_ms < @before_ms LIMIT @limit)`,
    ),
  };
}

export type FlowStatements = ReturnType<typeof prepareFlowStatements>;
