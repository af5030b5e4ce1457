/**
 * Checks across one queue's settings that no single field can make: lease and
 * backoff ordering, job type names against the name limit. The config file
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
  for (const type of given.allowedTypes ?? []) {
    if (type.length > limits.maxNameLength) {
      reader.problem(
        `${path}.allowed_types`,
        `"${type}" is longer than limits.max_name_length (${limits.maxNameLength} characters)`,
      );
    }
  }
}
