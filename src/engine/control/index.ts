/**
 * Job control: cancel (waiting jobs at once, leased ones by request), updates
 * of waiting jobs, an operator's one-job actions and actions on jobs chosen by id, dead letters through the
 * protocol, and bulk operations (every job a filter matches, in slices).
 */
export { requestKeyField, requestKeyMaxChars } from './bulk-keys.ts';
export { type BetweenSlices, BulkOperations, type BulkStart } from './bulk-operations.ts';
export { type CancelListener, Canceller } from './cancel.ts';
export { DeadLetters } from './dead-letters.ts';
export { maxFlowWalkEdges } from './flow-walk.ts';
export { checkChanges, JobUpdater } from './job-update.ts';
export { OperatorActions } from './operator-actions.ts';
export {
  SelectedJobs,
  type SelectedJobsAction,
  type SelectedJobsResult,
} from './selected-jobs.ts';
export { maxFlowGraphJobs, WorkflowActs, type WorkflowCancelResult } from './workflow-cancel.ts';
