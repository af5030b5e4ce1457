/**
 * The unary RPCs of QueueService: authorize, check the fields the engine does
 * not see, call the engine, convert the result. Semantics live in the engine.
 * This file wraps every unary call and holds enqueue, work, GetJob and the
 * server's own calls; listings, queue admin, job control, bulk operations and
 * schedules are composed in from files of their own.
 */
import type { ServerUnaryCall } from '@grpc/grpc-js';
import { DurabilityMode, type StoreInfo } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { type EnqueueJob, Job } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { type AckBatchRequest, SettleOutcome } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { protocolFeatures } from '../api-schema/protocol-features.ts';
import { ackBatchInScope, leaseScope, scopeJobLinks } from '../config/index.ts';
import { SeppError, toSeppError } from '../engine/errors.ts';
import { enqueuedBy } from '../engine/jobs/index.ts';
import type { EnqueueRequest as EngineEnqueueRequest, LeasedJob } from '../engine/types.ts';
import { type StoreDescription, storeKindOnly } from '../store/store.ts';
import { defaultAnswerBytes } from './answer-pages.ts';
import { rpcAudit } from './audit-input.ts';
import { type Caller, creatorOf } from './auth.ts';
import { createBatchHandlers } from './batch-handlers.ts';
import { createBulkHandlers } from './bulk-handlers.ts';
import { answerUnary, type BugReporter, reportIfBug } from './call-guard.ts';
import { createControlHandlers } from './control-handlers.ts';
import {
  acceptedToProto,
  ackFromProto,
  atomicRejectionToProto,
  enqueueRequestFromProto,
  enqueueResultToProto,
  jobStateToProto,
  jobToProto,
  leasedJobToProto,
  nackDirectiveFromProto,
  progressReportFromProto,
  progressToProto,
  queueSettingsToProto,
} from './convert.ts';
import { enqueueFlowFromProto } from './enqueue-flow.ts';
import { createListHandlers } from './list-handlers.ts';
import {
  isTraceparent,
  metadataTraceContext,
  type RpcCallObservation,
  type TraceContext,
  unobserved,
  withTraceContext,
} from './observer.ts';
import { createQueueAdminHandlers } from './queue-admin-handlers.ts';
import { checkUnaryScope, hideUnaryNotFound } from './queue-scope-rules.ts';
import { admit, MalformedRequest, type OpenStream, type RpcContext } from './rpc-context.ts';
import { createScheduleHandlers } from './schedule-handlers.ts';
import { wireMessage } from './status.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireAttempt, requireJobId } from './validate-fields.ts';

type UnaryHandlers = Omit<QueueServiceServer, 'produce' | 'work' | 'backup' | 'events'>;

const settleOutcomeToProto = {
  not_found: SettleOutcome.NOT_FOUND,
  lease_lost: SettleOutcome.LEASE_LOST,
  job_cancelled: SettleOutcome.CANCELLED,
} as const;

export function createUnaryHandlers(ctx: RpcContext, onBug: BugReporter): UnaryHandlers {
  const { engine } = ctx;

  /**
   * Every unary RPC goes through here: drain check, authorization, malformed
   * requests, the answer (call-guard.ts turns any failure into its status) —
   * and one observation per call for telemetry. `parentOf` names a trace
   * context the request itself carries (Enqueue's job); otherwise the call's
   * `traceparent` metadata is the parent.
   */
  const unary: Unary = (rpc, permission, fn, parentOf) => (call, callback) => {
    let observation = unobserved;
    let callerName: string | undefined;
    void answerUnary(
      rpc,
      onBug,
      callback,
      () => {
        observation = observe(rpc, call, parentOf);
        const caller = admit(ctx, call.metadata, permission, rpc);
        callerName = caller.name;
        const request: unknown = call.request;
        if (request instanceof MalformedRequest) throw new SeppError('invalid_argument', request.message);
        const answer = () => {
          if (caller.scope === null) return fn(call.request, call, caller, observation);
          return checkUnaryScope(engine, rpc, request, caller)
            .then(() => fn(call.request, call, caller, observation))
            .catch((error: unknown) => {
              throw hideUnaryNotFound(rpc, request, error);
            });
        };
        if (permission !== 'read' || rpc === 'GetServerInfo') return answer();
        // A read call counts toward its key's share of the store's read queue (engine/read-shares.ts);
        // GetServerInfo reads nothing of the store, so it is never refused for it.
        const leave = engine.enterRead(caller.name);
        return Promise.resolve().then(answer).finally(leave);
      },
      // An answer the admission interceptor refused (refused-answers.ts) ends with the client's code.
      (code) => observation.end(ctx.refusedAnswers.codeOf(call.metadata) ?? code, callerName),
    );
  };

  /**
   * A Reserve's jobs whose answer was refused (refused-answers.ts): nobody got them, so their
   * leases are undone now instead of ending when they run out: each job, fenced by its attempt,
   * is ready again at its place with its attempt given back and no failure recorded (a job on
   * its last attempt runs again, it is not dead-lettered).
   */
  const giveBackUnsent = (jobs: readonly LeasedJob[], callerName: string) => {
    ctx.answerRefusals.givenBack(callerName);
    engine
      .undoLeases(jobs.map((job) => ({ jobId: job.id, attempt: job.attempt })))
      // Ended meanwhile (shutting down): the leases run out instead. Only a bug is told.
      .catch((error: unknown) => reportIfBug(toSeppError(error), 'Reserve (giving back jobs)', onBug));
  };

  function observe<Req, Res>(
    rpc: string,
    call: ServerUnaryCall<Req, Res>,
    parentOf: ((request: Req) => TraceContext | undefined) | undefined,
  ): RpcCallObservation {
    const observer = ctx.observer;
    if (observer === undefined) return unobserved;
    const request: unknown = call.request;
    const own =
      parentOf === undefined || request instanceof MalformedRequest ? undefined : parentOf(call.request);
    return observer.callStarted({ method: rpc, parent: own ?? metadataTraceContext(call.metadata) });
  }

  return {
    ...createScheduleHandlers(ctx, unary),
    ...createControlHandlers(ctx, unary),
    ...createBulkHandlers(ctx, unary),
    ...createListHandlers(ctx, unary),
    ...createQueueAdminHandlers(ctx, unary),
    ...createBatchHandlers(ctx, unary),

    enqueue: unary(
      'Enqueue',
      'enqueue',
      async (req, call, caller, observation) => {
        if (req.job === undefined) throw new SeppError('invalid_argument', 'job: required');
        const job = enqueueRequestFromProto(req.job);
        enqueuedBy([job], creatorOf(caller));
        observation.annotate({ queue: job.queue, type: job.type });
        const fallback = observation.context ?? metadataTraceContext(call.metadata);
        const accepted = await engine.enqueue(withTraceContext(job, fallback));
        observation.annotate({ jobId: accepted.jobId });
        return acceptedToProto(accepted);
      },
      // The producer's context travels in the job; the server span continues it.
      (req) =>
        req.job !== undefined && isTraceparent(req.job.traceparent)
          ? { traceparent: req.job.traceparent, tracestate: req.job.tracestate || undefined }
          : undefined,
    ),

    enqueueBatch: unary('EnqueueBatch', 'enqueue', async (req, call, caller, observation) => {
      observation.annotate({ jobs: req.jobs.length });
      const results = await engine.enqueueBatch(
        enqueueRequestsFromProto(req.jobs, call, caller, observation),
      );
      return { results: results.map(enqueueResultToProto) };
    }),

    enqueueAtomic: unary('EnqueueAtomic', 'enqueue', async (req, call, caller, observation) => {
      observation.annotate({ jobs: req.jobs.length });
      const result = await engine.enqueueAtomic(
        enqueueRequestsFromProto(req.jobs, call, caller, observation),
      );
      return result.committed
        ? { committed: true, results: result.results.map(acceptedToProto), rejections: [] }
        : {
            committed: false,
            results: [],
            rejections: result.rejections.map(atomicRejectionToProto),
          };
    }),

    enqueueFlow: unary('EnqueueFlow', 'enqueue', (req, call, caller, observation) => {
      observation.annotate({ jobs: req.jobs.length });
      const fallback = observation.context ?? metadataTraceContext(call.metadata);
      return enqueueFlowFromProto(engine, req, fallback, creatorOf(caller));
    }),

    reserve: unary('Reserve', 'work', async (req, call, caller, observation) => {
      // A caller that goes away stops waiting at once; its waiter is freed and no job is leased to it.
      const abort = new AbortController();
      call.on('cancelled', () => abort.abort());
      if (call.cancelled) abort.abort();
      // A reload that revokes the key (or changes its queues) stops the wait and answers why, as it
      // ends the key's streams: a revoked key is not handed a job in the minute its wait may last.
      let revoked: SeppError | undefined;
      const waiting: OpenStream = {
        // Shutdown answers every waiting reserve (engine.drainWaiters).
        endForShutdown: () => {},
        access: { metadata: call.metadata, permission: 'work', rpc: 'Reserve', scope: caller.scope },
        endWith: (error) => {
          revoked = error;
          abort.abort();
        },
      };
      ctx.streams.add(waiting);
      let jobs: Awaited<ReturnType<typeof engine.reserve>>;
      try {
        jobs = await engine.reserve(
          {
            queues: req.queues,
            maxJobs: req.maxJobs,
            leaseMs: req.leaseDurationMs,
            waitMs: req.waitTimeoutMs,
            workerId: req.workerId,
            answerBytesMax: reserveAnswerBytes(req.maxResponseBytes, ctx.facts.maxMessageBytes),
            ...(ctx.auth.enabled ? { owner: caller.name } : {}),
            ...leaseScope(caller),
          },
          abort.signal,
        );
      } finally {
        ctx.streams.delete(waiting);
      }
      if (revoked !== undefined) throw revoked;
      // Listed once the request proved valid (the engine checked the queues and the worker id).
      engine.workers.touch({ workerId: req.workerId, address: call.getPeer(), queues: req.queues });
      observation.leased(jobs);
      if (jobs.length > 0)
        ctx.refusedAnswers.onRefused(call.metadata, () => giveBackUnsent(jobs, caller.name));
      return { jobs: jobs.map(leasedJobToProto) };
    }),

    ack: unary('Ack', 'work', async (req, _call, _caller, observation) => {
      observation.annotate({ jobId: req.jobId, attempt: req.attempt });
      await engine.ack(ackFromProto(req, requireJobId(req.jobId), requireAttempt(req.attempt)));
      return {};
    }),

    ackBatch: unary('AckBatch', 'work', async (req: AckBatchRequest, _call, caller, observation) => {
      observation.annotate({ jobs: req.acks.length });
      const settles = req.acks.map((a, i) =>
        ackFromProto(a, requireJobId(a.jobId, `acks[${i}].job_id`), requireAttempt(a.attempt)),
      );
      if (settles.length === 0) throw new SeppError('invalid_argument', 'acks: the batch is empty');
      const outcomes = await ackBatchInScope(engine, settles, caller);
      return {
        results: outcomes.map((o) =>
          o.ok
            ? { outcome: SettleOutcome.OK, message: '' }
            : { outcome: settleOutcomeToProto[o.code], message: wireMessage(o) },
        ),
      };
    }),

    nack: unary('Nack', 'work', async (req, _call, _caller, observation) => {
      observation.annotate({ jobId: req.jobId, attempt: req.attempt });
      const result = await engine.nack({
        jobId: requireJobId(req.jobId),
        attempt: requireAttempt(req.attempt),
        error: req.errorMessage,
        errorClass: req.errorClass,
        stack: req.errorStack,
        directive: nackDirectiveFromProto(req),
      });
      return { state: jobStateToProto(result.state), runAtMs: result.runAtMs ?? 0 };
    }),

    extend: unary('Extend', 'work', async (req, _call, _caller, observation) => {
      observation.annotate({ jobId: req.jobId, attempt: req.attempt });
      return engine.extend({
        jobId: requireJobId(req.jobId),
        attempt: requireAttempt(req.attempt),
        leaseMs: req.leaseDurationMs,
      });
    }),

    reportProgress: unary('ReportProgress', 'work', async (req, _call, _caller, observation) => {
      observation.annotate({ jobId: req.jobId, attempt: req.attempt });
      const progress = await engine.reportProgress(
        progressReportFromProto(req, requireJobId(req.jobId), requireAttempt(req.attempt)),
      );
      return { progress: progressToProto(progress) };
    }),

    getJob: unary('GetJob', 'read', async (req, _call, caller, observation) => {
      observation.annotate({ jobId: req.jobId });
      const job = scopeJobLinks(caller, await engine.getJob(requireJobId(req.jobId)));
      observation.annotate({ queue: job.queue, type: job.type, attempt: job.attempt });
      return { job: fitJobAnswer(jobToProto(job, true), ctx.facts.maxMessageBytes) };
    }),

    getServerInfo: unary('GetServerInfo', 'read', (_req, _call, caller) => {
      const { facts } = ctx;
      const identity = facts.identity();
      const store = engine.storeDescription();
      const runsServers = seesServers(caller);
      return {
        version: facts.version,
        gitCommit: facts.gitCommit,
        durability: facts.durability === 'full' ? DurabilityMode.FULL : DurabilityMode.RELAXED,
        serverTimeMs: facts.nowMs(),
        startedAtMs: facts.startedAtMs,
        limits: {
          ...engine.limits,
          maxMessageBytes: facts.maxMessageBytes,
          maxConnections: facts.grpcLimits.maxConnections,
          maxStreamsPerConnection: facts.grpcLimits.maxStreamsPerConnection,
          handshakeTimeoutMs: facts.grpcLimits.handshakeTimeoutMs,
          idleTimeoutMs: facts.grpcLimits.idleTimeoutMs,
          keepaliveMs: facts.grpcLimits.keepaliveMs,
          keepaliveTimeoutMs: facts.grpcLimits.keepaliveTimeoutMs,
          firstMessageTimeoutMs: facts.grpcLimits.firstMessageTimeoutMs,
          maxEventSubscribersPerKey: facts.grpcLimits.maxEventSubscribersPerKey,
          maxBytesInFlightPerConnection: facts.grpcLimits.maxBytesInFlightPerConnection,
          maxBytesInFlightPerKey: facts.grpcLimits.maxBytesInFlightPerKey,
        },
        queueDefaults: queueSettingsToProto(engine.options.queueDefaults),
        strictQueues: engine.options.strictQueues,
        // Where the store is, its replication and bounds: like the identity, for the callers that run
        // the servers; any other learns its kind alone (the rest empty, as for SQLite).
        store: storeToProto(runsServers ? store : storeKindOnly(store.kind)),
        // Absent (every field empty in the SDKs) for a caller that may not see the servers.
        ...(runsServers ? { identity: { ...identity, httpAddress: identity.httpAddress ?? '' } } : {}),
        features: [...protocolFeatures],
      };
    }),

    reloadConfig: unary('ReloadConfig', 'admin', async (req, call, caller) => {
      if (ctx.reloadConfig === undefined) {
        throw new SeppError(
          'failed_precondition',
          'this server cannot reload its configuration (it was not started by `sepp serve`)',
        );
      }
      const { actor, details } = rpcAudit(ctx, caller, call.metadata, 'config.reload', 'config');
      const via = typeof details?.via === 'string' ? details.via : undefined;
      const report = await ctx.reloadConfig({
        dryRun: req.dryRun,
        allowSecurityDowngrade: req.allowSecurityDowngrade,
        actor,
        ...(via === undefined ? {} : { via }),
      });
      return {
        ...report,
        configFile: report.configFile ?? '',
        changes: report.changes.map(({ key, values, summary, restartRequired }) => ({
          key,
          oldValue: values?.from ?? '',
          newValue: values?.to ?? '',
          summary: summary ?? '',
          restartRequired,
        })),
      };
    }),
  };
}

/**
 * Whether GetServerInfo names the process that answered to `caller` (its `identity`: host name,
 * pid, the addresses it bound) and says where its store is (host, database, schema, replication,
 * bounds): an admin key for every queue — the key operators run `sepp status` and reloads with. A
 * producer, a worker and a key scoped to queues learn nothing of the machines they reach but the
 * store's kind (least privilege: docs/protocol.md, SECURITY.md).
 */
function seesServers(caller: Caller): boolean {
  return caller.role === 'admin' && caller.scope === null;
}

/** A batch's jobs, each carrying its own trace context or, failing that, the call's, and the caller's key. */
function enqueueRequestsFromProto<Req, Res>(
  jobs: readonly EnqueueJob[],
  call: ServerUnaryCall<Req, Res>,
  caller: Caller,
  observation: RpcCallObservation,
): EngineEnqueueRequest[] {
  const requests = enqueuedBy(jobs.map(enqueueRequestFromProto), creatorOf(caller));
  const fallback = observation.context ?? metadataTraceContext(call.metadata);
  if (fallback !== undefined) for (const request of requests) withTraceContext(request, fallback);
  return requests;
}

/** A store's description as GetServerInfo answers it: empty strings for what does not apply. */
function storeToProto(store: StoreDescription): StoreInfo {
  return {
    kind: store.kind,
    host: store.host ?? '',
    database: store.database ?? '',
    schema: store.schema ?? '',
    signalsConnected: store.signalsConnected ?? false,
    replication: store.replication ?? '',
    standbys: store.standbys ?? 0,
    poolSize: store.poolSize ?? 0,
    maxWaitingReads: store.maxWaitingReads ?? 0,
    maxWaitingReadsPerKey: store.maxWaitingReadsPerKey ?? 0,
    statementTimeoutMs: store.statementTimeoutMs ?? 0,
  };
}

/** The budget of a unary reserve's answer: the caller's `max_response_bytes` (0: 4 MiB), at most what the server may send. */
function reserveAnswerBytes(askedBytes: number, maxMessageBytes: number): number {
  if (!Number.isSafeInteger(askedBytes) || askedBytes < 0) {
    throw new SeppError(
      'invalid_argument',
      `max_response_bytes is ${askedBytes}; it must be 0 or a positive integer`,
    );
  }
  return Math.min(askedBytes === 0 ? defaultAnswerBytes : askedBytes, maxMessageBytes);
}

/**
 * A job for GetJob, which sends its payload, result and error history whole: when
 * they are more than the server may send in one message (each was within limits,
 * together they need not be), the call fails with a RESOURCE_EXHAUSTED that says
 * so and by how much, not with the transport's "message larger than max".
 */
function fitJobAnswer(job: Job, maxMessageBytes: number): Job {
  const bytes = Job.encode(job).finish().length + 16;
  if (bytes <= maxMessageBytes) return job;
  const errorBytes = job.errors.reduce((sum, e) => sum + Buffer.byteLength(e.error), 0);
  throw new SeppError(
    'resource_exhausted',
    `job ${job.jobId} is ${bytes} bytes as an answer (payload ${job.payload.length}, result ${job.result?.data.length ?? 0}, ` +
      `error history ${errorBytes}), more than grpc.max_message_bytes (${maxMessageBytes}) lets the server send; ` +
      "raise it (and the client's receive limit) to read the job whole",
  );
}
