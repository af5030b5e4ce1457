/**
 * Batches (issue 33): jobs with completion jobs, counted as each member ends, ended once
 * in the unit that ends the last member of a sealed batch.
 */
export { type BatchCaller, batchCaller, ownerToList } from './batch-access.ts';
export { Batches } from './batches.ts';
export { LeaseTokens } from './lease-tokens.ts';
