/** The JobFilter fields the older tests do not set (every queue, type prefix, error text, metadata, age…), all unset. */
import type { JobFilter } from '../../clients/typescript/src/gen/sepp/v1/admin.js';

export const unsetFilterFields: Omit<JobFilter, 'queue' | 'type' | 'states' | 'group'> = {
  allQueues: false,
  typePrefix: '',
  errorText: '',
  metadataKey: '',
  metadataValue: '',
  enqueuedFromMs: 0,
  enqueuedBeforeMs: 0,
  deadReason: 0,
  retriesOnly: false,
};
