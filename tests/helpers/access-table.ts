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

// Every key carries a marker, so a leak is easy to spot in a log by eye as well.
export const keys = {
  producer: 'sepp-secret-matrix-producer-0123456789',
  worker: 'sepp-secret-matrix-worker-0123456789',
  admin: 'sepp-secret-matrix-admin-0123456789',
  hashedAdmin: 'sepp-secret-matrix-hashed-admin-0123456789',
  retired: 'sepp-secret-matrix-retired-0123456789',
  unknown: 'sepp-secret-matrix-unknown-0123456789',
};
registerSecret('API key (never configured)', keys.unknown);
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export const apiKeyToml = (name: string, role: Role, key: string) =>
  `[[grpc.api_keys]]\nname = "${name}"\nrole = "${role}"\nkey = "${key}"\n`;
export const keysToml = [
  apiKeyToml('billing', 'producer', keys.producer),
  apiKeyToml('mailer', 'worker', keys.worker),
  apiKeyToml('ops', 'admin', keys.admin),
  `[[grpc.api_keys]]\nname = "ops-hashed"\nrole = "admin"\nkey_sha256 = "${sha256(keys.hashedAdmin)}"\n`,
].join('');

/** How a credential is sent: the authorization header values (none = no header). */
export interface Credential {
  name: string;
  headers: readonly string[];
  /** The role it authenticates as, or null when it must be UNAUTHENTICATED. */
  role: Role | null;
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
};

/** The roles that may call an HTTP operation; null for a public one. */
export function httpRoles(operationId: string): readonly Role[] | null {
  const method = httpOperations[operationId];
  if (method === undefined) throw new Error(`no row for the HTTP operation ${operationId}`);
  if (method === 'public') return null;
  const roles = expected[method];
  if (roles === undefined) throw new Error(`no gRPC row ${method}`);
  return roles;
}
