/**
 * Leases: reserve (and long-polls), the settlements fenced by the attempt (ack
 * alone or in batches, nack, extend, progress), results, expiry at lease time,
 * the end of a cancelled job's lease, and the waiters.
 */
export { AckBatches } from './ack-batch.ts';
export { backoffDelayMs } from './backoff.ts';
export { cancelledMessage, finishCancelled } from './cancelled-lease.ts';
export { Expiry } from './expiry.ts';
export { checkProgressReport, ProgressReports } from './progress.ts';
export { Reserver } from './reserve.ts';
export { checkAckResult, defaultResultContentType, resultContentTypeOf } from './results.ts';
export { Settler, settleProblem, truncate } from './settle.ts';
export { type Waiter, WaiterRegistry, type WaitOutcome } from './waiters.ts';
