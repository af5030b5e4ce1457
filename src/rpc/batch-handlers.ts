/**
 * The batch RPCs of QueueService (batch.proto): create, add to, seal and read a batch.
 * Producers change batches, every role reads them; a key scoped to queues is refused
 * (queue-scope-rules.ts: a batch spans queues). Semantics live in the engine
 * (src/engine/batches).
 */
import {
  type Batch,
  BatchMemberState,
  BatchState,
  type BatchMember as ProtoBatchMember,
} from '../../clients/typescript/src/gen/sepp/v1/batch.js';
import type { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { flowLimitOf } from '../api-schema/workflow.ts';
import { batchCaller, ownerToList } from '../engine/batches/index.ts';
import { SeppError } from '../engine/errors.ts';
import { enqueuedBy } from '../engine/jobs/index.ts';
import type { EnqueueRequest } from '../engine/types.ts';
import type { BatchInfo, BatchMember } from '../engine/workflow-types.ts';
import { listAnswerBytes } from './answer-pages.ts';
import { rpcAudit } from './audit-input.ts';
import { creatorOf } from './auth.ts';
import {
  edgeStateToProto,
  enqueueRequestFromProto,
  enqueueResultToProto,
  jobStateToProto,
} from './convert.ts';
import { metadataTraceContext, withTraceContext } from './observer.ts';
import type { RpcContext } from './rpc-context.ts';
import { wireMessage } from './status.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireJobId } from './validate-fields.ts';

type BatchHandlers = Pick<
  QueueServiceServer,
  | 'createBatch'
  | 'addToBatch'
  | 'sealBatch'
  | 'getBatch'
  | 'listBatches'
  | 'cancelBatch'
  | 'getFlow'
  | 'cancelFlow'
>;

export function createBatchHandlers(ctx: RpcContext, unary: Unary): BatchHandlers {
  const { engine } = ctx;
  return {
    createBatch: unary('CreateBatch', 'enqueue', async (req, call, caller, observation) => {
      observation.annotate({ jobs: req.jobs.length });
      const fallback = observation.context ?? metadataTraceContext(call.metadata);
      const jobs = enqueuedBy(requests(req.jobs, fallback), creatorOf(caller));
      const { batch, results } = await engine.createBatch({
        ...(req.onComplete === undefined ? {} : { onComplete: enqueueRequestFromProto(req.onComplete) }),
        ...(req.onSuccess === undefined ? {} : { onSuccess: enqueueRequestFromProto(req.onSuccess) }),
        ...(req.onDeath === undefined ? {} : { onDeath: enqueueRequestFromProto(req.onDeath) }),
        jobs,
        seal: req.seal,
        sealIfAllStored: req.sealIfAllStored,
        owner: caller.name,
      });
      return { batch: batchToProto(batch), results: results.map(enqueueResultToProto) };
    }),

    addToBatch: unary('AddToBatch', 'enqueue', async (req, call, caller, observation) => {
      observation.annotate({ jobs: req.jobs.length });
      const fallback = observation.context ?? metadataTraceContext(call.metadata);
      const jobs = enqueuedBy(requests(req.jobs, fallback), creatorOf(caller));
      const { batch, results } = await engine.addToBatch(req.batchId, jobs, {
        seal: req.seal,
        sealIfAllStored: req.sealIfAllStored,
        // from_member_attempt is not read: it proves nothing (batch.proto); the token does.
        ...(req.fromMember === '' ? {} : { fromMember: req.fromMember, memberToken: req.fromMemberToken }),
        caller: batchCaller(caller),
      });
      return { batch: batchToProto(batch), results: results.map(enqueueResultToProto) };
    }),

    sealBatch: unary('SealBatch', 'enqueue', async (req, _call, caller) => ({
      batch: batchToProto(await engine.sealBatch(req.batchId, batchCaller(caller))),
    })),

    getBatch: unary('GetBatch', 'read', async (req) => {
      const { batch, members } = await engine.getBatch(req.batchId, {
        ...(req.membersAfterSet ? { afterPosition: req.membersAfter } : {}),
        limit: req.membersLimit,
      });
      return { batch: batchToProto(batch), members: members.map(memberToProto) };
    }),

    listBatches: unary('ListBatches', 'read', async (req, _call, caller) => {
      const state = batchStateFromProto(req.state);
      const owner = ownerToList(batchCaller(caller), req.ownerSet ? req.owner : undefined);
      const page = await engine.listBatches({
        ...(state === undefined ? {} : { state }),
        ...(owner === undefined ? {} : { owner }),
        pageSize: req.pageSize,
        cursor: req.pageToken,
      });
      return { batches: page.batches.map(batchToProto), nextPageToken: page.nextCursor ?? '' };
    }),

    cancelBatch: unary('CancelBatch', 'admin', async (req, call, caller) => {
      const batchId = requireJobId(req.batchId, 'batch_id');
      const audit = rpcAudit(ctx, caller, call.metadata, 'batch.cancel', `batch:${batchId}`);
      return engine.cancelBatch(batchId, audit);
    }),

    // Flows: a job's dependency graph, both ways (control/workflow-cancel.ts).
    getFlow: unary('GetFlow', 'read', async (req) => {
      const flow = await engine.getFlow(
        requireJobId(req.jobId),
        flowLimitOf(req.limit),
        listAnswerBytes(ctx.facts.maxMessageBytes),
      );
      return {
        jobs: flow.jobs.map((j) => ({
          jobId: j.id,
          queue: j.queue,
          type: j.type,
          state: jobStateToProto(j.state),
          name: j.name ?? '',
        })),
        edges: flow.edges.map((e) => ({
          jobId: e.jobId,
          dependsOn: e.dependsOn,
          state: edgeStateToProto[e.state],
          name: e.name ?? '',
        })),
        truncated: flow.truncated,
        edgesLimited: flow.edgesLimited,
      };
    }),

    cancelFlow: unary('CancelFlow', 'admin', async (req, call, caller) => {
      const jobId = requireJobId(req.jobId);
      const audit = rpcAudit(ctx, caller, call.metadata, 'flow.cancel', `job:${jobId}`);
      return engine.cancelFlow(jobId, audit);
    }),
  };
}

function requests(
  jobs: readonly EnqueueJob[],
  fallback: ReturnType<typeof metadataTraceContext>,
): EnqueueRequest[] {
  const converted = jobs.map(enqueueRequestFromProto);
  if (fallback !== undefined) for (const request of converted) withTraceContext(request, fallback);
  return converted;
}

const batchStates = {
  open: BatchState.OPEN,
  sealed: BatchState.SEALED,
  ended: BatchState.ENDED,
} as const;

/** A state filter: UNSPECIFIED is none; a number no state has is INVALID_ARGUMENT. */
function batchStateFromProto(state: BatchState): BatchInfo['state'] | undefined {
  if (state === BatchState.UNSPECIFIED) return undefined;
  const name = (Object.keys(batchStates) as BatchInfo['state'][]).find((key) => batchStates[key] === state);
  if (name === undefined) throw new SeppError('invalid_argument', `state: ${state} is no batch state`);
  return name;
}

const memberStates = {
  pending: BatchMemberState.PENDING,
  completed: BatchMemberState.COMPLETED,
  dead: BatchMemberState.DEAD,
  cancelled: BatchMemberState.CANCELLED,
} as const;

export function batchToProto(batch: BatchInfo): Batch {
  return {
    id: batch.id,
    state: batchStates[batch.state],
    createdAtMs: batch.createdAtMs,
    sealedAtMs: batch.sealedAtMs ?? 0,
    endedAtMs: batch.endedAtMs ?? 0,
    members: batch.members,
    pending: batch.pending,
    completed: batch.completed,
    dead: batch.dead,
    cancelled: batch.cancelled,
    hasOnComplete: batch.hasOnComplete,
    hasOnSuccess: batch.hasOnSuccess,
    completeJobId: batch.completeJobId ?? '',
    successJobId: batch.successJobId ?? '',
    // Cut as every message is (status.ts): a CreateBatch's or AddToBatch's answer has room kept for it.
    completionError: wireMessage({ message: batch.completionError ?? '' }),
    owner: batch.owner,
    hasOnDeath: batch.hasOnDeath,
    firstDeadId: batch.firstDeadId ?? '',
    deathJobId: batch.deathJobId ?? '',
  };
}

function memberToProto(member: BatchMember & { position: number }): ProtoBatchMember {
  return {
    jobId: member.jobId,
    position: member.position,
    memberState: memberStates[member.memberState],
    jobState: member.jobState === null ? JobState.UNSPECIFIED : jobStateToProto(member.jobState),
  };
}
