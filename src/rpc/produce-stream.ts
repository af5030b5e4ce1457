/**
 * Produce: a bidirectional stream of enqueue batches. Each message is enqueued
 * (best effort or atomic) and answered with its sequence number once the
 * commit is durable. Answers go out in arrival order; a message's own error
 * travels in its answer's `code`/`message` and the stream stays open.
 *
 * Back-pressure: at most `maxPendingMessages` messages are in flight per
 * stream, and answers the client has not read stop the reading too (ReadGate).
 */
import { type handleBidiStreamingCall, type ServerDuplexStream, status } from '@grpc/grpc-js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { SeppError, toSeppError } from '../engine/errors.ts';
import {
  acceptedToProto,
  enqueueRequestFromProto,
  enqueueResultToProto,
  rejectionReasonToProto,
} from './convert.ts';
import { ReadGate } from './flow-control.ts';
import {
  metadataTraceContext,
  type RpcCallObservation,
  type TraceContext,
  unobserved,
  withTraceContext,
} from './observer.ts';
import { MalformedRequest, type RpcContext } from './rpc-context.ts';
import { grpcStatusOf, toServiceError } from './status.ts';

const maxPendingMessages = 64;

export function createProduceHandler(
  ctx: RpcContext,
): handleBidiStreamingCall<ProduceRequest, ProduceResponse> {
  return (call: ServerDuplexStream<ProduceRequest, ProduceResponse>) => {
    let callerName: string;
    try {
      if (ctx.draining) throw new SeppError('unavailable', 'sepp is shutting down');
      callerName = ctx.auth.authorize(call.metadata, 'enqueue', 'Produce').name;
    } catch (error) {
      call.emit('error', toServiceError(error));
      return;
    }
    // One trace context per stream (its metadata); each message is its own observed call.
    const streamContext = metadataTraceContext(call.metadata);
    let pending: Promise<unknown> = Promise.resolve();
    let inFlight = 0;
    let ended = false;
    const gate = new ReadGate(call);
    const stream = {
      endForShutdown: () => {
        ended = true;
        call.emit('error', { code: status.UNAVAILABLE, details: 'sepp is shutting down' });
      },
    };
    ctx.streams.add(stream);
    const finish = () => {
      ctx.streams.delete(stream);
    };
    call.on('cancelled', () => {
      ended = true;
      finish();
    });
    call.on('error', finish);
    call.on('end', () => {
      // The client is done sending: answer what is in flight, then close with OK.
      void pending.then(() => {
        finish();
        if (!ended) call.end();
        ended = true;
      });
    });

    call.on('data', (message: ProduceRequest | MalformedRequest) => {
      if (ended) return;
      const sequence = message instanceof MalformedRequest ? 0 : message.sequence;
      const observation =
        ctx.observer === undefined
          ? unobserved
          : ctx.observer.callStarted({ method: 'Produce', streamMessage: 'batch', parent: streamContext });
      const answer = enqueueMessage(ctx, message, observation, streamContext);
      inFlight++;
      if (inFlight >= maxPendingMessages) gate.setRequestsBlocked(true);
      // Chain the writes so answers leave in arrival order even when a later message fails faster.
      pending = pending.then(async () => {
        const response = await answer.catch((error: unknown): ProduceResponse => {
          const e = toSeppError(error);
          return { sequence, code: grpcStatusOf[e.code], message: e.message, results: [] };
        });
        inFlight--;
        if (!ended) gate.write(response);
        observation.end(response.code, callerName);
        if (inFlight < maxPendingMessages / 2) gate.setRequestsBlocked(false);
      });
    });
  };
}

async function enqueueMessage(
  ctx: RpcContext,
  message: ProduceRequest | MalformedRequest,
  observation: RpcCallObservation,
  streamContext: TraceContext | undefined,
): Promise<ProduceResponse> {
  if (message instanceof MalformedRequest) throw new SeppError('invalid_argument', message.message);
  observation.annotate({ jobs: message.jobs.length });
  const jobs = message.jobs.map(enqueueRequestFromProto);
  const fallback = observation.context ?? streamContext;
  if (fallback !== undefined) for (const job of jobs) withTraceContext(job, fallback);
  if (message.atomic) {
    const result = await ctx.engine.enqueueAtomic(jobs);
    return {
      sequence: message.sequence,
      code: status.OK,
      message: '',
      results: [],
      atomic: result.committed
        ? { committed: true, results: result.results.map(acceptedToProto), rejections: [] }
        : {
            committed: false,
            results: [],
            rejections: result.rejections.map((r) => ({
              index: r.index,
              reason: rejectionReasonToProto(r.reason),
              message: r.message,
            })),
          },
    };
  }
  const results = await ctx.engine.enqueueBatch(jobs);
  return {
    sequence: message.sequence,
    code: status.OK,
    message: '',
    results: results.map(enqueueResultToProto),
  };
}
