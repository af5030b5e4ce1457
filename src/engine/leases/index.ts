/**
 * Leases: reserve (and long-polls), the settlements fenced by the attempt (ack
 * alone or in batches, nack, extend, progress), results, expiry at lease time,
 * the end of a cancelled job's lease, undone leases (jobs whose answer never
 * reached a worker), and the waiters.
 */
export { AckBatches } from './ack-batch.ts';
export { jobOverheadBytes, leasedJobBytes } from './answer-size.ts';
export { finishCancelled } from './cancelled-lease.ts';
export { Expiry } from './expiry.ts';
export { ProgressReports } from './progress.ts';
export { RemoteWakeups } from './remote-wakeups.ts';
export { Reserver } from './reserve.ts';
export { checkAckResult } from './results.ts';
export { Settler } from './settle.ts';
export { finishTimedOut, pastTimeout, type TimeoutListener } from './timed-out-lease.ts';
export { WaiterRegistry } from './waiters.ts';
