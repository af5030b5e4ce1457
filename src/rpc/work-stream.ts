/**
 * Work: a bidirectional stream for workers. The client subscribes (first
 * message), grants credit (free slots) and sends acks, nacks and extends; the
 * server pushes leased jobs while credit lasts — never more than granted —
 * and answers each settlement with its request id.
 *
 * States: unsubscribed → subscribed (pumping jobs while credit > 0, long-polling
 * when there is none to lease) → closed. Closing (client cancel, error,
 * shutdown) aborts the pending long-poll at once; leases already pushed are
 * left to expire or to be settled over unary calls.
 */
import { type handleBidiStreamingCall, type ServerDuplexStream, status } from '@grpc/grpc-js';
import { SeppError, toSeppError } from '../engine/errors.ts';
import { jobStateToProto, leasedJobToProto, nackDirectiveFromProto } from './convert.ts';
import { ReadGate } from './flow-control.ts';
import type {
  WorkRequest,
  WorkRequest_Subscribe,
  WorkResponse,
  WorkResponse_Settled,
} from './gen/sepp/v1/work.js';
import { metadataTraceContext, type TraceContext, unobserved } from './observer.ts';
import { MalformedRequest, type RpcContext } from './rpc-context.ts';
import { grpcStatusOf, toServiceError } from './status.ts';
import { requireAttempt, requireJobId } from './validate-fields.ts';

/** Settlements being committed per stream; beyond it the stream stops reading. */
const maxSettlementsInFlight = 1024;

export function createWorkHandler(ctx: RpcContext): handleBidiStreamingCall<WorkRequest, WorkResponse> {
  return (call: ServerDuplexStream<WorkRequest, WorkResponse>) => {
    let callerName: string;
    try {
      if (ctx.draining) throw new SeppError('unavailable', 'sepp is shutting down');
      callerName = ctx.auth.authorize(call.metadata, 'work', 'Work').name;
    } catch (error) {
      call.emit('error', toServiceError(error));
      return;
    }
    new WorkStream(ctx, call, callerName).start();
  };
}

class WorkStream {
  private subscription: WorkRequest_Subscribe | undefined;
  private credit = 0;
  private pumping = false;
  private closed = false;
  private readonly abort = new AbortController();
  private settlementsInFlight = 0;
  private clientDone = false;
  private readonly gate: ReadGate;

  /** The stream's `traceparent` metadata: the parent of each settlement's span. */
  private readonly traceContext: TraceContext | undefined;

  constructor(
    private readonly ctx: RpcContext,
    private readonly call: ServerDuplexStream<WorkRequest, WorkResponse>,
    private readonly callerName: string,
  ) {
    this.gate = new ReadGate(call);
    this.traceContext = metadataTraceContext(call.metadata);
  }

  start(): void {
    this.ctx.streams.add(this);
    this.call.on('data', (message: WorkRequest | MalformedRequest) => this.onMessage(message));
    this.call.on('cancelled', () => this.close());
    this.call.on('error', () => this.close());
    this.call.on('end', () => {
      this.clientDone = true;
      this.maybeEnd();
    });
  }

  endForShutdown(): void {
    this.fail(new SeppError('unavailable', 'sepp is shutting down'));
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    this.ctx.streams.delete(this);
  }

  /** Ends the whole stream with a status (protocol violations, shutdown). */
  private fail(error: SeppError): void {
    if (this.closed) return;
    this.close();
    this.call.emit('error', toServiceError(error));
  }

  /** After the client half-closed: end with OK once every settlement is answered. */
  private maybeEnd(): void {
    if (this.clientDone && this.settlementsInFlight === 0 && !this.closed) {
      this.close();
      this.call.end();
    }
  }

  private onMessage(message: WorkRequest | MalformedRequest): void {
    if (this.closed) return;
    if (message instanceof MalformedRequest) {
      this.fail(new SeppError('invalid_argument', message.message));
      return;
    }
    const kind = message.kind;
    if (kind === undefined) {
      this.fail(
        new SeppError(
          'invalid_argument',
          'kind: every Work message is a subscribe, credit, ack, nack or extend',
        ),
      );
      return;
    }
    if (kind.$case === 'subscribe') {
      if (this.subscription !== undefined) {
        this.fail(
          new SeppError(
            'failed_precondition',
            'subscribe: already subscribed; open a new stream to change queues',
          ),
        );
        return;
      }
      this.subscribe(kind.value);
      return;
    }
    if (this.subscription === undefined) {
      this.fail(
        new SeppError('failed_precondition', 'subscribe first: the first Work message must be a subscribe'),
      );
      return;
    }
    switch (kind.$case) {
      case 'credit': {
        this.credit += kind.value.jobs;
        const max = this.ctx.engine.limits.maxReserveJobs;
        if (this.credit > max) {
          this.fail(
            new SeppError(
              'resource_exhausted',
              `credit: ${this.credit} unused credit, the limit is ${max} (limits.max_reserve_jobs)`,
            ),
          );
          return;
        }
        this.pump();
        return;
      }
      case 'ack':
        this.settle(message.requestId, 'ack', kind.value, async () => {
          await this.ctx.engine.ack({
            jobId: requireJobId(kind.value.jobId),
            attempt: requireAttempt(kind.value.attempt),
          });
          return { $case: 'ack', value: {} };
        });
        return;
      case 'nack':
        this.settle(message.requestId, 'nack', kind.value, async () => {
          const result = await this.ctx.engine.nack({
            jobId: requireJobId(kind.value.jobId),
            attempt: requireAttempt(kind.value.attempt),
            error: kind.value.errorMessage,
            directive: nackDirectiveFromProto(kind.value),
          });
          return {
            $case: 'nack',
            value: { state: jobStateToProto(result.state), runAtMs: result.runAtMs ?? 0 },
          };
        });
        return;
      case 'extend':
        this.settle(message.requestId, 'extend', kind.value, async () => {
          const result = await this.ctx.engine.extend({
            jobId: requireJobId(kind.value.jobId),
            attempt: requireAttempt(kind.value.attempt),
            leaseMs: kind.value.leaseDurationMs,
          });
          return { $case: 'extend', value: result };
        });
        return;
    }
  }

  private subscribe(subscription: WorkRequest_Subscribe): void {
    if (subscription.queues.length === 0) {
      this.fail(new SeppError('invalid_argument', 'subscribe.queues: name at least one queue'));
      return;
    }
    this.subscription = subscription;
    this.pump();
  }

  private settle(
    requestId: number,
    streamMessage: string,
    job: { jobId: string; attempt: number },
    run: () => Promise<WorkResponse_Settled['result']>,
  ): void {
    this.settlementsInFlight++;
    if (this.settlementsInFlight >= maxSettlementsInFlight) this.gate.setRequestsBlocked(true);
    const observer = this.ctx.observer;
    const observation =
      observer === undefined
        ? unobserved
        : observer.callStarted({ method: 'Work', streamMessage, parent: this.traceContext });
    observation.annotate({ jobId: job.jobId, attempt: job.attempt });
    run().then(
      (result) => {
        this.answer({ requestId, code: status.OK, message: '', result });
        observation.end(status.OK, this.callerName);
      },
      (error: unknown) => {
        const e = toSeppError(error);
        this.answer({ requestId, code: grpcStatusOf[e.code], message: e.message, result: undefined });
        observation.end(grpcStatusOf[e.code], this.callerName);
      },
    );
  }

  private answer(settled: WorkResponse_Settled): void {
    this.settlementsInFlight--;
    if (!this.closed) this.gate.write({ kind: { $case: 'settled', value: settled } });
    if (this.settlementsInFlight < maxSettlementsInFlight / 2) this.gate.setRequestsBlocked(false);
    this.maybeEnd();
  }

  /** Leases jobs while there is credit, long-polling when there are none; one pump at a time. */
  private pump(): void {
    if (this.pumping || this.closed || this.credit <= 0 || this.clientDone) return;
    this.pumping = true;
    void this.pumpLoop()
      .catch((error: unknown) => {
        const e = toSeppError(error);
        // A full waiter table or a validation problem ends the stream with its status.
        this.fail(e);
      })
      .finally(() => {
        this.pumping = false;
      });
  }

  private async pumpLoop(): Promise<void> {
    const subscription = this.subscription!;
    while (!this.closed && this.credit > 0 && !this.clientDone) {
      const jobs = await this.ctx.engine.reserve(
        {
          queues: subscription.queues,
          maxJobs: this.credit,
          leaseMs: subscription.leaseDurationMs,
          waitMs: this.ctx.engine.limits.maxWaitMs,
          workerId: subscription.workerId,
        },
        this.abort.signal,
      );
      if (this.closed) return; // Leases taken as the stream died simply expire.
      this.credit -= jobs.length;
      // Jobs are bounded by the credit, so they are written even when the client reads slowly.
      for (const job of jobs) this.call.write({ kind: { $case: 'job', value: leasedJobToProto(job) } });
      if (jobs.length === 0 && this.ctx.draining) return;
    }
  }
}
