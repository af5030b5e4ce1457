/**
 * Job rates for the dashboard: how many jobs were enqueued, leased, acked,
 * failed, dead-lettered and expired, and how long jobs waited between being
 * due and being leased — for the whole server and for each queue, over the
 * last 5 minutes, hour or day.
 *
 * Two rings of fixed time buckets per scope, fed with the engine's JobEvents
 * after each commit: 10 s buckets for the last hour, 5 min buckets for the last
 * day. Memory is fixed whatever the load (per queue about 25 KiB, for at most
 * `maxQueues` queues; past that a queue counts in the totals only). The bucket
 * in progress is never drawn as a full one: series end at the last finished
 * bucket, and the current rates divide by the time actually covered, which the
 * snapshot states (`coveredFromMs`: the UI says "since …" rather than "last hour"
 * while the server is younger than the window; buckets before its start are null,
 * no data). This starts empty at every start of the server; the history that
 * survives a restart is src/engine/history/ (GET /api/v1/history).
 */
import type { Clock } from '../engine/clock.ts';
import type { JobEvent } from '../engine/types.ts';
import {
  type QueueRates,
  type RateKind,
  type RateSnapshot,
  type RateWindow,
  rateKinds,
  rateWindows,
} from './api-types.ts';

export { type RateKind, type RateSnapshot, type RateWindow, rateKinds, rateWindows };

const zeroKinds = (): Record<RateKind, number> =>
  Object.fromEntries(rateKinds.map((k) => [k, 0])) as Record<RateKind, number>;

const kindOf: Partial<Record<JobEvent['kind'], RateKind>> = {
  enqueued: 'enqueued',
  reserved: 'reserved',
  acked: 'acked',
  nacked: 'nacked',
  dead_lettered: 'dead',
  expired: 'expired',
};

/** One ring of `size` buckets of `bucketMs`. */
class Ring {
  private readonly slotBucket: Float64Array;
  private readonly counts: Record<RateKind, Float64Array>;
  private readonly waitSum: Float64Array;
  private readonly waitMax: Float64Array;

  constructor(
    readonly bucketMs: number,
    readonly size: number,
  ) {
    this.slotBucket = new Float64Array(size).fill(-1);
    this.counts = Object.fromEntries(rateKinds.map((k) => [k, new Float64Array(size)])) as Record<
      RateKind,
      Float64Array
    >;
    this.waitSum = new Float64Array(size);
    this.waitMax = new Float64Array(size);
  }

  private slot(bucket: number, reset: boolean): number | null {
    const slot = ((bucket % this.size) + this.size) % this.size;
    if (this.slotBucket[slot] === bucket) return slot;
    if (!reset) return null;
    this.slotBucket[slot] = bucket;
    for (const k of rateKinds) this.counts[k][slot] = 0;
    this.waitSum[slot] = 0;
    this.waitMax[slot] = 0;
    return slot;
  }

  add(nowMs: number, kind: RateKind, count: number, totalWaitMs: number, maxWaitMs: number): void {
    const slot = this.slot(Math.floor(nowMs / this.bucketMs), true)!;
    this.counts[kind][slot] = (this.counts[kind][slot] ?? 0) + count;
    this.waitSum[slot] = (this.waitSum[slot] ?? 0) + totalWaitMs;
    this.waitMax[slot] = Math.max(this.waitMax[slot] ?? 0, maxWaitMs);
  }

  /**
   * Counts of buckets `first`..`last` (absolute bucket numbers), one array per kind; null
   * for the buckets that ended by `dataFromMs` (before the server started: no data).
   */
  series(first: number, last: number, dataFromMs: number): Record<RateKind, (number | null)[]> {
    const out = Object.fromEntries(rateKinds.map((k) => [k, [] as (number | null)[]])) as Record<
      RateKind,
      (number | null)[]
    >;
    for (let bucket = first; bucket <= last; bucket++) {
      const slot = (bucket + 1) * this.bucketMs <= dataFromMs ? undefined : this.slot(bucket, false);
      for (const k of rateKinds)
        out[k].push(slot === undefined ? null : slot === null ? 0 : (this.counts[k][slot] ?? 0));
    }
    return out;
  }

  /** Sums over buckets `first`..`last`. */
  sum(first: number, last: number): { counts: Record<RateKind, number>; waitSum: number; waitMax: number } {
    const counts = zeroKinds();
    let waitSum = 0;
    let waitMax = 0;
    for (let bucket = Math.max(first, last - this.size + 1); bucket <= last; bucket++) {
      const slot = this.slot(bucket, false);
      if (slot === null) continue;
      for (const k of rateKinds) counts[k] += this.counts[k][slot] ?? 0;
      waitSum += this.waitSum[slot] ?? 0;
      waitMax = Math.max(waitMax, this.waitMax[slot] ?? 0);
    }
    return { counts, waitSum, waitMax };
  }
}

interface Scope {
  fine: Ring;
  coarse: Ring;
}

const fineBucketMs = 10_000;
const coarseBucketMs = 5 * 60_000;

export class RateHistory {
  private readonly startedAtMs: number;
  private readonly all: Scope;
  private readonly byQueue = new Map<string, Scope>();
  private readonly totals = zeroKinds();

  constructor(
    private readonly clock: Pick<Clock, 'nowMs'>,
    private readonly options: { maxQueues: number } = { maxQueues: 200 },
  ) {
    this.startedAtMs = clock.nowMs();
    this.all = RateHistory.scope();
  }

  private static scope(): Scope {
    return {
      fine: new Ring(fineBucketMs, rateWindows['1h'] / fineBucketMs),
      coarse: new Ring(coarseBucketMs, rateWindows['24h'] / coarseBucketMs),
    };
  }

  /** Counts an event; wire it to the engine's `onEvent`. Events the dashboard does not show are ignored. */
  record(event: JobEvent): void {
    const kind = kindOf[event.kind];
    if (kind === undefined || event.count <= 0) return;
    const nowMs = this.clock.nowMs();
    const waitTotal = event.kind === 'reserved' ? (event.totalWaitMs ?? 0) : 0;
    const waitMax = event.kind === 'reserved' ? (event.maxWaitMs ?? 0) : 0;
    let queue = this.byQueue.get(event.queue);
    if (queue === undefined && this.byQueue.size < this.options.maxQueues) {
      queue = RateHistory.scope();
      this.byQueue.set(event.queue, queue);
    }
    for (const scope of queue === undefined ? [this.all] : [this.all, queue]) {
      scope.fine.add(nowMs, kind, event.count, waitTotal, waitMax);
      scope.coarse.add(nowMs, kind, event.count, waitTotal, waitMax);
    }
    this.totals[kind] += event.count;
  }

  snapshot(window: RateWindow = '1h'): RateSnapshot {
    const nowMs = this.clock.nowMs();
    const windowMs = rateWindows[window];
    const ring = (scope: Scope) => (window === '24h' ? scope.coarse : scope.fine);
    const { bucketMs } = ring(this.all);
    const current = Math.floor(nowMs / bucketMs);
    const buckets = windowMs / bucketMs;
    const first = current - buckets;
    // Rates cover from the window's first bucket (or the server's start) up to now, the bucket in progress included.
    const coveredFromMs = Math.max((first + 1) * bucketMs, this.startedAtMs);
    const coveredMs = Math.max(1, nowMs - coveredFromMs);
    const rates = (scope: Scope): QueueRates => {
      const { counts, waitSum, waitMax } = ring(scope).sum(first + 1, current);
      const perSecond = zeroKinds();
      for (const k of rateKinds) perSecond[k] = (counts[k] * 1000) / coveredMs;
      const leased = counts.reserved;
      return {
        perSecond,
        avgWaitMs: leased === 0 ? null : waitSum / leased,
        maxWaitMs: leased === 0 ? null : waitMax,
      };
    };
    const queues: Record<string, QueueRates> = {};
    for (const [name, scope] of this.byQueue) queues[name] = rates(scope);
    return {
      window,
      windowMs,
      bucketMs,
      startMs: first * bucketMs,
      series: ring(this.all).series(first, current - 1, this.startedAtMs),
      totals: { ...this.totals },
      coveredMs,
      coveredFromMs,
      current: rates(this.all),
      queues,
    };
  }
}
