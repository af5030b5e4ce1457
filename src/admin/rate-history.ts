/**
 * Job rates over the last hour for the dashboard's charts: a ring of fixed
 * time buckets (10 s each by default), fed with the engine's JobEvents after
 * each commit. Memory is fixed (buckets × kinds numbers), whatever the load;
 * the history starts empty at every start of the server.
 */
import type { Clock } from '../engine/clock.ts';
import type { JobEvent } from '../engine/types.ts';

export const rateKinds = ['enqueued', 'reserved', 'acked', 'nacked', 'dead', 'expired'] as const;
export type RateKind = (typeof rateKinds)[number];

export interface RateSnapshot {
  bucketMs: number;
  /** Start of the first (oldest) bucket, ms since epoch; the last bucket is the current one. */
  startMs: number;
  /** Jobs per bucket, oldest first, one array per kind. */
  series: Record<RateKind, number[]>;
  /** Jobs since the server started, per kind. */
  totals: Record<RateKind, number>;
}

const kindOf: Partial<Record<JobEvent['kind'], RateKind>> = {
  enqueued: 'enqueued',
  reserved: 'reserved',
  acked: 'acked',
  nacked: 'nacked',
  dead_lettered: 'dead',
  expired: 'expired',
};

export class RateHistory {
  readonly bucketMs: number;
  private readonly buckets: number;
  /** Which absolute bucket (time / bucketMs) each ring slot currently holds. */
  private readonly slotBucket: Float64Array;
  private readonly counts: Record<RateKind, Float64Array>;
  private readonly totals: Record<RateKind, number>;

  constructor(
    private readonly clock: Pick<Clock, 'nowMs'>,
    options: { bucketMs?: number; windowMs?: number } = {},
  ) {
    this.bucketMs = options.bucketMs ?? 10_000;
    const windowMs = options.windowMs ?? 60 * 60_000;
    if (!(this.bucketMs > 0) || windowMs < this.bucketMs)
      throw new Error('rate history: bad bucket or window');
    this.buckets = Math.ceil(windowMs / this.bucketMs);
    this.slotBucket = new Float64Array(this.buckets).fill(-1);
    this.counts = Object.fromEntries(rateKinds.map((k) => [k, new Float64Array(this.buckets)])) as Record<
      RateKind,
      Float64Array
    >;
    this.totals = Object.fromEntries(rateKinds.map((k) => [k, 0])) as Record<RateKind, number>;
  }

  /** Counts an event; wire it to the engine's `onEvent`. Events the charts do not show are ignored. */
  record(event: JobEvent): void {
    const kind = kindOf[event.kind];
    if (kind === undefined || event.count <= 0) return;
    const bucket = Math.floor(this.clock.nowMs() / this.bucketMs);
    const slot = bucket % this.buckets;
    if (this.slotBucket[slot] !== bucket) {
      this.slotBucket[slot] = bucket;
      for (const k of rateKinds) this.counts[k][slot] = 0;
    }
    this.counts[kind][slot] = (this.counts[kind][slot] ?? 0) + event.count;
    this.totals[kind] += event.count;
  }

  snapshot(): RateSnapshot {
    const current = Math.floor(this.clock.nowMs() / this.bucketMs);
    const first = current - this.buckets + 1;
    const series = Object.fromEntries(
      rateKinds.map((k) => [k, new Array<number>(this.buckets).fill(0)]),
    ) as Record<RateKind, number[]>;
    for (let i = 0; i < this.buckets; i++) {
      const bucket = first + i;
      const slot = ((bucket % this.buckets) + this.buckets) % this.buckets;
      if (this.slotBucket[slot] !== bucket) continue;
      for (const k of rateKinds) series[k][i] = this.counts[k][slot] ?? 0;
    }
    return { bucketMs: this.bucketMs, startMs: first * this.bucketMs, series, totals: { ...this.totals } };
  }
}
