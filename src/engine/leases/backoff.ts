import type { BackoffSettings } from '../settings.ts';

/**
 * Delay before the next attempt after `failedAttempts` failures in the current
 * budget: base × factor^(failures − 1), capped, then spread by ±jitter so that
 * jobs that failed together do not all retry in the same millisecond.
 */
export function backoffDelayMs(
  settings: BackoffSettings,
  failedAttempts: number,
  random: () => number,
): number {
  const exponent = Math.max(0, failedAttempts - 1);
  const raw = Math.min(settings.capMs, settings.baseMs * settings.factor ** exponent);
  const spread = raw * settings.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(Math.min(settings.capMs, raw + spread)));
}
