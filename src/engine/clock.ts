/**
 * Time enters the engine only through a Clock, so tests can drive it. The
 * engine and the store never call Date.now() or set timers of their own.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  nowMs(): number;
  /** Calls `fn` once, `delayMs` from now. */
  setTimer(delayMs: number, fn: () => void): TimerHandle;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  setTimer(delayMs, fn) {
    const timer = setTimeout(fn, Math.max(0, delayMs));
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

/**
 * A clock that moves only when told to. `advance` fires every timer that
 * falls due, in order of due time, with `nowMs` set to that due time.
 */
export class FakeClock implements Clock {
  private currentMs: number;
  private nextId = 0;
  private readonly timers = new Map<number, { dueMs: number; fn: () => void }>();

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.currentMs = startMs;
  }

  nowMs(): number {
    return this.currentMs;
  }

  setTimer(delayMs: number, fn: () => void): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { dueMs: this.currentMs + Math.max(0, delayMs), fn });
    return { cancel: () => this.timers.delete(id) };
  }

  /** Number of timers waiting to fire. */
  get pendingTimers(): number {
    return this.timers.size;
  }

  advance(ms: number): void {
    const targetMs = this.currentMs + ms;
    for (;;) {
      let nextId = -1;
      let nextDueMs = Number.POSITIVE_INFINITY;
      for (const [id, t] of this.timers) {
        if (t.dueMs <= targetMs && (t.dueMs < nextDueMs || (t.dueMs === nextDueMs && id < nextId))) {
          nextId = id;
          nextDueMs = t.dueMs;
        }
      }
      if (nextId < 0) break;
      const timer = this.timers.get(nextId)!;
      this.timers.delete(nextId);
      this.currentMs = Math.max(this.currentMs, timer.dueMs);
      timer.fn();
    }
    this.currentMs = targetMs;
  }
}
