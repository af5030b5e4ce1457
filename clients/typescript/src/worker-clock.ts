/**
 * Time for the Worker (lease extension, shutdown timeout, reconnect backoff),
 * injectable so tests can drive it with the same fake clock as the server.
 */

/** A cancellable timer. */
export interface WorkerTimer {
  /** Stops the timer; nothing happens if it already fired. */
  cancel(): void;
}

/** The clock a Worker reads and sets timers on. */
export interface WorkerClock {
  /** Milliseconds since the Unix epoch. */
  nowMs(): number;
  /** Calls `fn` once, `delayMs` from now. */
  setTimer(delayMs: number, fn: () => void): WorkerTimer;
}

export const systemWorkerClock: WorkerClock = {
  nowMs: () => Date.now(),
  setTimer(delayMs, fn) {
    const timer = setTimeout(fn, Math.max(0, delayMs));
    return { cancel: () => clearTimeout(timer) };
  },
};

/** Resolves after `delayMs` on `clock`. */
export function clockSleep(clock: WorkerClock, delayMs: number): { done: Promise<void>; cancel(): void } {
  let timer: WorkerTimer | undefined;
  let resolve!: () => void;
  const done = new Promise<void>((r) => {
    resolve = r;
    timer = clock.setTimer(delayMs, r);
  });
  return {
    done,
    cancel: () => {
      timer?.cancel();
      resolve();
    },
  };
}
