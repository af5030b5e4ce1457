/**
 * Produce: a bidirectional stream of enqueue batches and flows. Each message is
 * enqueued (best effort, atomic, or one or several flows, each as EnqueueFlow
 * does it: enqueue-flow.ts) and answered with its sequence number once the commit is
 * durable. Answers go out in arrival order; a message's own error
 * travels in its answer's `code`/`message` and the stream stays open.
 *
 * Back-pressure: at most `maxPendingMessages` messages are in flight per
 * stream, and answers the client has not read stop the reading too (ReadGate).
 */
import { type handleBidiStreamingCall, status } from '@grpc/grpc-js';
import type { EnqueueFlowRequest } from '../../clients/typescript/src/gen/sepp/v1/flow.js';
import type {
  ProduceFlowAnswer,
  ProduceRequest,
  ProduceResponse,
} from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { refuseDependencies, requireInScope } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';
import { enqueuedBy } from '../engine/jobs/index.ts';
import { type Caller, creatorOf } from './auth.ts';
import { attempt, type BugReporter, type GuardedCall, guardBidi, reportIfBug } from './call-guard.ts';
import {
  acceptedToProto,
  atomicRejectionToProto,
  enqueueRequestFromProto,
  enqueueResultToProto,
} from './convert.ts';
import { enqueueFlowFromProto } from './enqueue-flow.ts';
import { ReadGate } from './flow-control.ts';
import {
  metadataTraceContext,
  type RpcCallObservation,
  type TraceContext,
  unobserved,
  withTraceContext,
} from './observer.ts';
import { checkEnqueueScope } from './queue-scope-rules.ts';
import { admit, MalformedRequest, type OpenStream, type RpcContext } from './rpc-context.ts';
import { wireMessage, wireRetry } from './status.ts';

const maxPendingMessages = 64;
/** Most flows in one message (`flows`): each is answered on its own, so the answer grows with them. */
const maxFlowsPerMessage = 64;

export function createProduceHandler(
  ctx: RpcContext,
  onBug: BugReporter,
): handleBidiStreamingCall<ProduceRequest, ProduceResponse> {
  return guardBidi<ProduceRequest | MalformedRequest, ProduceResponse>('Produce', onBug, (call) => {
    produce(ctx, call, admit(ctx, call.metadata, 'enqueue', 'Produce'), onBug);
  });
}

function produce(
  ctx: RpcContext,
  call: GuardedCall<ProduceRequest | MalformedRequest, ProduceResponse>,
  caller: Caller,
  onBug: BugReporter,
): void {
  // One trace context per stream (its metadata); each message is its own observed call.
  const streamContext = metadataTraceContext(call.metadata);
  /** Settles once every answer so far is written; never rejects (`call.spawn`). */
  let pending: Promise<unknown> = Promise.resolve();
  let inFlight = 0;
  /**
   * Payload bytes of the messages read and not yet answered. The bytes in flight
   * of the connection (admission) count a message until grpc-js hands it over;
   * from then on this stream stops reading while it holds more than that much.
   */
  let inFlightBytes = 0;
  const maxInFlightBytes = ctx.facts.grpcLimits.maxBytesInFlightPerConnection;
  const gate = new ReadGate(call);
  const stream: OpenStream = {
    endForShutdown: () => call.fail(new SeppError('unavailable', 'sepp is shutting down')),
    access: { metadata: call.metadata, permission: 'enqueue', rpc: 'Produce', scope: caller.scope },
    endWith: (error) => call.fail(error),
  };
  ctx.streams.add(stream);
  call.onFinish(() => ctx.streams.delete(stream));
  call.on('end', () => {
    // The client is done sending: answer what is in flight, then close with OK.
    const answered = pending;
    void call.spawn(async () => {
      await answered;
      call.end();
    });
  });

  call.on('data', (message) => {
    if (call.closed) return;
    const sequence = message instanceof MalformedRequest ? sequenceOf(message) : message.sequence;
    const observation =
      ctx.observer === undefined
        ? unobserved
        : ctx.observer.callStarted({
            method: 'Produce',
            streamMessage:
              message instanceof MalformedRequest ||
              (message.flow === undefined && message.flows === undefined)
                ? 'batch'
                : 'flow',
            parent: streamContext,
          });
    // Started now (so the engine sees messages in arrival order); its failure is its answer.
    const answer = attempt(() => enqueueMessage(ctx, message, caller, observation, streamContext, onBug));
    const bytes = message instanceof MalformedRequest ? 0 : payloadBytes(message);
    inFlight++;
    inFlightBytes += bytes;
    if (inFlight >= maxPendingMessages || inFlightBytes >= maxInFlightBytes) gate.setRequestsBlocked(true);
    // Answers leave in arrival order even when a later message fails faster.
    const previous = pending;
    pending = call.spawn(async () => {
      await previous;
      const outcome = await answer;
      if (!outcome.ok) reportIfBug(outcome.error, 'Produce', onBug);
      const response: ProduceResponse = outcome.ok
        ? outcome.value
        : {
            sequence,
            code: outcome.code,
            message: wireMessage(outcome.error),
            results: [],
            retry: wireRetry(outcome.error),
          };
      inFlight--;
      inFlightBytes -= bytes;
      gate.write(response);
      observation.end(response.code, caller.name);
      if (inFlight < maxPendingMessages / 2 && inFlightBytes < maxInFlightBytes / 2)
        gate.setRequestsBlocked(false);
    });
  });
}

/** The payloads a message carries (its jobs', its flow's), which is what makes one large. */
function payloadBytes(message: ProduceRequest): number {
  let bytes = message.jobs.reduce((sum, job) => sum + job.payload.length, 0);
  if (message.flow !== undefined) bytes += flowPayloadBytes(message.flow);
  if (message.flows !== undefined) for (const flow of message.flows.flows) bytes += flowPayloadBytes(flow);
  return bytes;
}

function flowPayloadBytes(flow: EnqueueFlowRequest): number {
  return flow.jobs.reduce((sum, flowJob) => sum + (flowJob.job?.payload.length ?? 0), 0);
}

/** The sequence of a message refused for its content; 0 when its bytes did not decode at all. */
function sequenceOf(malformed: MalformedRequest): number {
  const decoded = malformed.decoded;
  if (typeof decoded !== 'object' || decoded === null || !('sequence' in decoded)) return 0;
  return typeof decoded.sequence === 'number' ? decoded.sequence : 0;
}

async function enqueueMessage(
  ctx: RpcContext,
  message: ProduceRequest | MalformedRequest,
  caller: Caller,
  observation: RpcCallObservation,
  streamContext: TraceContext | undefined,
  onBug: BugReporter,
): Promise<ProduceResponse> {
  if (message instanceof MalformedRequest) throw new SeppError('invalid_argument', message.message);
  if (message.flow !== undefined)
    return enqueueFlowMessage(ctx, message, message.flow, caller, observation, streamContext);
  if (message.flows !== undefined)
    return enqueueFlowsMessage(ctx, message, caller, observation, streamContext, onBug);
  observation.annotate({ jobs: message.jobs.length });
  requireInScope(
    caller,
    message.jobs.map((job, i) => ({ queue: job.queue, field: `jobs[${i}].queue` })),
  );
  refuseDependencies(caller, message.jobs);
  const jobs = enqueuedBy(message.jobs.map(enqueueRequestFromProto), creatorOf(caller));
  const fallback = observation.context ?? streamContext;
  if (fallback !== undefined) for (const job of jobs) withTraceContext(job, fallback);
  if (message.atomic) {
    const result = await ctx.engine.enqueueAtomic(jobs);
    return {
      sequence: message.sequence,
      code: status.OK,
      message: '',
      results: [],
      retry: '',
      atomic: result.committed
        ? { committed: true, results: result.results.map(acceptedToProto), rejections: [] }
        : {
            committed: false,
            results: [],
            rejections: result.rejections.map(atomicRejectionToProto),
          },
    };
  }
  const results = await ctx.engine.enqueueBatch(jobs);
  return {
    sequence: message.sequence,
    code: status.OK,
    message: '',
    results: results.map(enqueueResultToProto),
    retry: '',
  };
}

/**
 * A message's flow: EnqueueFlow's checks after the stream's authentication (the
 * key's queue scope by the unary call's own rule, then the engine's fields and
 * limits), and its answer in `flow`. Reaches the engine in the tick it arrived,
 * as a batch does.
 */
async function enqueueFlowMessage(
  ctx: RpcContext,
  message: ProduceRequest,
  flow: EnqueueFlowRequest,
  caller: Caller,
  observation: RpcCallObservation,
  streamContext: TraceContext | undefined,
): Promise<ProduceResponse> {
  if (message.jobs.length > 0 || message.atomic || message.flows !== undefined) {
    throw new SeppError(
      'invalid_argument',
      `flow: a message carries either jobs (with atomic) or a flow, never both; this one has a flow and ${
        message.jobs.length > 0 ? `${message.jobs.length} jobs` : message.atomic ? 'atomic set' : 'flows'
      }`,
    );
  }
  observation.annotate({ jobs: flow.jobs.length });
  checkEnqueueScope('EnqueueFlow', flow, caller);
  const fallback = observation.context ?? streamContext;
  const answer = await enqueueFlowFromProto(ctx.engine, flow, fallback, creatorOf(caller));
  return { sequence: message.sequence, code: status.OK, message: '', results: [], flow: answer, retry: '' };
}

/**
 * A message's flows (issue 33): each as `flow` alone is, checked, stored or refused
 * on its own, all handed to the engine in the tick the message arrived (so they
 * share a commit) and answered in order, each with its own status.
 */
async function enqueueFlowsMessage(
  ctx: RpcContext,
  message: ProduceRequest,
  caller: Caller,
  observation: RpcCallObservation,
  streamContext: TraceContext | undefined,
  onBug: BugReporter,
): Promise<ProduceResponse> {
  const flows = message.flows?.flows ?? [];
  if (message.jobs.length > 0 || message.atomic) {
    throw new SeppError(
      'invalid_argument',
      `flows: a message carries either jobs (with atomic) or flows, never both; this one has ${flows.length} flows and ${
        message.jobs.length > 0 ? `${message.jobs.length} jobs` : 'atomic set'
      }`,
    );
  }
  if (flows.length === 0) throw new SeppError('invalid_argument', 'flows: no flow in the message');
  if (flows.length > maxFlowsPerMessage) {
    throw SeppError.tooLarge(
      `flows: at most ${maxFlowsPerMessage} flows in one message; this one has ${flows.length}: split them over several messages`,
    );
  }
  observation.annotate({ jobs: flows.reduce((sum, flow) => sum + flow.jobs.length, 0) });
  const fallback = observation.context ?? streamContext;
  const outcomes = await Promise.all(
    flows.map((flow) =>
      attempt(() => {
        checkEnqueueScope('EnqueueFlow', flow, caller);
        return enqueueFlowFromProto(ctx.engine, flow, fallback, creatorOf(caller));
      }),
    ),
  );
  const answers = outcomes.map((outcome): ProduceFlowAnswer => {
    if (outcome.ok) return { code: status.OK, message: '', flow: outcome.value, retry: '' };
    reportIfBug(outcome.error, 'Produce', onBug);
    return {
      code: outcome.code,
      message: wireMessage(outcome.error),
      flow: undefined,
      retry: wireRetry(outcome.error),
    };
  });
  return {
    sequence: message.sequence,
    code: status.OK,
    message: '',
    results: [],
    flows: { answers },
    retry: '',
  };
}
