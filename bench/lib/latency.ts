/**
 * Latency samples of one kind of operation, kept exactly (one float per operation: 200,000
 * jobs are 1.6 MB) so the percentiles are true order statistics, not bucket estimates.
 */
export class LatencyRecorder {
  private samplesMs = new Float64Array(1024);
  private count = 0;

  record(ms: number): void {
    if (this.count === this.samplesMs.length) {
      const bigger = new Float64Array(this.samplesMs.length * 2);
      bigger.set(this.samplesMs);
      this.samplesMs = bigger;
    }
    this.samplesMs[this.count++] = ms;
  }

  summary(): LatencySummary | undefined {
    if (this.count === 0) return undefined;
    const sorted = this.samplesMs.slice(0, this.count).sort();
    // Nearest-rank percentile: the smallest sample with at least p of the samples at or below it.
    const at = (p: number) => sorted[Math.min(this.count - 1, Math.ceil(p * this.count) - 1)] ?? 0;
    let sum = 0;
    for (const v of sorted) sum += v;
    return {
      count: this.count,
      meanMs: sum / this.count,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      p999Ms: at(0.999),
      maxMs: sorted[this.count - 1] ?? 0,
    };
  }
}

export interface LatencySummary {
  readonly count: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

/** Milliseconds since an arbitrary origin, sub-microsecond resolution. */
export function nowMs(): number {
  return performance.now();
}
