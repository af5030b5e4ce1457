/**
 * Checks across one queue's settings that no single field can make: lease and
 * backoff ordering, a rate limit's burst without a rate, job type names against the name limit. The config file
 * runs them on [queue_defaults] and each [queues.NAME]; a run-time change of a
 * queue's settings runs the same checks (through queue-settings-input.ts), so
 * both say the same thing.
 */
import type { EngineLimits } from '../engine/settings.ts';
import type { ConfigReader } from './reader.ts';
import type { QueueSettingsFlat } from './schema.ts';
import { formatDurationMs } from './units.ts';

/** A duration for a message: exact milliseconds and the readable form. */
const ms = (value: number) => `${value} (${formatDurationMs(value)})`;

/**
 * Checks of one queue's merged settings that no single field can make. Only
 * pairs the section itself sets are checked: a bad pair inherited from
 * [queue_defaults] is reported there, once, not again for every queue.
 */
export function checkQueue(
  reader: ConfigReader,
  path: string,
  flat: QueueSettingsFlat,
  given: Partial<QueueSettingsFlat>,
  limits: EngineLimits,
): void {
  const valid = (key: string) => !reader.failed.has(`${path}.${key}`);
  const leaseGiven = given.defaultLeaseMs !== undefined || given.maxLeaseMs !== undefined;
  if (
    leaseGiven &&
    flat.defaultLeaseMs > flat.maxLeaseMs &&
    valid('default_lease_ms') &&
    valid('max_lease_ms')
  ) {
    reader.problem(
      `${path}.default_lease_ms`,
      `${ms(flat.defaultLeaseMs)} is longer than max_lease_ms (${ms(flat.maxLeaseMs)}); lower it or raise max_lease_ms`,
    );
  }
  const backoffGiven = given.backoffBaseMs !== undefined || given.backoffCapMs !== undefined;
  if (
    backoffGiven &&
    flat.backoffCapMs < flat.backoffBaseMs &&
    valid('backoff_cap_ms') &&
    valid('backoff_base_ms')
  ) {
    reader.problem(
      `${path}.backoff_cap_ms`,
      `${ms(flat.backoffCapMs)} is below backoff_base_ms (${ms(flat.backoffBaseMs)}); the cap must be at least the first delay`,
    );
  }
  for (const prefix of ['rate_limit', 'group_rate_limit'] as const) {
    const leases = prefix === 'rate_limit' ? flat.rateLimitLeases : flat.groupRateLimitLeases;
    const burst = prefix === 'rate_limit' ? given.rateLimitBurst : given.groupRateLimitBurst;
    if ((burst ?? 0) > 0 && leases === 0 && valid(`${prefix}_leases`) && valid(`${prefix}_burst`)) {
      reader.problem(
        `${path}.${prefix}_burst`,
        `is ${burst} but ${prefix}_leases is 0 (no rate limit); set ${prefix}_leases to the leases allowed per ${prefix}_period_ms, or remove ${prefix}_burst`,
      );
    }
  }
  for (const type of given.allowedTypes ?? []) {
    if (type.length > limits.maxNameLength) {
      reader.problem(
        `${path}.allowed_types`,
        `"${type}" is longer than limits.max_name_length (${limits.maxNameLength} characters)`,
      );
    }
  }
}
