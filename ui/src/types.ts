/**
 * The API's shapes as the UI reads them: taken from the server's one
 * definition (src/admin/api-types.ts, built from the engine's types), never
 * copied, so a change there that the UI does not follow fails the type check.
 */
import type { AdminRole, BrowseState, DeadReason, JobState } from '../../src/admin/api-types.ts';

export type {
  AuditEntry,
  BatchList,
  BatchPage,
  BrowseState,
  ConfigEntry,
  DeadReason,
  FlowGraph,
  HistoryAnswer,
  HistoryWindow,
  JobBrowsePage,
  JobDetail,
  JobLink,
  JobSearchResult as SearchResult,
  JobState,
  JobSummary,
  Overview,
  Page,
  PushStatusView as PushStatus,
  QueueRates,
  QueueView as QueueInfo,
  RateSnapshot,
  RateWindow,
  ScheduleRun,
  ScheduleView,
  ServerIdentityFacts,
  SessionInfo as Session,
  SettingSource,
  SettingValueView as SettingValue,
  StoreFacts,
  StoreHealth,
  TopErrors,
  WorkerInfo,
  WorkflowCancelResult,
} from '../../src/admin/api-types.ts';

export type Role = AdminRole;

/** The states in the order the UI offers them. */
export const jobStates: readonly JobState[] = [
  'ready',
  'scheduled',
  'waiting',
  'leased',
  'dead',
  'completed',
  'cancelled',
];
export const browseStates: readonly BrowseState[] = [
  'ready',
  'scheduled',
  'waiting',
  'retrying',
  'leased',
  'dead',
  'completed',
  'cancelled',
];
/** States a cancel applies to (the jobs page offers "Cancel all matching" for them). */
export const deadReasons: readonly DeadReason[] = [
  'attempts_exhausted',
  'lease_expired',
  'dead_lettered',
  'expired',
];
