/** The small JSON Schemas the API's body schemas are built from. */
import { deadReasons, jobStates } from '../engine/types.ts';
import type { JsonSchema } from './route-spec.ts';

export const int: JsonSchema = { type: 'integer' };
export const str: JsonSchema = { type: 'string' };
export const msOrNull: JsonSchema = { type: ['integer', 'null'], description: 'ms since the Unix epoch' };
export const strOrNull: JsonSchema = { type: ['string', 'null'] };
export const deadReason: JsonSchema = {
  type: ['string', 'null'],
  enum: [...deadReasons, null],
};

export const stateCounts: JsonSchema = {
  type: 'object',
  properties: Object.fromEntries(jobStates.map((s) => [s, int])),
  required: [...jobStates],
};
