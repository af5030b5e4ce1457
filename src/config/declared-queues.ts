/**
 * The queues the file declares as [queues.NAME]: a valid name, settings over
 * [queue_defaults], and which keys each table wrote (a reload and the
 * run-time settings need to know what came from the file).
 */
import {
  type EngineLimits,
  namePattern,
  type QueueSettingKey,
  type QueueSettings,
} from '../engine/settings.ts';
import { describeRaw } from './fields.ts';
import { checkQueue } from './queue-checks.ts';
import { asTable, type ConfigReader, tomlKey } from './reader.ts';
import { nestQueueSettings, type QueueSettingsFlat, queueSpec } from './schema.ts';

export interface DeclaredQueues {
  readonly queues: Record<string, QueueSettings>;
  /** The keys each [queues.NAME] wrote. */
  readonly given: Record<string, QueueSettingKey[]>;
}

/** Reads [queues.NAME] tables, each over [queue_defaults], with the checks across a queue's settings. */
export function readQueues(
  reader: ConfigReader,
  value: unknown,
  defaults: QueueSettingsFlat,
  limits: EngineLimits,
): DeclaredQueues {
  // No prototype: a queue named "constructor" must not find Object's.
  const queues: Record<string, QueueSettings> = Object.create(null);
  const givenKeys: Record<string, QueueSettingKey[]> = Object.create(null);
  const declared = { queues, given: givenKeys };
  if (value === undefined) return declared;
  const table = asTable(value);
  if (table === undefined) {
    reader.problem('queues', 'must be a table of queues: write each as [queues.NAME]');
    return declared;
  }
  for (const [name, settings] of Object.entries(table)) {
    const path = `queues.${tomlKey(name)}`;
    if (!namePattern.test(name)) {
      reader.problem(path, `"${name}" is not a valid queue name; use letters, digits and . _ : - only`);
      continue;
    }
    if (name.length > limits.maxNameLength) {
      reader.problem(
        path,
        `the name is longer than limits.max_name_length (${limits.maxNameLength} characters)`,
      );
      continue;
    }
    if (asTable(settings) === undefined) {
      reader.problem(
        path,
        `is ${describeRaw(settings)}, but must be a table: write its settings under [${path}]`,
      );
      continue;
    }
    // [queues.NAME.push] is read by push-targets.ts.
    const given = reader.section(path, queueSpec, settings, {
      schemaPath: 'queues.<name>',
      nested: ['push'],
    });
    const flat = { ...defaults, ...given };
    checkQueue(reader, path, flat, given, limits);
    queues[name] = asWritten(flat);
    givenKeys[name] = Object.keys(given) as QueueSettingKey[];
  }
  return declared;
}

/**
 * A queue's settings nested as the file wrote them: a rate limit's burst of 0
 * stays 0 instead of taking the rate's leases now (nestQueueSettings). The
 * engine derives it when it lays overrides over the file, so a burst the file
 * does not set follows a rate changed at run time, and the admin UI can tell
 * a derived burst from one that was set.
 */
export function asWritten(flat: QueueSettingsFlat): QueueSettings {
  const nested = nestQueueSettings(flat);
  return {
    ...nested,
    rateLimit: { ...nested.rateLimit, burst: flat.rateLimitBurst },
    groupRateLimit: { ...nested.groupRateLimit, burst: flat.groupRateLimitBurst },
  };
}
