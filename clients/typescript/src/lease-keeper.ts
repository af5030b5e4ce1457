/**
 * Keeps leases alive: each running job is extended every `everyMs` (about a
 * third of the lease) until it is removed.
 *
 * One timer for all jobs, not one per job: every job has the same period, so
 * keeping them in insertion order keeps them in order of due time, and a job
 * that was just extended goes to the back. Adding and removing are O(1), which
 * matters when thousands of short jobs a second never need an extension.
 */
import type { WorkerClock, WorkerTimer } from './worker-clock.ts';

interface Kept {
  dueAtMs: number;
}

export class LeaseKeeper<T extends Kept> {
  private readonly kept = new Set<T>();
  private timer: WorkerTimer | undefined;
  private timerAtMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly clock: WorkerClock,
    private readonly everyMs: number,
    private readonly onDue: (item: T) => void,
  ) {}

  add(item: T): void {
    item.dueAtMs = this.clock.nowMs() + this.everyMs;
    this.kept.add(item);
    if (this.timer === undefined) this.arm();
  }

  remove(item: T): void {
    // The timer stays: when it fires for nothing it simply re-arms for the next job.
    this.kept.delete(item);
  }

  stop(): void {
    this.kept.clear();
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAtMs = Number.POSITIVE_INFINITY;
  }

  private arm(): void {
    const first = this.kept.values().next();
    if (first.done) return;
    const atMs = first.value.dueAtMs;
    if (this.timer !== undefined && this.timerAtMs <= atMs) return;
    this.timer?.cancel();
    this.timerAtMs = atMs;
    this.timer = this.clock.setTimer(atMs - this.clock.nowMs(), () => this.fire());
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAtMs = Number.POSITIVE_INFINITY;
    const nowMs = this.clock.nowMs();
    const due: T[] = [];
    for (const item of this.kept) {
      if (item.dueAtMs > nowMs) break;
      due.push(item);
    }
    for (const item of due) {
      // Re-inserting moves the item to the back, keeping the set in due order.
      this.kept.delete(item);
      item.dueAtMs = nowMs + this.everyMs;
      this.kept.add(item);
    }
    for (const item of due) this.onDue(item);
    this.arm();
  }
}
