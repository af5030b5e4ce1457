/**
 * API keys scoped to queues (`queues = ["billing-*", "emails"]` in a
 * [[grpc.api_keys]] entry): the patterns, what they allow, and the refusals
 * both transports give (src/rpc and src/http may not import each other, so
 * the rule and its words live here, once).
 *
 * A pattern is a queue name in which `*` stands for any run of characters
 * (none included): `billing-*` allows `billing-eu` and `billing-`, `*-eu`
 * allows `billing-eu`. A key without `queues` may use every queue, as before.
 */
import type { Engine } from '../engine/engine.ts';
import { SeppError } from '../engine/errors.ts';
import type { Ack, JobInfo, SettleOutcome } from '../engine/types.ts';

/** Letters, digits, `. _ : -` as in a queue name, and `*`. */
export const queuePatternRe = /^[A-Za-z0-9._:*-]{1,255}$/;
export const queuePatternHelp =
  'use letters, digits and . _ : - as in a queue name, and * for any run of them';
/** Patterns one key may list: the check of a name is a loop over them. */
export const maxQueuePatterns = 64;

/** Where a refused queue name came from in the request, e.g. `jobs[2].queue`. */
export interface ScopedQueue {
  readonly queue: string;
  readonly field: string;
}

export class QueueScope {
  private readonly exact = new Set<string>();
  private readonly wildcards: RegExp[] = [];

  constructor(readonly patterns: readonly string[]) {
    for (const pattern of patterns) {
      if (!pattern.includes('*')) this.exact.add(pattern);
      else {
        const body = pattern
          .split('*')
          .map((part) => part.replace(/[.]/g, '\\.'))
          .join('.*');
        this.wildcards.push(new RegExp(`^${body}$`));
      }
    }
  }

  /** Whether a queue of this name is inside the scope. */
  allows(queue: string): boolean {
    if (this.exact.has(queue)) return true;
    for (const re of this.wildcards) if (re.test(queue)) return true;
    return false;
  }

  /** `billing-*, emails`, for messages. */
  describe(): string {
    return this.patterns.join(', ');
  }
}

/** What a caller of either transport carries: its key's name and scope (null: every queue). */
interface ScopedCaller {
  readonly name: string;
  readonly scope: QueueScope | null;
}

/** PERMISSION_DENIED for a queue outside the caller's scope: names the key, its patterns and the field. */
function outOfScope(caller: ScopedCaller, named: ScopedQueue): SeppError {
  return new SeppError(
    'permission_denied',
    `API key ${caller.name} may use only the queues ${caller.scope?.describe() ?? '*'}; ` +
      `${named.field} names queue ${JSON.stringify(named.queue)}`,
  );
}

/** Throws PERMISSION_DENIED at the first queue outside the caller's scope. */
export function requireInScope(caller: ScopedCaller, queues: Iterable<ScopedQueue>): void {
  const scope = caller.scope;
  if (scope === null) return;
  for (const named of queues) {
    // No name is no queue: the call itself answers INVALID_ARGUMENT for it.
    if (named.queue !== '' && !scope.allows(named.queue)) throw outOfScope(caller, named);
  }
}

/**
 * A scoped key may not name dependencies (`depends_on`) yet: the ids could be
 * another queue's jobs, and a job that waits on one learns when it ended and
 * is handed its result. Refused whole (PERMISSION_DENIED naming the field)
 * until dependencies are checked against the scope.
 */
export function refuseDependencies(
  caller: ScopedCaller,
  jobs: readonly { readonly dependsOn: readonly string[] }[],
  list = 'jobs',
  /** The field as the request names it (HTTP: `jobs[2].dependsOn`); default gRPC's `LIST[i].depends_on`. */
  field: (index: number) => string = (index) => `${list}[${index}].depends_on`,
): void {
  if (caller.scope === null) return;
  const index = jobs.findIndex((job) => job.dependsOn.length > 0);
  if (index === -1) return;
  throw new SeppError(
    'permission_denied',
    `API key ${caller.name} is scoped to the queues ${caller.scope.describe()}; ` +
      `${field(index)} is not open to a scoped key (a dependency may name another queue's job), so it needs a key without queues`,
  );
}

/**
 * A job as a scoped caller may see it: only the links to jobs of its queues, at the other end of an
 * edge too, and no batch (a batch spans queues; its calls are refused to such a key). Changes `job`.
 */
export function scopeJobLinks(caller: ScopedCaller, job: JobInfo): JobInfo {
  const scope = caller.scope;
  if (scope === null) return job;
  const visible = (link: { queue: string | null }) => link.queue !== null && scope.allows(link.queue);
  if (job.dependencies) job.dependencies = job.dependencies.filter(visible);
  if (job.dependents) job.dependents = job.dependents.filter(visible);
  delete job.batchId;
  return job;
}

/**
 * What a lease answered to this caller may pass on of other jobs (ReserveRequest.queueAllowed):
 * for a key scoped to queues, the results of dependencies of its queues only; `{}`, every queue.
 */
export function leaseScope(caller: ScopedCaller): { queueAllowed?: (queue: string) => boolean } {
  const scope = caller.scope;
  return scope === null ? {} : { queueAllowed: (queue) => scope.allows(queue) };
}

/** PERMISSION_DENIED for a call that reaches every queue (a backup, the audit log, a reload). */
export function serverWide(caller: ScopedCaller, what: string): SeppError {
  return new SeppError(
    'permission_denied',
    `API key ${caller.name} is scoped to the queues ${caller.scope?.describe() ?? '*'}; ` +
      `${what} reaches every queue, so it needs a key without queues`,
  );
}

/** What a call names by id: a job, a schedule, a bulk operation. */
export type NamedThing = 'job' | 'schedule' | 'bulk operation';

/**
 * The NOT_FOUND a scoped caller gets for something of a queue outside its
 * scope, and for something that does not exist (hideNotFound): one message
 * for both, so a key cannot learn what other queues hold.
 */
export function notVisible(what: NamedThing, id: string): SeppError {
  return new SeppError('not_found', `${what} ${JSON.stringify(id.slice(0, 64))} does not exist`);
}

/** A scoped caller's NOT_FOUND, with notVisible's message; any other error as it is. */
export function hideNotFound(error: unknown, what: NamedThing, id: string): unknown {
  return error instanceof SeppError && error.code === 'not_found' ? notVisible(what, id) : error;
}

/**
 * Checks the jobs a call names: `queueOf` reads a job's queue (undefined when
 * there is no such job, which the call itself then answers). A job of a
 * queue outside the scope is NOT_FOUND (notVisible).
 */
export async function requireJobsInScope(
  caller: ScopedCaller,
  jobIds: readonly string[],
  queueOf: (jobId: string) => Promise<string | undefined>,
): Promise<void> {
  const scope = caller.scope;
  if (scope === null) return;
  for (const jobId of jobIds) {
    const queue = await queueOf(jobId);
    if (queue !== undefined && !scope.allows(queue)) throw notVisible('job', jobId);
  }
}

/** The queue of a job, or undefined when there is none (the call itself answers that). */
export async function queueOfJob(engine: Engine, jobId: string): Promise<string | undefined> {
  try {
    return (await engine.getJob(jobId)).queue;
  } catch (error) {
    if (error instanceof SeppError && error.code === 'not_found') return undefined;
    throw error;
  }
}

/**
 * Acks a batch; for a key scoped to queues, the acks of jobs of other queues
 * are not applied and answer NOT_FOUND, with the message a missing job gets.
 */
export async function ackBatchInScope(
  engine: Engine,
  settles: readonly Ack[],
  caller: ScopedCaller,
): Promise<SettleOutcome[]> {
  if (caller.scope === null) return engine.ackBatch(settles);
  const visible = await Promise.all(
    settles.map((s) =>
      requireJobsInScope(caller, [s.jobId], (id) => queueOfJob(engine, id)).then(
        () => true,
        () => false,
      ),
    ),
  );
  const mine = settles.filter((_, i) => visible[i]);
  const applied = mine.length === 0 ? [] : await engine.ackBatch(mine);
  let next = 0;
  return settles.map((s, i): SettleOutcome => {
    const outcome = visible[i] ? applied[next++] : undefined;
    if (outcome !== undefined && (outcome.ok || outcome.code !== 'not_found')) return outcome;
    return { ok: false, code: 'not_found', message: notVisible('job', s.jobId).message };
  });
}
