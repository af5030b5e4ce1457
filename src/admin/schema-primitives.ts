/** The small JSON Schemas the API's body schemas are built from. */
import { int, type JsonSchema } from '../api-schema/primitives.ts';
import { deadReasons, jobStates } from '../engine/types.ts';

// The blocks the HTTP API uses too are defined once, in src/api-schema/.
export { int, msOrNull, str, strOrNull, uuid } from '../api-schema/primitives.ts';
export const deadReason: JsonSchema = {
  type: ['string', 'null'],
  enum: [...deadReasons, null],
};

export const stateCounts: JsonSchema = {
  type: 'object',
  properties: Object.fromEntries(jobStates.map((s) => [s, int])),
  required: [...jobStates],
};
