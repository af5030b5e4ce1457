/**
 * Work: a bidirectional stream for workers. The client subscribes (first
 * message), grants credit (free slots) and sends acks, nacks and extends; the
 * server pushes leased jobs while credit lasts — never more than granted —
 * and answers each settlement with its request id (work-settlements.ts runs
 * the settlements; this file is the stream's life and its lease pump).
 *
 * States: unsubscribed → subscribed (pumping jobs while credit > 0, long-polling
 * when there is none to lease, waiting for room when its connection's or key's
 * answers not yet sent fill their budgets) → closed. Closing (client cancel,
 * error, shutdown) aborts the pending long-poll at once and gives back the
 * room its jobs held; the leases of jobs HTTP/2 never sent (still in the
 * outbox, or written and not called back) are undone, ready again at once;
 * leases sent are left to expire or to be settled over unary calls.
 *
 * Room (unsent-answers.ts): a lease asks for no more jobs than the room the
 * budgets have (the engine stops at it; work-stream-leases.ts sizes the lease
 * and picks what fits); what comes back is taken at once, and
 * jobs past the room then (others took it during a long-poll) are given back
 * with their leases undone, their credit still outstanding. Each message gives
 * back its jobs' bytes when grpc-js calls back its write, which it does once
 * the client's flow-control window let it out: a client that never reads holds
 * at most a budget of jobs.
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
import { leaseScope, requireInScope } from '../config/index.ts';
import type { CancelNotice, TimeoutNotice } from '../engine/control-types.ts';
import { SeppError, toSeppError } from '../engine/errors.ts';
import { jobOverheadBytes } from '../engine/leases/index.ts';
import type { WorkerHandle } from '../engine/operators/index.ts';
import type { LeasedJob } from '../engine/types.ts';
import type { Caller } from './auth.ts';
import { type BugReporter, guardBidi, reportIfBug } from './call-guard.ts';
import { ReadGate } from './flow-control.ts';
import { metadataTraceContext } from './observer.ts';
import { admit, MalformedRequest, type OpenStream, type RpcContext } from './rpc-context.ts';
import type { StreamAnswers } from './unsent-answers.ts';
import { type SentJobs, WorkOutbox } from './work-outbox.ts';
import { type WorkCall, WorkSettlements } from './work-settlements.ts';
import { RoomLeases } from './work-stream-leases.ts';
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
  /** Its jobs written and not yet sent, in its connection's and key's budgets of answers. */
  private readonly answers: StreamAnswers;
  /** Messages with jobs written and not called back yet: their leases are undone if the stream ends. */
  private readonly unsent = new Set<SentJobs>();
  /** The pump calls again once room frees (bound once: a wait costs no closure). */
  private readonly pumpBound = () => this.pump();
  /** The stream waited for room once at least: its client, or its key's others, do not read. */
  private roomRanOut = false;
  /** How many jobs a lease asks for given the room, and which it keeps (set by subscribe). */
  private leases: RoomLeases | undefined;

  constructor(
    private readonly ctx: RpcContext,
    private readonly call: WorkCall,
    private readonly caller: Caller,
    private readonly onBug: BugReporter,
  ) {
    this.gate = new ReadGate(call);
    this.answers = ctx.streamAnswers(call.getPeer(), caller.name);
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
    // Never written; and the room of what was written goes back at once, not as each write ends:
    // a stream gone cannot stall its key's other streams. Messages written and not sent stay in
    // `unsent` until grpc-js calls them back, sent (the ends of an end with OK) or failed.
    this.giveBack(this.outbox?.discard() ?? []);
    this.answers.close();
    this.listed?.close();
    this.ctx.streams.delete(this);
  }

  /**
   * Undoes the leases of jobs no worker got (never sent, or past the room): ready again at
   * their place, attempt given back (undone-lease.ts).
   */
  private giveBack(jobs: readonly { jobId: string; attempt: number }[]): void {
    if (jobs.length === 0) return;
    // A full budget is what the operator hears of (rpc.answers_refused), not a worker that stops.
    if (this.roomRanOut) this.ctx.answerRefusals.givenBack(this.caller.name);
    this.ctx.engine
      .undoLeases(jobs.map(({ jobId, attempt }) => ({ jobId, attempt })))
      // Ended meanwhile (shutting down): the leases run out instead. Only a bug is told.
      .catch((error: unknown) => reportIfBug(toSeppError(error), 'Work (giving back jobs)', this.onBug));
  }

  /** Writes a message with jobs, holding their room until grpc-js calls back (HTTP/2 sent it). */
  private writeJobs(message: WorkResponse, sent: SentJobs | undefined, viaGate: boolean): void {
    if (sent === undefined) {
      this.gate.write(message);
      return;
    }
    this.unsent.add(sent);
    const written = (error?: Error | null) => {
      if (!this.unsent.delete(sent)) return;
      // Once the stream closed, its room went back already (`give` does nothing then).
      if ((error === undefined || error === null) && !this.call.cancelled) this.answers.give(sent.bytes);
      // Not sent: the stream was destroyed first (its client went), so no worker got these jobs. The
      // write HTTP/2 was waiting to send is called back then without an error, after the cancel:
      // a message sent was called back before, as HTTP/2 takes a message before it sends it.
      else this.giveBack(sent.jobs);
    };
    if (viaGate) this.gate.write(message, written);
    else this.call.write(message, written);
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
    this.leases = new RoomLeases(this.ctx.engine.options, subscription.queues);
    this.listed = this.ctx.engine.workers.open({
      workerId: subscription.workerId,
      address: this.call.getPeer(),
      queues: subscription.queues,
    });
    this.outbox = new WorkOutbox(
      {
        writeJob: (message, sent) => this.writeJobs(message, sent, false),
        writeAnswer: (message, sent) => this.writeJobs(message, sent, true),
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
    const leases = this.leases!;
    while (!this.closed && this.credit > 0 && !this.clientDone && !this.deliveryStopped) {
      const roomBytes = this.answers.room();
      // Nothing of its connection and key unsent: one job goes whatever its size (below).
      const alone = this.answers.empty();
      if (roomBytes < jobOverheadBytes && !alone) {
        this.waitForRoom();
        return;
      }
      let jobs: LeasedJob[];
      try {
        jobs = await this.reserve(subscription, leases, roomBytes, alone);
      } catch (error) {
        // Not even the first ready job fits the room left: wait until more is sent.
        if (!(error instanceof SeppError && error.requestTooLarge) || this.closed) throw error;
        this.waitForRoom();
        return;
      }
      if (this.closed) {
        this.giveBack(jobs.map((job) => ({ jobId: job.id, attempt: job.attempt })));
        return;
      }
      this.listed?.seen();
      if (jobs.length === 0) {
        if (this.ctx.draining) return;
        continue;
      }
      // Taken now, whatever others took while it waited for jobs; what is past the room goes back.
      const { protos, sizes, takenBytes } = leases.keep(jobs, this.answers.room(), this.answers.empty());
      this.answers.take(takenBytes);
      this.credit -= protos.length;
      // Jobs are bounded by the credit and the room, so they are written even when the client reads slowly.
      const outbox = this.outbox!;
      for (let i = 0; i < protos.length; i++) outbox.job(protos[i]!, sizes[i]);
      if (protos.length < jobs.length) {
        this.waitForRoom();
        this.giveBack(jobs.slice(protos.length).map((job) => ({ jobId: job.id, attempt: job.attempt })));
        return;
      }
    }
  }

  /** Pumps again once an answer of its connection or key went out. */
  private waitForRoom(): void {
    this.roomRanOut = true;
    this.answers.whenRoom(this.pumpBound);
  }

  /**
   * Leases up to the credit, jobs of at most `roomBytes` in all; `alone` (nothing of the
   * connection and key unsent): the first job whatever its size, so a job larger than a budget
   * is still delivered, alone.
   */
  private async reserve(
    subscription: WorkRequest_Subscribe,
    leases: RoomLeases,
    roomBytes: number,
    alone: boolean,
  ): Promise<LeasedJob[]> {
    const request = {
      queues: subscription.queues,
      maxJobs: leases.maxJobs(this.credit, roomBytes),
      leaseMs: subscription.leaseDurationMs,
      waitMs: this.ctx.engine.limits.maxWaitMs,
      workerId: subscription.workerId,
      answerBytesMax: Math.max(1, roomBytes),
      // Its wait for jobs counts as its key's long-poll (the last quarter of limits.max_waiters).
      ...(this.ctx.auth.enabled ? { owner: this.caller.name } : {}),
      // A scoped key is passed on the results of its queues' dependencies only.
      ...leaseScope(this.caller),
    };
    try {
      return await this.ctx.engine.reserve(request, this.abort.signal);
    } catch (error) {
      if (!(alone && error instanceof SeppError && error.requestTooLarge) || this.closed) throw error;
      return this.ctx.engine.reserve(
        { ...request, maxJobs: 1, answerBytesMax: undefined },
        this.abort.signal,
      );
    }
  }
}
