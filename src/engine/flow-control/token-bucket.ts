/**
 * The arithmetic of a rate limit's token bucket, in integers only.
 *
 * A bucket for "`leases` per `periodMs`, at most `burst` at once" gains one token
 * every periodMs / leases ms. That interval is rarely a whole number (3 per
 * 1,000 ms), so time is counted in units of 1/`leases` ms: a token costs
 * `periodMs` units and every millisecond brings `leases` units. `carryUnits`
 * holds the part of the next token already earned. No floating point, so a
 * bucket never drifts: 200 per second is exactly 200 in every second of demand.
 *
 * A full bucket earns nothing (its carry is dropped), so after a quiet spell at
 * most `burst` leases start back to back, and then one per interval.
 */
import type { RateLimitSettings } from '../settings.ts';

export interface BucketState {
  tokens: number;
  /** Earned part of the next token, in units (0 ≤ carry < periodMs). */
  carryUnits: number;
  /** The time `tokens` and `carryUnits` are counted to. */
  atMs: number;
}

/** The bucket's capacity: `burst`, or `leases` when burst is 0 (not set). */
export function capacityOf(rate: RateLimitSettings): number {
  return rate.burst > 0 ? rate.burst : rate.leases;
}

/** A bucket that has never been used: full. */
export function fullBucket(rate: RateLimitSettings, nowMs: number): BucketState {
  return { tokens: capacityOf(rate), carryUnits: 0, atMs: nowMs };
}

/** The bucket as it stands at `nowMs`: what was earned since `state.atMs` added, capped at capacity. */
export function refill(state: BucketState, rate: RateLimitSettings, nowMs: number): BucketState {
  const capacity = capacityOf(rate);
  // A lowered limit (or a clock that stepped back) must not leave more than capacity.
  if (state.tokens >= capacity || nowMs < state.atMs) {
    return { tokens: Math.min(state.tokens, capacity), carryUnits: 0, atMs: Math.max(nowMs, state.atMs) };
  }
  const carry = Math.min(state.carryUnits, rate.periodMs - 1);
  // Units still needed to fill the bucket; beyond that, time earns nothing. Checking
  // this first keeps every product below 2^53 (capacity and leases ≤ 10^6, period ≤ 1 day).
  const unitsToFull = (capacity - state.tokens) * rate.periodMs - carry;
  const elapsedMs = nowMs - state.atMs;
  if (elapsedMs * rate.leases >= unitsToFull || elapsedMs >= Math.ceil(unitsToFull / rate.leases)) {
    return { tokens: capacity, carryUnits: 0, atMs: nowMs };
  }
  const units = carry + elapsedMs * rate.leases;
  const earned = Math.floor(units / rate.periodMs);
  return { tokens: state.tokens + earned, carryUnits: units - earned * rate.periodMs, atMs: nowMs };
}

/** When the next token is due, for a bucket refilled to `state.atMs` (meaningful when it is not full). */
export function nextTokenAtMs(state: BucketState, rate: RateLimitSettings): number {
  return state.atMs + Math.ceil((rate.periodMs - state.carryUnits) / rate.leases);
}
