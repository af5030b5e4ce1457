/**
 * Rate-limit buckets as stored: read, refilled to now, and written back in the
 * lease's own write operation, so a bucket is exactly as durable as the leases
 * it paid for (a restart neither refills it nor loses a token). A bucket with
 * no row is full.
 */
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';
import type { RateLimitSettings } from '../settings.ts';
import { type BucketState, capacityOf, fullBucket, nextTokenAtMs, refill } from './token-bucket.ts';

/** The queue's own bucket; a group's bucket is keyed by the group's name (never empty). */
export const queueBucketKey = '';

export class Buckets {
  /** The bucket of `queue` (or of one of its groups) refilled to `nowMs`. */
  *read(tx: StoreTx, queue: string, key: string, rate: RateLimitSettings, nowMs: number): Op<BucketState> {
    const row = yield* tx.flow.bucket({ queue, groupKey: key });
    if (row === undefined) return fullBucket(rate, nowMs);
    return refill({ tokens: row.tokens, carryUnits: row.carry_units, atMs: row.refilled_at_ms }, rate, nowMs);
  }

  /** Takes `tokens` from a bucket read by `read` in the same operation and stores it. */
  *spend(tx: StoreTx, queue: string, key: string, bucket: BucketState, tokens: number): Op<void> {
    if (tokens <= 0) return;
    bucket.tokens -= tokens;
    yield* tx.flow.putBucket({
      queue,
      groupKey: key,
      tokens: bucket.tokens,
      carry_units: bucket.carryUnits,
      refilled_at_ms: bucket.atMs,
    });
  }

  /** When an empty bucket gets its next token. */
  nextTokenAtMs(bucket: BucketState, rate: RateLimitSettings): number {
    return nextTokenAtMs(bucket, rate);
  }

  /**
   * Deletes buckets of `queue` that have been full for a while: untouched for
   * longer than an empty bucket takes to fill. Returns how many.
   */
  sweep(
    tx: StoreTx,
    queue: string,
    rates: readonly RateLimitSettings[],
    nowMs: number,
    limit: number,
  ): Op<number> {
    let fillMs = 0;
    for (const rate of rates) {
      if (rate.leases > 0)
        fillMs = Math.max(fillMs, Math.ceil((capacityOf(rate) * rate.periodMs) / rate.leases));
    }
    return tx.flow.sweepBuckets({ queue, beforeMs: nowMs - fillMs, limit });
  }
}
