/** Exponential backoff with jitter, shared by call retries and the Worker's reconnects. */

/** How long to wait before retry number `retry` (0 = the first retry), in ms. */
export function backoffDelayMs(retry: number, baseDelayMs: number, maxDelayMs: number, random = Math.random) {
  const ceilingMs = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(retry, 30));
  // "Equal jitter": at least half the step, so retries never bunch up at zero,
  // and spread over the other half so many clients do not retry in lockstep.
  return ceilingMs / 2 + random() * (ceilingMs / 2);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
