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

  /**
   * Puts `tokens` back into a bucket (leases undone: leases/undone-lease.ts), refilled to
   * `nowMs` first and capped at its capacity. That is what the bucket would hold had the
   * leases never taken them: one refilled to the brim since would have stopped earning
   * as much sooner, which the cap gives back. A full bucket (one with no row is) is left alone.
   */
  *giveBack(
    tx: StoreTx,
    queue: string,
    key: string,
    rate: RateLimitSettings,
    tokens: number,
    nowMs: number,
  ): Op<void> {
    if (tokens <= 0) return;
    const bucket = yield* this.read(tx, queue, key, rate, nowMs);
    const capacity = capacityOf(rate);
    if (bucket.tokens >= capacity) return;
    const full = bucket.tokens + tokens >= capacity;
    yield* tx.flow.putBucket({
      queue,
      groupKey: key,
      tokens: Math.min(capacity, bucket.tokens + tokens),
      // A full bucket earns nothing: its carry goes (token-bucket.ts).
      carry_units: full ? 0 : bucket.carryUnits,
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
