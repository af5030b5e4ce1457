/**
 * sepp's TypeScript SDK (`@sepp-queue/client`): a client for every RPC, with
 * enqueues coalesced onto one Produce stream, and a Worker on Work streams.
 *
 *   const client = SeppClient.connect('127.0.0.1:50051');
 *   await client.enqueueJson('emails', 'send', { to: 'ada@example.com' });
 *   client.worker({ queues: ['emails'], handlers: { send: async (job) => … } });
 */

export type {
  BatchAdded,
  BatchInfo,
  BatchMember,
  BatchQuery,
  BatchSpec,
  BatchState,
  FlowEdge,
  FlowGraph,
  FlowNode,
  WorkflowCancelled,
} from './batches.ts';
export { type ClientStats, SeppClient } from './client.ts';
export type { AuditLog } from './client-audit.ts';
export type { DeadLetterChangeOptions, DeadLetters } from './client-dead-letters.ts';
export type { CountOptions, Jobs } from './client-jobs.ts';
export type { PurgeOptions, Queues } from './client-queues.ts';
export type { ConnectOptions, RetryOptions, TlsOptions } from './connection.ts';
export {
  BatchLeftOpenError,
  JobCancelledError,
  JobRejectedError,
  type JobRejection,
  JobTimeoutError,
  LeaseLostError,
  type RejectionReason,
  type RetryAdvice,
  SeppError,
  type SeppErrorCode,
} from './errors.ts';
export {
  type EventPosition,
  EventSubscription,
  type EventsOptions,
  type JobEvent,
  type JobEventKind,
} from './events.ts';
export { Flow, type FlowJobSpec } from './flows.ts';
export { type DependencyResult, Job, type JobLink, LeasedJob } from './jobs.ts';
export { type JobProgress, JobResult } from './results.ts';
export type {
  MisfirePolicy,
  OverlapPolicy,
  Schedule,
  ScheduleDefinition,
  ScheduleJob,
  ScheduleOutcome,
  ScheduleRun,
  Schedules,
} from './schedules.ts';
export type { SettingInput } from './settings-calls.ts';
export type {
  AckOptions,
  AckResult,
  AckSpec,
  AttemptError,
  AuditEntry,
  AuditQuery,
  BackoffSettings,
  BulkAction,
  BulkChanges,
  BulkOperation,
  BulkOptions,
  BulkResult,
  CallOptions,
  CancelJobsResult,
  CancelResult,
  DeadLetterQuery,
  DeadLetterSelection,
  DeadReason,
  Enqueued,
  EnqueueOptions,
  EnqueueOutcome,
  ErrorGroup,
  ErrorGroupKey,
  JobChanges,
  JobFilter,
  JobSpec,
  JobState,
  LeaseRef,
  NackOptions,
  NackResult,
  Payload,
  QueueActionOptions,
  QueueInfo,
  QueuePage,
  QueuePageOptions,
  QueueSettings,
  QueueSettingValue,
  RateLimit,
  ReloadReport,
  ReserveOptions,
  ServerIdentity,
  ServerInfo,
  ServerLimits,
  SettingChange,
  SettingSource,
  StateCounts,
  StoreInfo,
  TimeInput,
  TopErrors,
  WorkerInfo,
  WorkerPage,
  WorkerPageOptions,
} from './types.ts';
export type { JobOutcome, WaitOptions } from './wait.ts';
export {
  Worker,
  type WorkerClient,
  type WorkerEvents,
  type WorkerLogger,
  type WorkerOptions,
} from './worker.ts';
export type { WorkerClock, WorkerTimer } from './worker-clock.ts';
export { DeadLetter, type JobHandler, RetryAfter, WorkerJob } from './worker-job.ts';
