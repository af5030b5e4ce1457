/**
 * Jobs: the enqueue (validation, idempotency, max_depth, the insert), job ids,
 * rows as the engine's shapes, the read-only queries, and the refusal of
 * enqueues while the disk is full.
 */
export { DiskFull } from './disk-full.ts';
export { Enqueuer } from './enqueue.ts';
export { EnqueueSteps } from './enqueue-steps.ts';
export { isRejection, validateJob } from './enqueue-validation.ts';
export {
  checkErrorGroup,
  maxErrorClassChars,
  topErrors,
} from './error-groups.ts';
export { FlowEnqueuer } from './flow-enqueue.ts';
export { enqueuedBy, type JobCreator } from './job-creator.ts';
export { JobIdGenerator, normalizeJobId, type RandomBytes, systemRandomBytes } from './job-id.ts';
export { type DeadLetterSummaryQuery, JobQueries, summariesInOrder } from './job-queries.ts';
export {
  appendError,
  errorEntry,
  jobInfoFromRow,
  leasedJobFromRow,
  parseMetadata,
} from './job-rows.ts';
