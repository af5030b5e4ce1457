/** The API's shapes as the UI reads them (see /api/openapi.json). */

export type Role = 'viewer' | 'operator' | 'admin';
export type JobState = 'scheduled' | 'ready' | 'leased' | 'completed' | 'dead';
export const jobStates: readonly JobState[] = ['ready', 'scheduled', 'leased', 'dead', 'completed'];
/** The job lists' states: a job state, or `retrying` (scheduled after a failed attempt). */
export type BrowseState = JobState | 'retrying';
export const browseStates: readonly BrowseState[] = [
  'ready',
  'scheduled',
  'retrying',
  'leased',
  'dead',
  'completed',
];
export type DeadReason = 'attempts_exhausted' | 'lease_expired' | 'dead_lettered';
export const deadReasons: readonly DeadReason[] = ['attempts_exhausted', 'lease_expired', 'dead_lettered'];

export interface Session {
  authenticated: boolean;
  open: boolean;
  user: string | null;
  role: Role | null;
  csrfToken: string | null;
  expiresAtMs: number | null;
}

export type StateCounts = Record<JobState, number>;

export interface QueueInfo {
  name: string;
  paused: boolean;
  counts: StateCounts;
  oldestReadyAgeMs: number | null;
  waitingWorkers: number;
  settings: Record<string, unknown>;
}

export type RateKind = 'enqueued' | 'reserved' | 'acked' | 'nacked' | 'dead' | 'expired';
export type RateWindow = '5m' | '1h' | '24h';

export interface QueueRates {
  perSecond: Record<RateKind, number>;
  waitMsAvg: number | null;
  waitMsMax: number | null;
}

export interface RateSnapshot {
  window: RateWindow;
  windowMs: number;
  bucketMs: number;
  startMs: number;
  series: Record<RateKind, number[]>;
  totals: Record<RateKind, number>;
  coveredMs: number;
  current: QueueRates;
  queues: Record<string, QueueRates>;
}

export interface Overview {
  server: {
    version: string;
    commit: string | null;
    startedAtMs: number;
    uptimeMs: number;
    serverTimeMs: number;
    durability: 'full' | 'relaxed';
    dbBytes: number;
    walBytes: number;
  };
  totals: StateCounts;
  waitingWorkers: number;
  queues: QueueInfo[];
  rates: RateSnapshot;
}

export interface JobSummary {
  id: string;
  queue: string;
  type: string;
  state: JobState;
  priority: number;
  contentType: string;
  payloadBytes: number;
  attempt: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  enqueuedAtMs: number;
  runAtMs: number;
  leaseDeadlineMs: number | null;
  workerId: string | null;
  lastError: string | null;
  deadReason: DeadReason | null;
  failedAtMs: number | null;
  completedAtMs: number | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  total?: number | null;
}

export interface JobBrowsePage extends Page<JobSummary> {
  prevCursor: string | null;
  orderedBy: 'enqueue' | 'due';
  total: number | null;
  scanned: number | null;
  scanLimited: boolean;
}

export interface SearchResult {
  items: (JobSummary & { matchedBy: 'id' | 'id_prefix' | 'id_fragment' | 'idempotency_key' })[];
  keysWithoutJob: { queue: string; key: string; jobId: string }[];
  idsSearched: number | null;
  storedJobs: number;
}

export interface JobDetail extends Omit<JobSummary, 'payloadBytes'> {
  metadata: Record<string, string>;
  traceparent: string | null;
  tracestate: string | null;
  leasedAtMs: number | null;
  errors: { attempt: number; atMs: number; error: string }[];
  payload: { view: 'json' | 'text' | 'hex'; text: string; bytes: number; truncated: boolean };
  timeline: { atMs: number; event: string; detail: string }[];
}

export interface AuditEntry {
  id: number;
  atMs: number;
  actor: string;
  action: string;
  target: string;
  details: Record<string, unknown>;
}
