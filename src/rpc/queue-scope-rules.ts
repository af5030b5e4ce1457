/**
 * Which queues each unary RPC touches, for API keys scoped to queues
 * (config/queue-scope.ts). One table, typed over every unary method of
 * QueueService, so a new RPC does not compile until it says how it is scoped.
 * The unary wrapper (unary-handlers.ts) checks it before the handler runs,
 * and only for a scoped key: a key without `queues` costs one comparison.
 *
 * - `queues`: the queue names the request carries must all be in scope
 *   (PERMISSION_DENIED naming the field);
 * - `jobs`, `schedule`, `bulk`: what the request names is looked up; one of a
 *   queue outside the scope is answered NOT_FOUND, as if it did not exist;
 * - `answer`: allowed, and the handler shows only the caller's queues;
 * - `server`: it reaches every queue (the audit log, a reload): refused;
 * - `none`: it shows no queue (server facts).
 * The streams (Work, Produce, Events, Backup) check in their own files; a
 * Produce message's flow is checked by EnqueueFlow's rule (checkEnqueueScope).
 */
import type { handleUnaryCall } from '@grpc/grpc-js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import {
  hideNotFound,
  notVisible,
  queueOfJob,
  refuseDependencies,
  requireInScope,
  requireJobsInScope,
  type ScopedQueue,
  serverWide,
} from '../config/index.ts';
import type { Engine } from '../engine/engine.ts';
import { SeppError } from '../engine/errors.ts';
import type { Caller } from './auth.ts';

/** The methods grpc-js's index signature would hide: their names only. */
type Methods = { [K in keyof QueueServiceServer as string extends K ? never : K]: QueueServiceServer[K] };
type UnaryName = Exclude<keyof Methods, 'produce' | 'work' | 'backup' | 'events'>;
type RequestOf<K extends UnaryName> = Methods[K] extends handleUnaryCall<infer Req, infer _Res> ? Req : never;

type Rule<Req> =
  | {
      kind: 'queues';
      queues: (req: Req) => ScopedQueue[];
      /** The jobs it enqueues, whose `depends_on` a scoped key may not use (refuseDependencies). */
      enqueued?: (req: Req) => { list: string; jobs: readonly { dependsOn: readonly string[] }[] };
    }
  | { kind: 'jobs'; jobIds: (req: Req) => string[] }
  | { kind: 'schedule'; name: (req: Req) => string; queues?: (req: Req) => ScopedQueue[] }
  | { kind: 'bulk'; id: (req: Req) => string }
  | { kind: 'answer' }
  | { kind: 'server'; what: string }
  | { kind: 'none' };

const one = (queue: string, field = 'queue'): ScopedQueue[] => [{ queue, field }];
const jobQueues = (jobs: readonly { queue: string }[], list = 'jobs'): ScopedQueue[] =>
  jobs.map((job, i) => ({ queue: job.queue, field: `${list}[${i}].queue` }));
/** A bulk filter: one queue, or all_queues, which reaches every queue. */
const filterQueue = (filter: { queue: string; allQueues: boolean } | undefined): ScopedQueue[] =>
  filter?.allQueues === true
    ? [{ queue: '*', field: 'filter.all_queues' }]
    : one(filter?.queue ?? '', 'filter.queue');
const answer = { kind: 'answer' } as const;

const rules: { [K in UnaryName]: Rule<RequestOf<K>> } = {
  enqueue: {
    kind: 'queues',
    queues: (req) => one(req.job?.queue ?? '', 'job.queue'),
    enqueued: (req) => ({ list: 'job', jobs: req.job === undefined ? [] : [req.job] }),
  },
  enqueueBatch: {
    kind: 'queues',
    queues: (req) => jobQueues(req.jobs),
    enqueued: (req) => ({ list: 'jobs', jobs: req.jobs }),
  },
  enqueueAtomic: {
    kind: 'queues',
    queues: (req) => jobQueues(req.jobs),
    enqueued: (req) => ({ list: 'jobs', jobs: req.jobs }),
  },
  // `after` names jobs of the same request (their queues are checked here); `depends_on`, stored ones.
  enqueueFlow: {
    kind: 'queues',
    queues: (req) =>
      req.jobs.map((flowJob, i) => ({ queue: flowJob.job?.queue ?? '', field: `jobs[${i}].job.queue` })),
    enqueued: (req) => ({
      list: 'jobs',
      jobs: req.jobs.map((flowJob) => ({ dependsOn: flowJob.job?.dependsOn ?? [] })),
    }),
  },
  // A batch spans queues (its members', its completion jobs'), and its reads show them all.
  createBatch: { kind: 'server', what: 'batches' },
  addToBatch: { kind: 'server', what: 'batches' },
  sealBatch: { kind: 'server', what: 'batches' },
  getBatch: { kind: 'server', what: 'batches' },
  listBatches: { kind: 'server', what: 'batches' },
  cancelBatch: { kind: 'server', what: 'batches' },
  // A flow spans queues too.
  getFlow: { kind: 'server', what: 'flows' },
  cancelFlow: { kind: 'server', what: 'flows' },
  reserve: {
    kind: 'queues',
    queues: (req) => req.queues.map((queue, i) => ({ queue, field: `queues[${i}]` })),
  },
  ack: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  // Each ack on its own (unary-handlers.ts): one of another queue is answered NOT_FOUND like a missing one.
  ackBatch: answer,
  nack: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  extend: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  reportProgress: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  getJob: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  cancelJob: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  updateJob: { kind: 'jobs', jobIds: (req) => [req.jobId] },
  cancelJobs: { kind: 'queues', queues: (req) => filterQueue(req.filter) },
  updateJobs: { kind: 'queues', queues: (req) => filterQueue(req.filter) },
  requeueJobs: { kind: 'queues', queues: (req) => filterQueue(req.filter) },
  deleteJobs: { kind: 'queues', queues: (req) => filterQueue(req.filter) },
  purgeQueue: { kind: 'queues', queues: (req) => one(req.queue) },
  pauseQueue: { kind: 'queues', queues: (req) => one(req.queue) },
  resumeQueue: { kind: 'queues', queues: (req) => one(req.queue) },
  deleteQueue: { kind: 'queues', queues: (req) => one(req.queue) },
  setQueueSettings: { kind: 'queues', queues: (req) => one(req.queue) },
  resetQueueSettings: { kind: 'queues', queues: (req) => one(req.queue) },
  listDeadLetters: { kind: 'queues', queues: (req) => one(req.queue) },
  listTopErrors: { kind: 'queues', queues: (req) => one(req.queue) },
  requeueDeadLetters: { kind: 'queues', queues: (req) => one(req.queue) },
  deleteDeadLetters: { kind: 'queues', queues: (req) => one(req.queue) },
  getBulkOperation: { kind: 'bulk', id: (req) => req.id },
  cancelBulkOperation: { kind: 'bulk', id: (req) => req.id },
  listBulkOperations: answer,
  listQueues: answer,
  listWorkers: answer,
  listSchedules: answer,
  createSchedule: {
    kind: 'queues',
    queues: (req) => one(req.schedule?.template?.queue ?? '', 'schedule.template.queue'),
  },
  updateSchedule: {
    kind: 'schedule',
    name: (req) => req.schedule?.name ?? '',
    queues: (req) => one(req.schedule?.template?.queue ?? '', 'schedule.template.queue'),
  },
  getSchedule: { kind: 'schedule', name: (req) => req.name },
  pauseSchedule: { kind: 'schedule', name: (req) => req.name },
  resumeSchedule: { kind: 'schedule', name: (req) => req.name },
  deleteSchedule: { kind: 'schedule', name: (req) => req.name },
  triggerSchedule: { kind: 'schedule', name: (req) => req.name },
  listAuditEntries: { kind: 'server', what: 'the audit log' },
  reloadConfig: { kind: 'server', what: 'a reload of the configuration' },
  getServerInfo: { kind: 'none' },
};

/** The method's key in the table: `GetJob` → `getJob`. */
function ruleOf(rpc: string): Rule<unknown> | undefined {
  const key = `${rpc.charAt(0).toLowerCase()}${rpc.slice(1)}`;
  if (!Object.hasOwn(rules, key)) return undefined;
  // The wrapper passes the request of this very RPC, which the rule was typed for.
  return rules[key as UnaryName] as Rule<unknown>;
}

/**
 * Throws unless a scoped caller may make this call (a caller without a scope
 * passes at once). Runs after the role check, before the handler.
 */
export async function checkUnaryScope(engine: Engine, rpc: string, request: unknown, caller: Caller) {
  if (caller.scope === null) return;
  const rule = ruleOf(rpc);
  // A method the table does not know is refused: a scope fails closed.
  if (rule === undefined) throw serverWide(caller, rpc);
  switch (rule.kind) {
    case 'queues':
      return checkQueues(rule, request, caller);
    case 'jobs':
      return requireJobsInScope(caller, rule.jobIds(request), (id) => queueOfJob(engine, id));
    case 'schedule': {
      const name = rule.name(request);
      const queue = await queueOfSchedule(engine, name);
      if (queue !== undefined && !caller.scope.allows(queue)) throw notVisible('schedule', name);
      if (rule.queues !== undefined) requireInScope(caller, rule.queues(request));
      return;
    }
    case 'bulk': {
      const id = rule.id(request);
      if (!bulkOperationVisible(engine, id, caller)) throw notVisible('bulk operation', id);
      return;
    }
    case 'server':
      throw serverWide(caller, rule.what);
    case 'answer':
    case 'none':
      return;
  }
}

/**
 * The scope check of an enqueue RPC, at once: for the Produce stream, which carries
 * EnqueueFlow's request in a message and checks it by the unary call's own rule, with its
 * errors, before the engine sees it (so that the stream's messages reach it in order).
 */
export function checkEnqueueScope(rpc: 'EnqueueFlow', request: unknown, caller: Caller): void {
  if (caller.scope === null) return;
  const rule = ruleOf(rpc);
  if (rule?.kind !== 'queues') throw serverWide(caller, rpc);
  checkQueues(rule, request, caller);
}

function checkQueues(
  rule: Extract<Rule<unknown>, { kind: 'queues' }>,
  request: unknown,
  caller: Caller,
): void {
  requireInScope(caller, rule.queues(request));
  const enqueued = rule.enqueued?.(request);
  if (enqueued !== undefined) refuseDependencies(caller, enqueued.jobs, enqueued.list);
}

/** Whether a scoped caller may see a bulk operation: one whose filter names a queue of its scope. */
export function bulkOperationVisible(engine: Engine, id: string, caller: Caller): boolean {
  let queue: unknown;
  try {
    queue = engine.getBulkOperation(id).details.queue;
  } catch (error) {
    if (error instanceof SeppError && error.code === 'not_found') return true;
    throw error;
  }
  return caller.scope === null || (typeof queue === 'string' && queue !== '*' && caller.scope.allows(queue));
}

async function queueOfSchedule(engine: Engine, name: string): Promise<string | undefined> {
  try {
    return (await engine.getSchedule(name, 1)).template.queue;
  } catch (error) {
    if (error instanceof SeppError && (error.code === 'not_found' || error.code === 'invalid_argument'))
      return undefined;
    throw error;
  }
}

/**
 * A scoped caller's NOT_FOUND of what the call names, with the message it would
 * get for something of another queue, so the two cannot be told apart.
 */
export function hideUnaryNotFound(rpc: string, request: unknown, error: unknown): unknown {
  const rule = ruleOf(rpc);
  if (rule?.kind === 'jobs') {
    const [jobId] = rule.jobIds(request);
    return jobId === undefined ? error : hideNotFound(error, 'job', jobId);
  }
  if (rule?.kind === 'schedule') return hideNotFound(error, 'schedule', rule.name(request));
  if (rule?.kind === 'bulk') return hideNotFound(error, 'bulk operation', rule.id(request));
  return error;
}
