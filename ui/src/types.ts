/** The API's shapes as the UI reads them (see /api/openapi.json). */

export type Role = 'viewer' | 'operator' | 'admin';
export type JobState = 'scheduled' | 'ready' | 'leased' | 'completed' | 'dead';
export const jobStates: readonly JobState[] = ['ready', 'scheduled', 'leased', 'dead', 'completed'];
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

export interface RateSnapshot {
  bucketMs: number;
  startMs: number;
  series: Record<'enqueued' | 'reserved' | 'acked' | 'nacked' | 'dead' | 'expired', number[]>;
  totals: Record<string, number>;
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

export interface JobDetail extends Omit<JobSummary, 'payloadBytes'> {
  metadata: Record<string, string>;
  traceparent: string | null;
  tracestate: string | null;
  leasedAtMs: number | null;
  errors: { attempt: number; atMs: number; error: string }[];
  payload: { view: 'json' | 'text' | 'hex'; text: string; bytes: number; truncated: boolean };
  result: {
    view: 'json' | 'text' | 'hex';
    text: string;
    bytes: number;
    truncated: boolean;
    contentType: string;
  } | null;
  progress: { percent: number | null; json: string | null; atMs: number } | null;
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
