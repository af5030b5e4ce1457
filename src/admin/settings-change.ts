/**
 * The body of POST /api/v1/queues/{queue}/settings: settings to set (name →
 * value, written as in the config file) and settings to reset, read with the
 * config file's rules so every message is the file's.
 */

import type { ConfigProblem } from '../config/index.ts';
import { formatProblems, parseQueueSettingKeys, parseQueueSettingValues } from '../config/index.ts';
import type { QueueSettingsChange } from '../engine/queues/index.ts';
import { bad, type JsonObject } from './request-input.ts';
import type { JsonSchema } from './route-spec.ts';

/** More names than a queue has settings is a mistake, not a request. */
const maxNames = 100;

export const settingsChangeBody: JsonSchema = {
  type: 'object',
  properties: {
    set: {
      type: 'object',
      description: 'setting name → value, e.g. {"max_attempts": "10", "backoff_base_ms": "2s"}',
      additionalProperties: { type: ['string', 'number', 'array'] },
    },
    reset: {
      description: 'settings to give back to the config file, or "all"',
      oneOf: [
        { type: 'array', items: { type: 'string' } },
        { type: 'string', enum: ['all'] },
      ],
    },
  },
};

export function readSettingsChange(
  queue: string,
  body: JsonObject,
): QueueSettingsChange & { typed: Record<string, unknown> } {
  const { set, reset } = body;
  if (set !== undefined && (typeof set !== 'object' || set === null || Array.isArray(set))) {
    throw bad('set must be an object of setting name → value, e.g. {"max_attempts": "10"}');
  }
  if (reset !== undefined && reset !== 'all' && !isStringList(reset)) {
    throw bad('reset must be a list of setting names, e.g. ["max_attempts"], or "all"');
  }
  const setEntries = set === undefined ? {} : (set as Record<string, unknown>);
  const resetNames = reset === undefined || reset === 'all' ? [] : reset;
  if (Object.keys(setEntries).length > maxNames || resetNames.length > maxNames) {
    throw bad(`name at most ${maxNames} settings`);
  }
  if (Object.keys(setEntries).length === 0 && reset === undefined) {
    throw bad('name settings to change (set) or to give back to the config file (reset)');
  }
  const problems: ConfigProblem[] = [];
  const values = parseQueueSettingValues(queue, setEntries);
  if (!values.ok) problems.push(...values.problems);
  const keys = parseQueueSettingKeys(queue, resetNames);
  if (!keys.ok) problems.push(...keys.problems);
  if (!values.ok || !keys.ok) throw bad(formatProblems(problems));
  return {
    ...(Object.keys(setEntries).length === 0 ? {} : { set: values.value }),
    ...(reset === undefined ? {} : { reset: reset === 'all' ? 'all' : keys.value }),
    typed: { ...(set === undefined ? {} : { set }), ...(reset === undefined ? {} : { reset }) },
  };
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
