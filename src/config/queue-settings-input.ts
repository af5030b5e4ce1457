/**
 * Queue settings given by an operator while the server runs (SetQueueSettings,
 * `sepp queue set QUEUE KEY=VALUE…`, the admin UI's edit form): read with the
 * config file's own field definitions (queueSpec), so every setting of
 * [queues.NAME] can be changed, a setting added there can be changed too, and
 * every message is the one the file would get, under the same key
 * (`queues.emails.max_attempts: 0 is below the minimum 1; …`).
 *
 * A value is written as in sepp.toml or as an environment variable: `10`,
 * `"30s"` or `30s`, `4MiB`, `0.5`, `["send", "resend"]`.
 */

import { parse } from 'smol-toml';
import { resolveQueueView } from '../engine/queue-registry.ts';
import type { QueueSettingKey, QueueSettingsFlat } from '../engine/settings.ts';
import { summarizeList } from './bounded-message.ts';
import type { ConfigProblem } from './config-error.ts';
import { checkQueue } from './queue-checks.ts';
import { ConfigReader, tomlKey } from './reader.ts';
import type { AnySectionSpec } from './schema.ts';
import { grpcEnvelopeAllowanceBytes, queueSpec, snakeCase } from './schema.ts';
import { closestKey } from './suggest.ts';
import type { SeppConfig } from './types.ts';
import { formatDurationMs, formatSizeBytes } from './units.ts';

const spec = queueSpec as AnySectionSpec;
/** TOML name → camelCase key, for every queue setting. */
const keyByName = new Map(Object.keys(spec).map((key) => [snakeCase(key), key as QueueSettingKey]));
/** Every queue setting's TOML name, in the order of [queue_defaults]. */
export const queueSettingNames: readonly string[] = Object.freeze([...keyByName.keys()]);

export type InputResult<T> = { ok: true; value: T } | { ok: false; problems: ConfigProblem[] };

const queuePath = (queue: string) => `queues.${tomlKey(queue)}`;

/** A name as a message shows it: at most 100 characters. */
const shownName = (name: string) => (name.length > 100 ? `${name.slice(0, 100)}…` : name);

/** The key a name stands for (the TOML name, or its camelCase form), or undefined. */
function lookUp(name: string): QueueSettingKey | undefined {
  return keyByName.get(snakeCase(name));
}

/**
 * The problem of the unknown names: one, named with the likeliest setting;
 * several, listed once (the first few and how many more) with the settings there are.
 */
function unknownNames(queue: string, names: readonly string[]): ConfigProblem[] {
  const [first] = names;
  if (first === undefined) return [];
  const all = `the settings of a queue are ${queueSettingNames.join(', ')}`;
  if (names.length === 1) {
    const near = closestKey(snakeCase(first), queueSettingNames);
    const message = near === undefined ? `unknown setting; ${all}` : `unknown setting; did you mean ${near}?`;
    return [{ key: `${queuePath(queue)}.${shownName(first)}`, message }];
  }
  return [
    {
      key: queuePath(queue),
      message: `${names.length} unknown settings: ${summarizeList(names.map(shownName))}; ${all}`,
    },
  ];
}

/**
 * A value typed as text, read as a TOML value when it is one (`10`, `"30s"`,
 * `["a", "b"]`), else as the text itself (`30s`), which the fields read the way
 * they read environment variables.
 */
function fromText(text: string): unknown {
  if (/[\r\n]/.test(text)) return text;
  try {
    const document = parse(`v = ${text}`);
    const keys = Object.keys(document);
    if (keys.length === 1 && keys[0] === 'v') return document.v;
  } catch {
    // Not a TOML value: the text itself.
  }
  return text;
}

/**
 * Reads settings to set: name → value, each value text (CLI, gRPC) or a JSON
 * value (admin API). Every problem is reported, not only the first.
 */
export function parseQueueSettingValues(
  queue: string,
  input: Readonly<Record<string, unknown>>,
): InputResult<Partial<QueueSettingsFlat>> {
  const problems: ConfigProblem[] = [];
  const unknown: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, given] of Object.entries(input)) {
    const key = lookUp(name);
    if (key === undefined) {
      unknown.push(name);
      continue;
    }
    const raw = typeof given === 'string' ? fromText(given) : given;
    const parsed = spec[key]?.field.parse(raw, { fromText: true, baseDir: '/' });
    if (parsed === undefined) throw new Error(`bug: no field for ${key}`);
    if (parsed.ok) values[key] = parsed.value;
    else problems.push({ key: `${queuePath(queue)}.${snakeCase(key)}`, message: parsed.message });
  }
  problems.unshift(...unknownNames(queue, unknown));
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: values };
}

/** Reads the names of settings to reset. */
export function parseQueueSettingKeys(
  queue: string,
  names: readonly string[],
): InputResult<QueueSettingKey[]> {
  const unknown: string[] = [];
  const keys: QueueSettingKey[] = [];
  for (const name of names) {
    const key = lookUp(name);
    if (key === undefined) unknown.push(name);
    else keys.push(key);
  }
  const problems = unknownNames(queue, unknown);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: keys };
}

/**
 * The checks across a queue's settings for a run-time change, with the
 * running server's fixed facts: the config file's checks (checkQueue), and
 * that a job with the largest payload still fits the gRPC message size the
 * server was started with (it changes only with a restart).
 */
export function queueSettingsChecker(running: SeppConfig) {
  const { limits } = running.engine;
  return (
    queue: string,
    effective: QueueSettingsFlat,
    changed: readonly QueueSettingKey[],
  ): ConfigProblem[] => {
    const reader = new ConfigReader(new Map(), '/', '/');
    const path = queuePath(queue);
    const given = Object.fromEntries(changed.map((key) => [key, effective[key]]));
    checkQueue(reader, path, effective, given, limits);
    const neededBytes = effective.maxPayloadBytes + limits.maxMetadataBytes + grpcEnvelopeAllowanceBytes;
    const maxMessageBytes = running.grpc.maxMessageBytes;
    if (changed.includes('maxPayloadBytes') && neededBytes > maxMessageBytes) {
      const most = maxMessageBytes - limits.maxMetadataBytes - grpcEnvelopeAllowanceBytes;
      reader.problem(
        `${path}.max_payload_bytes`,
        `${effective.maxPayloadBytes} does not fit the server's grpc.max_message_bytes (${maxMessageBytes}) ` +
          `with limits.max_metadata_bytes (${limits.maxMetadataBytes}) and ${formatSizeBytes(grpcEnvelopeAllowanceBytes)} ` +
          `of framing; set at most ${most}, or raise grpc.max_message_bytes in the file and restart`,
      );
    }
    return reader.problems;
  };
}

/**
 * What a config file's queue settings would break in combination with the
 * run-time overrides in force (a reload refuses such a file; at start it is a
 * warning): the same checks, against the running server's limits, with every
 * override counted as changed, and a hint that the override is involved.
 */
export function overrideConflicts(
  file: SeppConfig,
  running: SeppConfig,
  overrides: ReadonlyMap<string, Readonly<Partial<QueueSettingsFlat>>>,
): ConfigProblem[] {
  const check = queueSettingsChecker(running);
  const problems: ConfigProblem[] = [];
  for (const [queue, queueOverrides] of overrides) {
    const view = resolveQueueView(file.engine, queueOverrides, queue);
    const effective = { ...view.fileSettings, ...queueOverrides };
    const names = Object.keys(queueOverrides).map(snakeCase).join(' ');
    for (const problem of check(queue, effective, Object.keys(queueOverrides) as QueueSettingKey[])) {
      problems.push({
        key: problem.key,
        message: `${problem.message} (with the run-time overrides of ${queue}: change the file, or reset them with \`sepp queue reset ${queue} ${names}\`)`,
      });
    }
  }
  return problems;
}

/**
 * A queue setting's value as an operator would type it (`30s`, `1MiB`, `10`,
 * `["send"]`): what the edit form starts from and what tables show.
 */
export function queueSettingText(name: string, value: unknown): string {
  if (typeof value === 'number') {
    if (name.endsWith('_ms')) return formatDurationMs(value);
    if (name.endsWith('_bytes')) return formatSizeBytes(value);
    return String(value);
  }
  return JSON.stringify(value);
}
