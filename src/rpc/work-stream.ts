/**
 * Work: a bidirectional stream for workers. The client subscribes (first
 * message), grants credit (free slots) and sends acks, nacks and extends; the
 * server pushes leased jobs while credit lasts — never more than granted —
 * and answers each settlement with its request id (work-settlements.ts runs
 * the settlements; this file is the stream's life and its lease pump).
 *
 * States: unsubscribed → subscribed (pumping jobs while credit > 0, long-polling
 * when there is none to lease) → closed. Closing (client cancel, error,
 * shutdown) aborts the pending long-poll at once; leases already pushed are
 * left to expire or to be settled over unary calls.
 *
 * While subscribed, the stream hears of every cancel of a leased job on its
 * queues taken under its worker id, or under none (engine.onCancelRequested),
 * and passes it on as a CancelNotice; the worker ignores notices for leases
 * it does not hold.
 */
import type { handleBidiStreamingCall } from '@grpc/grpc-js';
import type {
  WorkRequest,
  WorkRequest_Subscribe,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { requireInScope } from '../config/index.ts';
import type { CancelNotice, TimeoutNotice } from '../engine/control-types.ts';
import { SeppError, toSeppError } from '../engine/errors.ts';
import type { WorkerHandle } from '../engine/operators/index.ts';
import type { Caller } from './auth.ts';
import { type BugReporter, guardBidi } from './call-guard.ts';
import { leasedJobToProto } from './convert.ts';
import { ReadGate } from './flow-control.ts';
import { metadataTraceContext } from './observer.ts';
import { admit, MalformedRequest, type OpenStream, type RpcContext } from './rpc-context.ts';
import { WorkOutbox } from './work-outbox.ts';
import { type WorkCall, WorkSettlements } from './work-settlements.ts';
export function createWorkHandler(
  ctx: RpcContext,
  onBug: BugReporter,
): handleBidiStreamingCall<WorkRequest, WorkResponse> {
  return guardBidi<WorkRequest | MalformedRequest, WorkResponse>('Work', onBug, (call) => {
    const caller = admit(ctx, call.metadata, 'work', 'Work');
    new WorkStream(ctx, call, caller, onBug).start();
  });
}

class WorkStream implements OpenStream {
  private subscription: WorkRequest_Subscribe | undefined;
  private credit = 0;
  /** A batch with `stop_delivery` came: nothing is leased for this stream again, and credit ends it. */
  private deliveryStopped = false;
  private pumping = false;
  private closed = false;
  private readonly abort = new AbortController();
  private clientDone = false;
  private readonly gate: ReadGate;
  /** Acks, nacks, extends and progress reports, and their answers (work-settlements.ts). */
  private readonly settlements: WorkSettlements;
  /** Set by subscribe. */
  private outbox: WorkOutbox | undefined;
  /** Stops hearing of cancels (set by subscribe). */
  private stopCancelNotices: (() => void) | undefined;
  /** Stops hearing of attempts that timed out (set by subscribe). */
  private stopTimeoutNotices: (() => void) | undefined;
  /** This stream in the engine's list of connected workers, from subscribe on. */
  private listed: WorkerHandle | undefined;

  constructor(
    private readonly ctx: RpcContext,
    private readonly call: WorkCall,
    private readonly caller: Caller,
    onBug: BugReporter,
  ) {
    this.gate = new ReadGate(call);
    this.settlements = new WorkSettlements(
      ctx,
      call,
      this.gate,
      caller,
      onBug,
      metadataTraceContext(call.metadata),
      {
        seen: () => this.listed?.seen(),
        deliver: (settled) => {
          if (!this.closed) this.outbox?.answer(settled);
        },
        answered: () => this.maybeEnd(),
      },
    );
  }

  start(): void {
    this.ctx.streams.add(this);
    this.call.on('data', (message) => this.onMessage(message));
    this.call.onFinish(() => this.close());
    this.call.on('end', () => {
      this.clientDone = true;
      this.maybeEnd();
    });
  }

  endForShutdown(): void {
    this.fail(new SeppError('unavailable', 'sepp is shutting down'));
  }

  get access() {
    return {
      metadata: this.call.metadata,
      permission: 'work' as const,
      rpc: 'Work',
      scope: this.caller.scope,
    };
  }

  endWith(error: SeppError): void {
    this.fail(error);
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    this.stopCancelNotices?.();
    this.stopTimeoutNotices?.();
    this.outbox?.discard();
    this.listed?.close();
    this.ctx.streams.delete(this);
  }

  /** Ends the whole stream with a status (protocol violations, shutdown), after what is already answered. */
  private fail(error: SeppError): void {
    if (this.closed) return;
    this.outbox?.flush();
    this.close();
    this.call.fail(error);
  }

  /** After the client half-closed: end with OK once every settlement is answered. */
  private maybeEnd(): void {
    if (this.clientDone && this.settlements.pending === 0 && !this.closed) {
      this.outbox?.flush();
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
          'kind: every Work message is a subscribe, credit, ack, nack, extend, progress or batch',
        ),
      );
      return;
    }
    if (kind.$case === 'subscribe') {
      if (this.subscription !== undefined) {
        this.fail(
          new SeppError(
            'invalid_argument',
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
        new SeppError('invalid_argument', 'subscribe first: the first Work message must be a subscribe'),
      );
      return;
    }
    switch (kind.$case) {
      case 'credit':
        this.grant(kind.value.jobs);
        return;
      case 'batch': {
        // Before its settlements: a job it gives back must not be leased to it again.
        if (kind.value.stopDelivery) this.stopDelivery();
        // Settlements first, then the credit: their acks and the next leases share a commit.
        const problem = this.settlements.applyBatch(kind.value);
        if (problem !== null) this.fail(problem);
        else if (kind.value.credit > 0) this.grant(kind.value.credit);
        return;
      }
      default:
        this.settlements.apply(message.requestId, kind);
    }
  }

  /**
   * Drops the unused credit (work.proto, Batch.stop_delivery): the pending long-poll ends at once
   * and leases nothing (reserve.ts); jobs a reserve already leased are still pushed.
   */
  private stopDelivery(): void {
    this.deliveryStopped = true;
    this.abort.abort();
  }

  private grant(jobs: number): void {
    if (this.deliveryStopped) {
      this.fail(
        new SeppError(
          'invalid_argument',
          'credit: this stream stopped delivery (batch.stop_delivery); open a new stream to take jobs',
        ),
      );
      return;
    }
    this.credit += jobs;
    const max = this.ctx.engine.limits.maxReserveJobs;
    if (this.credit > max) {
      this.fail(
        new SeppError(
          'invalid_argument',
          `credit: ${this.credit} unused credit, the limit is ${max} (limits.max_reserve_jobs); grant credit only for free slots`,
        ),
      );
      return;
    }
    this.pump();
  }

  private subscribe(subscription: WorkRequest_Subscribe): void {
    if (subscription.queues.length === 0) {
      this.fail(new SeppError('invalid_argument', 'subscribe.queues: name at least one queue'));
      return;
    }
    try {
      requireInScope(
        this.caller,
        subscription.queues.map((queue, i) => ({ queue, field: `subscribe.queues[${i}]` })),
      );
    } catch (error) {
      this.fail(toSeppError(error));
      return;
    }
    this.subscription = subscription;
    this.listed = this.ctx.engine.workers.open({
      workerId: subscription.workerId,
      address: this.call.getPeer(),
      queues: subscription.queues,
    });
    this.outbox = new WorkOutbox(
      {
        writeJob: (message) => this.call.write(message),
        writeAnswer: (message) => this.gate.write(message),
      },
      subscription.batchResponses,
      this.ctx.facts.maxMessageBytes,
    );
    this.stopCancelNotices = this.ctx.engine.onCancelRequested((notices) => this.onCancels(notices));
    this.stopTimeoutNotices = this.ctx.engine.onAttemptsTimedOut((notices) => this.onTimeouts(notices));
    this.pump();
  }

  /**
   * Passes on the cancels of leases this stream may hold: on its queues, taken
   * under its worker id — or under none, as work.proto promises. A lease taken
   * without a worker id names no holder: a unary Reserve (which any client may
   * make, say a worker that leases over unary calls and keeps a Work stream
   * open for notices) leaves no trace of who holds it, so every stream of the
   * queue is told and the ones not holding it ignore the notice. Cancels of
   * running jobs are rare; telling too many is cheap, telling nobody is not.
   */
  private onCancels(notices: readonly CancelNotice[]): void {
    const subscription = this.subscription;
    if (this.closed || subscription === undefined) return;
    for (const notice of notices) {
      if (!this.mayHold(subscription, notice)) continue;
      this.outbox?.cancel({
        jobId: notice.jobId,
        attempt: notice.attempt,
        cancelledBy: notice.cancelledBy ?? '',
        cancelledAtMs: notice.cancelledAtMs,
      });
    }
  }

  /** Passes on the attempts that timed out that this stream may hold, to the streams a cancel would go to. */
  private onTimeouts(notices: readonly TimeoutNotice[]): void {
    const subscription = this.subscription;
    if (this.closed || subscription === undefined) return;
    for (const notice of notices) {
      if (!this.mayHold(subscription, notice)) continue;
      this.outbox?.timeout({ jobId: notice.jobId, attempt: notice.attempt, timeoutAtMs: notice.timeoutAtMs });
    }
  }

  /** Whether this stream may hold the lease a notice names: its queue, its worker id or none. */
  private mayHold(
    subscription: WorkRequest_Subscribe,
    notice: { queue: string; workerId: string | null },
  ): boolean {
    const leaseWorkerId = notice.workerId ?? '';
    if (leaseWorkerId !== '' && leaseWorkerId !== subscription.workerId) return false;
    return subscription.queues.includes(notice.queue);
  }

  /** Leases jobs while there is credit, long-polling when there are none; one pump at a time. */
  private pump(): void {
    if (this.pumping || this.closed || this.credit <= 0 || this.clientDone || this.deliveryStopped) return;
    this.pumping = true;
    void this.call.spawn(async () => {
      try {
        await this.pumpLoop();
      } catch (error) {
        // A full waiter table or a validation problem ends the stream with its status.
        this.fail(toSeppError(error));
      } finally {
        this.pumping = false;
      }
    });
  }

  private async pumpLoop(): Promise<void> {
    const subscription = this.subscription!;
    while (!this.closed && this.credit > 0 && !this.clientDone && !this.deliveryStopped) {
      const jobs = await this.ctx.engine.reserve(
        {
          queues: subscription.queues,
          maxJobs: this.credit,
          leaseMs: subscription.leaseDurationMs,
          waitMs: this.ctx.engine.limits.maxWaitMs,
          workerId: subscription.workerId,
          // Its wait for jobs counts as its key's long-poll (the last quarter of limits.max_waiters).
          ...(this.ctx.auth.enabled ? { owner: this.caller.name } : {}),
        },
        this.abort.signal,
      );
      if (this.closed) return; // Leases taken as the stream died simply expire.
      this.listed?.seen();
      this.credit -= jobs.length;
      // Jobs are bounded by the credit, so they are written even when the client reads slowly.
      const outbox = this.outbox!;
      for (const job of jobs) outbox.job(leasedJobToProto(job));
      if (jobs.length === 0 && this.ctx.draining) return;
    }
  }
}
