/**
 * Job control: cancel (waiting jobs at once, leased ones by request), updates
 * of waiting jobs, the bulk filters, an operator's one-job actions and purges,
 * and dead letters through the protocol.
 */
export { type CancelListener, Canceller } from './cancel.ts';
export { DeadLetters } from './dead-letters.ts';
export { JobUpdater } from './job-update.ts';
export { OperatorActions } from './operator-actions.ts';
