/**
 * What a queue setting's value does where the number alone does not say it:
 * a 0 that means "no limit" or "not kept", an empty list that accepts any
 * type, a rate limit's burst that follows the rate when it is not set. Each
 * entry says what the engine does with the value (src/engine/settings.ts and
 * the places named beside it), so the admin UI can show it instead of a bare 0.
 */
import { type QueueSettingKey, type QueueSettingsFlat, queueSettingName } from '../engine/settings.ts';

export interface SettingMeaning {
  /** What the value does, e.g. `no limit`; null when the value says it itself. */
  readonly meaning: string | null;
  /** The setting (config-file name) this one takes its value from because it is not set itself. */
  readonly derivedFrom: string | null;
}

const plain: SettingMeaning = { meaning: null, derivedFrom: null };
const means = (meaning: string): SettingMeaning => ({ meaning, derivedFrom: null });

/** What each setting's 0 does. */
const zeroMeanings: Partial<Record<QueueSettingKey, string>> = {
  // backoff.ts: the delay is base × factor^n, capped; either at 0 makes every delay 0.
  backoffBaseMs: 'retries at once',
  backoffCapMs: 'retries at once',
  backoffJitter: 'no random spread',
  maxDepth: 'no limit',
  // enqueue.ts stores no idempotency key when the window is 0.
  dedupWindowMs: 'keys not remembered: no deduplication',
  // maintenance.ts deletes dead letters older than the retention at each sweep (every minute).
  deadRetentionMs: 'not kept: deleted at the next sweep',
  // settle.ts deletes the job in the ack's transaction.
  completedRetentionMs: 'not kept: deleted on ack',
  maxLeased: 'no limit',
  // reserve.ts leases without a timeout_at_ms: the attempt runs while its lease is extended.
  defaultTimeoutMs: 'no timeout',
  // flow-control/ungrouped-lease.ts is not used: the lease takes the highest priority first.
  priorityAgingMs: 'off: strict priority',
  rateLimitLeases: 'no rate limit',
  groupMaxLeased: 'no limit',
  groupRateLimitLeases: 'no rate limit',
};

/** Each rate limit's fields: a burst of 0 holds one period's worth of leases (settings.ts nestQueueSettings). */
const rateLimits = [
  { leases: 'rateLimitLeases', periodMs: 'rateLimitPeriodMs', burst: 'rateLimitBurst' },
  { leases: 'groupRateLimitLeases', periodMs: 'groupRateLimitPeriodMs', burst: 'groupRateLimitBurst' },
] as const satisfies readonly Record<string, QueueSettingKey>[];

/**
 * What `key` means in `configured`: the settings as the file and the run-time
 * overrides give them, before the engine derives anything (a burst still 0).
 */
export function queueSettingMeaning(key: QueueSettingKey, configured: QueueSettingsFlat): SettingMeaning {
  for (const rate of rateLimits) {
    if (key !== rate.periodMs && key !== rate.burst) continue;
    if (configured[rate.leases] === 0) return means('unused: no rate limit');
    if (key === rate.burst && configured[rate.burst] === 0) {
      return {
        meaning: `= ${queueSettingName(rate.leases)} (derived)`,
        derivedFrom: queueSettingName(rate.leases),
      };
    }
  }
  const value = configured[key];
  if (Array.isArray(value)) return value.length === 0 ? means('any type') : plain;
  const zero = zeroMeanings[key];
  return value === 0 && zero !== undefined ? means(zero) : plain;
}
