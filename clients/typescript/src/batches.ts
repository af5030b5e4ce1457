/**
 * Batches (issue 33): a set of jobs with completion jobs — `onComplete` when the batch
 * ends, `onSuccess` only if every member completed, `onDeath` once when the first member
 * dies (while the rest may still run). Jobs are added while it is open
 * (and by its own running members once sealed, `fromMember`); it ends when it is sealed
 * and every member ended, and the server enqueues the completion jobs exactly once, in
 * the transaction that ends the last member. A completion job's payload is JSON:
 * `{ batch: { id, outcome, completed, dead, cancelled, members, membersOmitted }, data }`;
 * an `onDeath` job's `batch` also has `pending` and `firstDead: { jobId, error }`.
 *
 *   const { batch } = await client.createBatch({
 *     onComplete: { queue: 'reports', type: 'summarize', json: { day } },
 *     jobs: parts.map((part) => ({ queue: 'etl', type: 'part', json: { part } })),
 *     seal: true,
 *   });
 */
import { pageSizeArgument } from './arguments.ts';
import { type BatchAnswer, type BatchCalls, sendBatchMembers } from './batch-retries.ts';
import { type Connection, retrySafe } from './connection.ts';
import { jobFromSpec } from './convert.ts';
import { outcomeOf } from './enqueue-calls.ts';
import { SeppError } from './errors.ts';
import {
  BatchMemberState,
  type Batch as ProtoBatch,
  type BatchMember as ProtoBatchMember,
  BatchState as ProtoBatchState,
} from './gen/sepp/v1/batch.js';
import type { EnqueueJob } from './gen/sepp/v1/job.js';
import { JobState as ProtoJobState } from './gen/sepp/v1/job.js';
import type { CallOptions, JobSpec } from './job-types.ts';
import { edgeStateName, jobStateName } from './jobs.ts';
import { runningLease, runningTargets } from './running-members.ts';
import type { EnqueueOutcome, JobState } from './types.ts';

/** A new batch: its completion jobs, its first members, and whether it is sealed at once. */
export interface BatchSpec {
  /** Enqueued when the batch ends, whatever its members ended as. Its payload, if any, must be JSON. */
  onComplete?: JobSpec;
  /** Enqueued when the batch ends only if every member completed. */
  onSuccess?: JobSpec;
  /**
   * Enqueued once, when the first member dies (dead-lettered, attempts exhausted, expired),
   * in the transaction that counts that death: the rest of the batch may still run.
   */
  onDeath?: JobSpec;
  /** The first members, each on its own merits (as `enqueueBatch`). */
  jobs?: readonly JobSpec[];
  /** Seal the batch with these jobs. */
  seal?: boolean;
}

export type BatchState = 'open' | 'sealed' | 'ended';

export interface BatchInfo {
  id: string;
  state: BatchState;
  createdAt: Date;
  sealedAt: Date | null;
  endedAt: Date | null;
  /** Jobs ever added. */
  members: number;
  /** Members not ended yet. */
  pending: number;
  completed: number;
  dead: number;
  cancelled: number;
  hasOnComplete: boolean;
  hasOnSuccess: boolean;
  hasOnDeath: boolean;
  /** The on_complete job the end enqueued. */
  completeJobId: string | null;
  /** The on_success job the end enqueued (only if every member completed). */
  successJobId: string | null;
  /** The member whose death was counted first (null while none died). */
  firstDeadId: string | null;
  /** The on_death job the first death enqueued. */
  deathJobId: string | null;
  /** Why a completion job could not be enqueued (its queue refused it), or null. */
  completionError: string | null;
  /** The name of the API key that created it (`anonymous` on a server without keys). */
  owner: string;
}

/** Which batches `listBatches` returns, newest first. */
export interface BatchQuery {
  /** Only batches in this state. */
  state?: BatchState;
  /**
   * Only the batches of this API key (its name). Without it: every key's for an admin key,
   * your own for any other (another key's takes the admin role).
   */
  owner?: string;
  /** Batches per page, 1 to the server's `maxPageSize`; default 100. */
  pageSize?: number;
  /** `nextPageToken` of the page before. */
  pageToken?: string;
}

export interface BatchMember {
  jobId: string;
  position: number;
  /** How it ended (`pending` until then); a member counts once. */
  memberState: 'pending' | 'completed' | 'dead' | 'cancelled';
  /** Its job's state now; null once the job was swept. */
  jobState: JobState | null;
}

/** What creating or adding to a batch answered: the batch after it and one outcome per job. */
export interface BatchAdded {
  batch: BatchInfo;
  results: EnqueueOutcome[];
}

const states: Record<number, BatchState> = {
  [ProtoBatchState.OPEN]: 'open',
  [ProtoBatchState.SEALED]: 'sealed',
  [ProtoBatchState.ENDED]: 'ended',
};

const memberStates: Record<number, BatchMember['memberState']> = {
  [BatchMemberState.PENDING]: 'pending',
  [BatchMemberState.COMPLETED]: 'completed',
  [BatchMemberState.DEAD]: 'dead',
  [BatchMemberState.CANCELLED]: 'cancelled',
};

const dateOrNull = (ms: number): Date | null => (ms === 0 ? null : new Date(ms));

export function batchOf(batch: ProtoBatch | undefined): BatchInfo {
  if (batch === undefined) throw new TypeError('the server sent no batch');
  const state = states[batch.state];
  if (state === undefined) throw new TypeError(`the server sent an unknown batch state ${batch.state}`);
  return {
    id: batch.id,
    state,
    createdAt: new Date(batch.createdAtMs),
    sealedAt: dateOrNull(batch.sealedAtMs),
    endedAt: dateOrNull(batch.endedAtMs),
    members: batch.members,
    pending: batch.pending,
    completed: batch.completed,
    dead: batch.dead,
    cancelled: batch.cancelled,
    hasOnComplete: batch.hasOnComplete,
    hasOnSuccess: batch.hasOnSuccess,
    hasOnDeath: batch.hasOnDeath,
    completeJobId: batch.completeJobId || null,
    successJobId: batch.successJobId || null,
    firstDeadId: batch.firstDeadId || null,
    deathJobId: batch.deathJobId || null,
    completionError: batch.completionError || null,
    owner: batch.owner,
  };
}

const stateNumbers: Record<BatchState, ProtoBatchState> = {
  open: ProtoBatchState.OPEN,
  sealed: ProtoBatchState.SEALED,
  ended: ProtoBatchState.ENDED,
};

function memberOf(member: ProtoBatchMember): BatchMember {
  return {
    jobId: member.jobId,
    position: member.position,
    memberState: memberStates[member.memberState] ?? 'pending',
    jobState: member.jobState === ProtoJobState.UNSPECIFIED ? null : jobStateName(member.jobState),
  };
}

export async function createBatchCall(
  conn: Connection,
  spec: BatchSpec,
  options: CallOptions,
): Promise<BatchAdded> {
  const completions = {
    onComplete: spec.onComplete === undefined ? undefined : jobFromSpec(spec.onComplete),
    onSuccess: spec.onSuccess === undefined ? undefined : jobFromSpec(spec.onSuccess),
    onDeath: spec.onDeath === undefined ? undefined : jobFromSpec(spec.onDeath),
  };
  const calls: BatchCalls = {
    first: (jobs, seal, _repeatable, sealIfAllStored) =>
      conn.invoke(
        conn.rpc.createBatch,
        { ...completions, jobs, seal, sealIfAllStored },
        { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: false },
      ),
    again: (batchId, jobs) => addToBatchCall(conn, batchId, jobs, options, true),
  };
  const answer = await sendBatchMembers(conn, calls, (spec.jobs ?? []).map(jobFromSpec), {
    ...options,
    seal: spec.seal === true,
    create: true,
  });
  return { batch: batchOf(answer.batch), results: answer.results.map(outcomeOf) };
}

/** The request's fields the server names in its refusals of an add, as the proto spells them. */
const memberFieldNames = /\b(?:from_member_token|from_member_attempt|from_member|lease_token)\b/g;

/**
 * The server's refusal of an add with this SDK's names for the fields it names
 * (`from_member_token` → `fromMemberToken`, `lease_token` → the job's `leaseToken`).
 */
function inOptionNames(error: unknown): unknown {
  if (error instanceof SeppError) {
    error.message = error.message.replace(memberFieldNames, (name) =>
      name.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()),
    );
  }
  return error;
}

type AddOptions = CallOptions & { seal?: boolean; fromMember?: string; fromMemberToken?: string };
/** An add's options as sent: `sealIfAllStored` is batch-retries.ts's, never the caller's. */
type SentAddOptions = AddOptions & { sealIfAllStored?: boolean };

/** AddToBatch, with retries as batch-retries.ts says. */
export async function addToBatch(
  conn: Connection,
  batchId: string,
  jobs: readonly JobSpec[],
  options: AddOptions,
): Promise<BatchAdded> {
  const calls: BatchCalls = {
    first: (protoJobs, seal, repeatable, sealIfAllStored) =>
      addToBatchCall(conn, batchId, protoJobs, { ...options, seal, sealIfAllStored }, repeatable),
    again: (_, protoJobs) =>
      addToBatchCall(conn, batchId, protoJobs, { ...options, seal: false, sealIfAllStored: false }, true),
  };
  const answer = await sendBatchMembers(conn, calls, jobs.map(jobFromSpec), {
    ...options,
    seal: options.seal === true,
    create: false,
  });
  return { batch: batchOf(answer.batch), results: answer.results.map(outcomeOf) };
}

/** One AddToBatch call; `repeatable`: safe to repeat after UNAVAILABLE (every member keyed). */
async function addToBatchCall(
  conn: Connection,
  batchId: string,
  jobs: EnqueueJob[],
  options: SentAddOptions,
  repeatable: boolean,
): Promise<BatchAnswer> {
  const fromMember = options.fromMember ?? '';
  // A handler of the member running in this process proves it with its lease's token, sent only
  // to the target its worker leased it from (running-members.ts), never to another server.
  const lease = fromMember === '' ? undefined : runningLease(conn.target, fromMember);
  const token = fromMember === '' ? '' : (options.fromMemberToken ?? lease?.token ?? '');
  const answer = await conn
    .invoke(
      conn.rpc.addToBatch,
      {
        batchId,
        jobs,
        seal: options.seal === true,
        sealIfAllStored: options.sealIfAllStored === true,
        fromMember,
        // The lease's attempt too, which only a server older than lease tokens reads (running-members.ts).
        fromMemberAttempt: lease !== undefined && lease.token === token ? lease.attempt : 0,
        fromMemberToken: token,
      },
      { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: repeatable },
    )
    .catch((error: unknown) => {
      const refused = inOptionNames(error);
      // The SDK had nothing to prove the member with here: say why.
      if (
        fromMember !== '' &&
        options.fromMemberToken === undefined &&
        lease === undefined &&
        refused instanceof SeppError &&
        refused.code === 'permission_denied'
      )
        throw notRunningHere(conn.target, fromMember, refused);
      throw refused;
    });
  return answer;
}

/**
 * The server refused an add `fromMember` for which this client had no running lease to send
 * (neither token nor attempt): says why — the member's handler runs here on a worker of
 * another server, or not in this process.
 */
function notRunningHere(target: string, jobId: string, refused: SeppError): SeppError {
  const elsewhere = runningTargets(jobId);
  const why =
    elsewhere.length > 0
      ? `its handler runs in this process on a worker of sepp at ${elsewhere.join(', ')}, and its lease's ` +
        'token and attempt go only to the server that leased it: add through a client of that server'
      : 'no handler of it runs in this process, so the SDK has no lease token to send ' +
        '(fromMemberToken: job.leaseToken gives it)';
  return new SeppError(
    refused.grpcCode,
    `fromMember: member ${jobId} is not running on this client's server (sepp at ${target}): ${why}. ` +
      `The server answered: ${refused.message}`,
    { code: refused.code, retry: refused.retry, cause: refused },
  );
}

export async function sealBatchCall(
  conn: Connection,
  batchId: string,
  options: CallOptions,
): Promise<BatchInfo> {
  const answer = await conn.invoke(conn.rpc.sealBatch, { batchId }, retrySafe(options));
  return batchOf(answer.batch);
}

export async function getBatchCall(
  conn: Connection,
  batchId: string,
  options: CallOptions & { membersAfter?: number; membersLimit?: number },
): Promise<{ batch: BatchInfo; members: BatchMember[] }> {
  const answer = await conn.invoke(
    conn.rpc.getBatch,
    {
      batchId,
      membersAfter: options.membersAfter ?? 0,
      membersAfterSet: options.membersAfter !== undefined,
      membersLimit: options.membersLimit ?? 100,
    },
    retrySafe(options),
  );
  return { batch: batchOf(answer.batch), members: answer.members.map(memberOf) };
}

export async function listBatchesCall(
  conn: Connection,
  query: BatchQuery & CallOptions,
): Promise<{ batches: BatchInfo[]; nextPageToken: string | null }> {
  const answer = await conn.invoke(
    conn.rpc.listBatches,
    {
      state: query.state === undefined ? ProtoBatchState.UNSPECIFIED : stateNumbers[query.state],
      owner: query.owner ?? '',
      ownerSet: query.owner !== undefined,
      pageSize: pageSizeArgument(query.pageSize),
      pageToken: query.pageToken ?? '',
    },
    retrySafe(query),
  );
  return {
    batches: answer.batches.map(batchOf),
    nextPageToken: answer.nextPageToken === '' ? null : answer.nextPageToken,
  };
}

/** What cancelling a flow or a batch did. */
export interface WorkflowCancelled {
  /** Waiting, scheduled and ready jobs cancelled at once. */
  cancelled: number;
  /** Leased jobs whose workers were asked to stop (they end cancelled). */
  cancelRequested: number;
}

export async function cancelBatchCall(
  conn: Connection,
  batchId: string,
  options: CallOptions,
): Promise<WorkflowCancelled> {
  return conn.invoke(conn.rpc.cancelBatch, { batchId }, retrySafe(options));
}

/** A job of a flow (`getFlow`). */
export interface FlowNode {
  id: string;
  queue: string;
  type: string;
  state: JobState;
  /** Its name in the flow that stored it; null for a job no flow named (or from a server that does not say). */
  name: string | null;
}

/** An edge of a flow: `jobId` waits on `dependsOn`. */
export interface FlowEdge {
  jobId: string;
  dependsOn: string;
  state: 'pending' | 'completed' | 'failed';
  /** The depended-on job's name in the flow; null when named by id. */
  name: string | null;
}

/** A flow: every job connected to one through dependencies, either way, in enqueue order. */
export interface FlowGraph {
  jobs: FlowNode[];
  edges: FlowEdge[];
  /** More jobs than `limit` (or the answer's 4 MiB) holds, or may be: `edgesLimited`. */
  truncated: boolean;
  /**
   * The server's walk read as many edges as one read may (100,000) and stopped: a flow
   * that dense is shown in part, whatever `limit` asks.
   */
  edgesLimited: boolean;
}

export async function getFlowCall(
  conn: Connection,
  jobId: string,
  options: CallOptions & { limit?: number },
): Promise<FlowGraph> {
  const answer = await conn.invoke(
    conn.rpc.getFlow,
    { jobId, limit: options.limit ?? 0 },
    retrySafe(options),
  );
  return {
    jobs: answer.jobs.map((j) => ({
      id: j.jobId,
      queue: j.queue,
      type: j.type,
      state: jobStateName(j.state),
      name: j.name === '' ? null : j.name,
    })),
    edges: answer.edges.map((e) => ({
      jobId: e.jobId,
      dependsOn: e.dependsOn,
      state: edgeStateName(e.state),
      name: e.name || null,
    })),
    truncated: answer.truncated,
    edgesLimited: answer.edgesLimited,
  };
}

export async function cancelFlowCall(
  conn: Connection,
  jobId: string,
  options: CallOptions,
): Promise<WorkflowCancelled> {
  return conn.invoke(conn.rpc.cancelFlow, { jobId }, retrySafe(options));
}
