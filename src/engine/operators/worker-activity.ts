/**
 * What each worker id did lately, for the Workers page: attempts completed and
 * failed over the last 15 minutes, in one-minute buckets, counted after the commit
 * that settled them (the job history's hook, context.ts `attemptsEnded`). In memory only
 * (a restart starts from zero; the job history keeps the totals by queue and type).
 *
 * Bounded: at most `maxWorkers` ids (10,000), 15 × 2 counters each; past it the id
 * whose latest minute of activity is oldest is forgotten.
 */
import type { Clock } from '../clock.ts';

const bucketMs = 60_000;
const buckets = 15;
export const workerActivityWindowMs = bucketMs * buckets;

interface Counts {
  /** The minute (absolute bucket number) each slot holds. */
  minute: Float64Array;
  completed: Uint32Array;
  failed: Uint32Array;
}

export class WorkerActivity {
  private readonly byWorker = new Map<string, Counts>();

  constructor(
    private readonly clock: Pick<Clock, 'nowMs'>,
    private readonly maxWorkers = 10_000,
  ) {}

  record(workerId: string, outcome: 'completed' | 'failed'): void {
    const minute = Math.floor(this.clock.nowMs() / bucketMs);
    let counts = this.byWorker.get(workerId);
    if (counts === undefined) {
      if (this.byWorker.size >= this.maxWorkers) {
        const oldest = this.byWorker.keys().next().value;
        if (oldest !== undefined) this.byWorker.delete(oldest);
      }
      counts = {
        minute: new Float64Array(buckets).fill(-1),
        completed: new Uint32Array(buckets),
        failed: new Uint32Array(buckets),
      };
      this.byWorker.set(workerId, counts);
    } else if (counts.minute[minute % buckets] !== minute) {
      // Most recently active last (moved once a minute, not per ack): the first is the one to forget.
      this.byWorker.delete(workerId);
      this.byWorker.set(workerId, counts);
    }
    const slot = minute % buckets;
    if (counts.minute[slot] !== minute) {
      counts.minute[slot] = minute;
      counts.completed[slot] = 0;
      counts.failed[slot] = 0;
    }
    counts[outcome][slot] = (counts[outcome][slot] ?? 0) + 1;
  }

  /** The worker id's counts over the last 15 minutes (the minute in progress included). */
  recent(workerId: string): { completedRecent: number; failedRecent: number; recentWindowMs: number } {
    const counts = this.byWorker.get(workerId);
    let completed = 0;
    let failed = 0;
    if (counts !== undefined) {
      const minute = Math.floor(this.clock.nowMs() / bucketMs);
      for (let slot = 0; slot < buckets; slot++) {
        if (minute - (counts.minute[slot] ?? -1) >= buckets) continue;
        completed += counts.completed[slot] ?? 0;
        failed += counts.failed[slot] ?? 0;
      }
    }
    return { completedRecent: completed, failedRecent: failed, recentWindowMs: workerActivityWindowMs };
  }
}
