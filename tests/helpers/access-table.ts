/**
 * The gRPC access table shared by tests/rpc/access-matrix.test.ts and
 * tests/rpc/audit-rpcs.test.ts: which roles may call each QueueService RPC,
 * written out from the product's roles (SECURITY.md, config/types.ts), not
 * derived from src/rpc/auth.ts; the API keys the test servers are configured
 * with; and every kind of credential a caller may send.
 */
import { createHash } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import type { ScheduleSpec } from '../../clients/typescript/src/gen/sepp/v1/schedule.js';
import { registerSecret } from './secret-log.ts';

export type Role = 'producer' | 'worker' | 'admin';

/** The expected table: one row per RPC, the roles that may call it. */
export const expected: Readonly<Record<string, readonly Role[]>> = {
  Enqueue: ['producer', 'admin'],
  EnqueueBatch: ['producer', 'admin'],
  EnqueueAtomic: ['producer', 'admin'],
  EnqueueFlow: ['producer', 'admin'],
  CreateBatch: ['producer', 'admin'],
  AddToBatch: ['producer', 'admin'],
  SealBatch: ['producer', 'admin'],
  GetBatch: ['producer', 'worker', 'admin'],
  ListBatches: ['producer', 'worker', 'admin'],
  CancelBatch: ['admin'],
  GetFlow: ['producer', 'worker', 'admin'],
  CancelFlow: ['admin'],
  Produce: ['producer', 'admin'],
  Reserve: ['worker', 'admin'],
  Ack: ['worker', 'admin'],
  AckBatch: ['worker', 'admin'],
  Nack: ['worker', 'admin'],
  Extend: ['worker', 'admin'],
  ReportProgress: ['worker', 'admin'],
  Work: ['worker', 'admin'],
  GetJob: ['producer', 'worker', 'admin'],
  ListQueues: ['producer', 'worker', 'admin'],
  ListWorkers: ['producer', 'worker', 'admin'],
  ListDeadLetters: ['producer', 'worker', 'admin'],
  ListTopErrors: ['producer', 'worker', 'admin'],
  GetServerInfo: ['producer', 'worker', 'admin'],
  Events: ['producer', 'worker', 'admin'],
  CancelJob: ['admin'],
  CancelJobs: ['admin'],
  UpdateJob: ['admin'],
  UpdateJobs: ['admin'],
  PurgeQueue: ['admin'],
  RequeueJobs: ['admin'],
  DeleteJobs: ['admin'],
  GetBulkOperation: ['admin'],
  ListBulkOperations: ['admin'],
  CancelBulkOperation: ['admin'],
  ListAuditEntries: ['admin'],
  PauseQueue: ['admin'],
  ResumeQueue: ['admin'],
  DeleteQueue: ['admin'],
  RequeueDeadLetters: ['admin'],
  DeleteDeadLetters: ['admin'],
  SetQueueSettings: ['admin'],
  ResetQueueSettings: ['admin'],
  ReloadConfig: ['admin'],
  Backup: ['admin'],
  GetSchedule: ['producer', 'worker', 'admin'],
  ListSchedules: ['producer', 'worker', 'admin'],
  CreateSchedule: ['admin'],
  UpdateSchedule: ['admin'],
  PauseSchedule: ['admin'],
  ResumeSchedule: ['admin'],
  DeleteSchedule: ['admin'],
  TriggerSchedule: ['admin'],
};

/**
 * How each RPC meets a key scoped to queues (`queues = [...]` in its entry,
 * SECURITY.md), written out from the product rule, not from
 * src/rpc/queue-scope-rules.ts: `queue` — it names queues, and one outside the
 * scope is PERMISSION_DENIED; `id` — it names a job, schedule or bulk
 * operation, and one of another queue is NOT_FOUND as if missing (the matrix's
 * ids name nothing, so the outcome is unchanged; scopes.test.ts uses real ones);
 * `answer` — allowed, showing only the key's queues; `server` — it reaches every
 * queue and is PERMISSION_DENIED to every scoped key; `none` — it shows no queue.
 */
export type ScopeKind = 'queue' | 'id' | 'answer' | 'server' | 'none';
export const scopeKinds: Readonly<Record<string, ScopeKind>> = {
  Enqueue: 'queue',
  EnqueueBatch: 'queue',
  EnqueueAtomic: 'queue',
  EnqueueFlow: 'queue',
  // A batch spans queues: refused to every scoped key.
  CreateBatch: 'server',
  AddToBatch: 'server',
  SealBatch: 'server',
  GetBatch: 'server',
  ListBatches: 'server',
  CancelBatch: 'server',
  GetFlow: 'server',
  CancelFlow: 'server',
  Produce: 'queue',
  Reserve: 'queue',
  Ack: 'id',
  AckBatch: 'id',
  Nack: 'id',
  Extend: 'id',
  ReportProgress: 'id',
  Work: 'queue',
  GetJob: 'id',
  ListQueues: 'answer',
  ListWorkers: 'answer',
  ListDeadLetters: 'queue',
  ListTopErrors: 'queue',
  GetServerInfo: 'none',
  Events: 'answer',
  CancelJob: 'id',
  CancelJobs: 'queue',
  UpdateJob: 'id',
  UpdateJobs: 'queue',
  PurgeQueue: 'queue',
  RequeueJobs: 'queue',
  DeleteJobs: 'queue',
  GetBulkOperation: 'id',
  ListBulkOperations: 'answer',
  CancelBulkOperation: 'id',
  ListAuditEntries: 'server',
  PauseQueue: 'queue',
  ResumeQueue: 'queue',
  DeleteQueue: 'queue',
  RequeueDeadLetters: 'queue',
  DeleteDeadLetters: 'queue',
  SetQueueSettings: 'queue',
  ResetQueueSettings: 'queue',
  ReloadConfig: 'server',
  Backup: 'server',
  GetSchedule: 'id',
  ListSchedules: 'answer',
  CreateSchedule: 'queue',
  // Names a schedule and the queue its template goes to: the queue decides here.
  UpdateSchedule: 'queue',
  PauseSchedule: 'id',
  ResumeSchedule: 'id',
  DeleteSchedule: 'id',
  TriggerSchedule: 'id',
};

/** What a credential gets from an RPC: refused at its key, refused its role or scope, or allowed. */
export function expectedOutcome(
  rpc: string,
  credential: Credential,
): 'unauthenticated' | 'denied' | 'allowed' {
  const roles = expected[rpc];
  const kind = scopeKinds[rpc];
  if (roles === undefined || kind === undefined) throw new Error(`no row for ${rpc}`);
  if (credential.role === null) return 'unauthenticated';
  if (!roles.includes(credential.role)) return 'denied';
  if (credential.scope === undefined) return 'allowed';
  if (kind === 'server') return 'denied';
  if (credential.scope === 'outside' && kind === 'queue') return 'denied';
  return 'allowed';
}

// Every key carries a marker, so a leak is easy to spot in a log by eye as well.
export const keys = {
  producer: 'sepp-secret-matrix-producer-0123456789',
  worker: 'sepp-secret-matrix-worker-0123456789',
  admin: 'sepp-secret-matrix-admin-0123456789',
  hashedAdmin: 'sepp-secret-matrix-hashed-admin-0123456789',
  retired: 'sepp-secret-matrix-retired-0123456789',
  scopedProducer: 'sepp-secret-matrix-scoped-producer-0123456789',
  scopedWorker: 'sepp-secret-matrix-scoped-worker-0123456789',
  scopedAdmin: 'sepp-secret-matrix-scoped-admin-0123456789',
  otherWorker: 'sepp-secret-matrix-other-worker-0123456789',
  otherAdmin: 'sepp-secret-matrix-other-admin-0123456789',
  unknown: 'sepp-secret-matrix-unknown-0123456789',
};
registerSecret('API key (never configured)', keys.unknown);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export const apiKeyToml = (name: string, role: Role, key: string, queues?: readonly string[]) =>
  `[[grpc.api_keys]]\nname = "${name}"\nrole = "${role}"\nkey = "${key}"\n` +
  (queues === undefined ? '' : `queues = ${JSON.stringify(queues)}\n`);
/** The queues of the matrix's requests (matrix, matrix-none, matrix-work, …) and DeleteQueue's. */
export const matrixScope = ['matrix*', 'never-used'];
/** A scope that holds none of the matrix's queues. */
export const otherScope = ['other-*', 'billing'];
export const keysToml = [
  apiKeyToml('billing', 'producer', keys.producer),
  apiKeyToml('mailer', 'worker', keys.worker),
  apiKeyToml('ops', 'admin', keys.admin),
  `[[grpc.api_keys]]\nname = "ops-hashed"\nrole = "admin"\nkey_sha256 = "${sha256(keys.hashedAdmin)}"\n`,
  apiKeyToml('matrix-producer', 'producer', keys.scopedProducer, matrixScope),
  apiKeyToml('matrix-worker', 'worker', keys.scopedWorker, matrixScope),
  apiKeyToml('matrix-admin', 'admin', keys.scopedAdmin, matrixScope),
  apiKeyToml('other-worker', 'worker', keys.otherWorker, otherScope),
  apiKeyToml('other-admin', 'admin', keys.otherAdmin, otherScope),
].join('');

/** How a credential is sent: the authorization header values (none = no header). */
export interface Credential {
  name: string;
  headers: readonly string[];
  /** The role it authenticates as, or null when it must be UNAUTHENTICATED. */
  role: Role | null;
  /** A key scoped to queues: to the matrix's queues (`inside`), or to others (`outside`). */
  scope?: 'inside' | 'outside';
}

export const credentials: readonly Credential[] = [
  { name: 'no key', headers: [], role: null },
  { name: 'key without scheme', headers: [keys.admin], role: null },
  {
    name: 'Basic scheme',
    headers: [`Basic ${Buffer.from(`ops:${keys.admin}`).toString('base64')}`],
    role: null,
  },
  { name: 'lower-case scheme', headers: [`bearer ${keys.admin}`], role: null },
  { name: 'empty bearer', headers: ['Bearer '], role: null },
  // (Two authorization values cannot be sent: grpc-js refuses them on the client with INTERNAL.)
  { name: 'key and a trailing word', headers: [`Bearer ${keys.admin} admin`], role: null },
  { name: 'oversized key', headers: [`Bearer ${'k'.repeat(600)}`], role: null },
  { name: 'unknown key', headers: [`Bearer ${keys.unknown}`], role: null },
  { name: 'removed key', headers: [`Bearer ${keys.retired}`], role: null },
  { name: 'producer key', headers: [`Bearer ${keys.producer}`], role: 'producer' },
  { name: 'worker key', headers: [`Bearer ${keys.worker}`], role: 'worker' },
  { name: 'admin key', headers: [`Bearer ${keys.admin}`], role: 'admin' },
  { name: 'admin key (configured as sha256)', headers: [`Bearer ${keys.hashedAdmin}`], role: 'admin' },
  {
    name: 'producer key scoped to the queues',
    headers: [`Bearer ${keys.scopedProducer}`],
    role: 'producer',
    scope: 'inside',
  },
  {
    name: 'worker key scoped to the queues',
    headers: [`Bearer ${keys.scopedWorker}`],
    role: 'worker',
    scope: 'inside',
  },
  {
    name: 'admin key scoped to the queues',
    headers: [`Bearer ${keys.scopedAdmin}`],
    role: 'admin',
    scope: 'inside',
  },
  {
    name: 'worker key scoped elsewhere',
    headers: [`Bearer ${keys.otherWorker}`],
    role: 'worker',
    scope: 'outside',
  },
  {
    name: 'admin key scoped elsewhere',
    headers: [`Bearer ${keys.otherAdmin}`],
    role: 'admin',
    scope: 'outside',
  },
];

export function metadataFor(credential: Credential): Metadata {
  const metadata = new Metadata();
  for (const value of credential.headers) metadata.add('authorization', value);
  return metadata;
}

/** A well-formed job id that names no job. */
export const missingJobId = '01890f6e-7c3a-7000-8000-000000000000';

/** A schedule named `name` putting jobs of `type` on `queue` at each `cron` time, everything else default. */
export const protoScheduleSpec = (name: string, queue: string, cron: string, type = 't'): ScheduleSpec => ({
  name,
  timing: { $case: 'cron', value: cron },
  timezone: '',
  template: {
    queue,
    type,
    payload: Buffer.alloc(0),
    contentType: '',
    priority: 0,
    metadata: {},
    maxAttempts: 0,
    leaseMs: 0,
    timeoutMs: 0,
    payloadBytes: 0,
  },
  misfire: 0,
  catchUpMax: 0,
  overlap: 0,
  jitterMs: 0,
  startAtMs: 0,
  endAtMs: 0,
});

/**
 * The HTTP API's operations (their OpenAPI operationId) and the gRPC method
 * each one mirrors: an operation needs exactly the roles of its method in
 * `expected`, so both transports are held to one table. `public` needs no key.
 */
export const httpOperations: Readonly<Record<string, string>> = {
  enqueue: 'Enqueue',
  enqueueBatch: 'EnqueueBatch',
  enqueueAtomic: 'EnqueueAtomic',
  getJob: 'GetJob',
  waitJob: 'GetJob',
  cancelJob: 'CancelJob',
  reserve: 'Reserve',
  ack: 'Ack',
  ackBatch: 'AckBatch',
  nack: 'Nack',
  extend: 'Extend',
  reportProgress: 'ReportProgress',
  events: 'Events',
  getOpenApi: 'public',
  getServerInfo: 'GetServerInfo',
  enqueueFlow: 'EnqueueFlow',
  getFlow: 'GetFlow',
  cancelFlow: 'CancelFlow',
  createBatch: 'CreateBatch',
  addToBatch: 'AddToBatch',
  sealBatch: 'SealBatch',
  getBatch: 'GetBatch',
  listBatches: 'ListBatches',
  cancelBatch: 'CancelBatch',
};
