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

/** The client's retry policy, as `retry` of the resolved connect options holds it. */
interface RetryPolicy {
  unavailable: boolean;
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/**
 * How long to wait before sending again something the server refused for now (`later`) after
 * `retries` repeats already, or undefined when it is not to be sent again: retries are off, the
 * tries (`maxAttempts`, the first included) are used up, or the wait would reach `deadlineAtMs`.
 */
export function laterRetryDelayMs(
  retry: RetryPolicy,
  retries: number,
  deadlineAtMs: number,
): number | undefined {
  if (!retry.unavailable || retries + 1 >= retry.maxAttempts) return undefined;
  const delayMs = backoffDelayMs(retries, retry.baseDelayMs, retry.maxDelayMs);
  return Date.now() + delayMs >= deadlineAtMs ? undefined : delayMs;
}
