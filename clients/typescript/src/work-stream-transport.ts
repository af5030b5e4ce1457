/**
 * The Worker's fast path: one Work stream. The worker subscribes, grants
 * credit for its free slots, and sends acks, nacks and extends as messages;
 * the server pushes leased jobs (never more than the credit) and answers each
 * settlement by request id.
 *
 * Credit: `outstanding` is credit granted on the current stream and not yet
 * used by a pushed job. The worker's free slots (and free prefetch) minus
 * `outstanding` is what may still be granted, so running and held jobs +
 * outstanding credit never exceed the concurrency + prefetch. With prefetch,
 * credit for held jobs waits until it is worth `refillJobs` (idle slots get
 * theirs at once). A new stream starts with no credit (the server forgets it).
 * Once the worker stops taking jobs, the next message (a batch, empty if need
 * be) says `stop_delivery` before the settlements it carries: the server drops
 * the unused credit, so a job given back at close is not pushed here again
 * (a server older than the field ignores it and spends the credit: each job
 * it pushes then is given back too).
 *
 * Batching: settlements are held until the next tick and written together
 * with the credit their jobs freed, as one `batch` message (settlements
 * first), so the server commits those acks and leases the next jobs in one
 * transaction; the server answers with `batch` messages too (the subscribe
 * asks for them). One message per job each way would cost both processes
 * more than the jobs themselves.
 *
 * States: connecting/open (a stream exists) → broken (no stream; reopen after
 * a backoff while still taking jobs, unless the server refused the stream
 * with an error that stops the worker (`stopsWorker`): then it stops; settlements go over
 * unary calls meanwhile) → finishing (half-closed, waiting for the server to end) → done.
 *
 * Re-cut: a stream ended as over a bound of the call (`overCallBound`) while the worker takes
 * jobs keeps its settlements not answered and, if the server's bounds went down, sends them again
 * on a new stream cut by them (settlement-recut.ts); else it takes the broken path above. A
 * settlement sent again whose first send may have been applied is answered as
 * repeated-settlement.ts says.
 */
import { type ClientDuplexStream, connectivityState, type ServiceError, status } from '@grpc/grpc-js';
import { backoffDelayMs } from './backoff.ts';
import { cancelCall } from './cancel-call.ts';
import type { Connection } from './connection.ts';
import { nackDirective, nackResultFromProto, utf8Bytes } from './convert.ts';
import {
  errorCodeOf,
  fromStatus,
  JobCancelledError,
  JobTimeoutError,
  overCallBound,
  retryAdviceOf,
  SeppError,
  toSeppError,
} from './errors.ts';
import type { JobResult as ProtoJobResult, LeasedJob as ProtoLeasedJob } from './gen/sepp/v1/job.js';
import { QueueServiceService } from './gen/sepp/v1/queue_service.js';
import type {
  WorkRequest,
  WorkRequest_Settlement,
  WorkResponse,
  WorkResponse_CancelNotice,
  WorkResponse_Settled,
  WorkResponse_TimeoutNotice,
} from './gen/sepp/v1/work.js';
import { ackCall, errorFields, extendCall, nackCall, progressCall } from './lease-calls.ts';
import { ackAppliedOr, nackAppliedOr, notLeased } from './repeated-settlement.ts';
import { SettlementRecut } from './settlement-recut.ts';
import type { LeaseRef, NackOptions, NackResult } from './types.ts';
import { decodeWorkResponse, encodeWorkRequest } from './work-codec.ts';
import {
  healthyAfterMs,
  type ProgressFields,
  stopsWorker,
  type TransportConfig,
  type TransportHost,
  type WorkTransport,
} from './work-transport.ts';
import type { WorkerTimer } from './worker-clock.ts';

type WorkStream = ClientDuplexStream<WorkRequest, WorkResponse>;
const workPath = QueueServiceService.work.path;
type Settlement = NonNullable<WorkRequest_Settlement['kind']>;

/**
 * A settlement could not be answered on the stream: there was none (`sent`
 * false), or it broke after the message was written (`sent` true: it may or
 * may not have been applied).
 */
/** Whether a settlement is a nack's give-back (never sent twice: see `nack`). */
function isGiveBack(settlement: WorkRequest): boolean {
  return settlement.kind?.$case === 'nack' && settlement.kind.value.directive?.$case === 'giveBack';
}

class AnswerLost extends SeppError {
  constructor(
    readonly sent: boolean,
    message: string,
  ) {
    super(status.UNAVAILABLE, message);
  }
}

interface Pending {
  resolve(settled: WorkResponse_Settled): void;
  reject(error: SeppError): void;
  /** `Date.now()` after which the answer is no longer waited for. */
  deadlineAtMs: number;
  /** What was (or will be) written, kept to send it again after a refusal over a bound. */
  settlement: WorkRequest_Settlement;
}

/** The error a settlement's answer carries. */
function settledError(settled: WorkResponse_Settled): SeppError {
  return fromStatus(
    settled.code,
    settled.message,
    true,
    errorCodeOf(settled.errorCode),
    undefined,
    retryAdviceOf(settled.retry),
  );
}

/** A generous estimate of a settlement's encoded size, in bytes. */
function settlementBytes(settlement: WorkRequest_Settlement): number {
  const kind = settlement.kind;
  switch (kind?.$case) {
    case 'ack':
      return (
        64 +
        (kind.value.result === undefined
          ? 0
          : kind.value.result.data.length + utf8Bytes(kind.value.result.contentType))
      );
    case 'nack':
      return 64 + 3 * kind.value.errorMessage.length;
    case 'progress':
      return 64 + 3 * kind.value.json.length;
    default:
      return 64;
  }
}

export class WorkStreamTransport implements WorkTransport {
  readonly freesSlotOnSettle = false;
  private stream: WorkStream | undefined;
  private outstanding = 0;
  private flushScheduled = false;
  /** Settlements waiting for the next flush, in the order they were made. */
  private unsent: WorkRequest_Settlement[] = [];
  private taking = true;
  /** The current stream was told `stop_delivery` (see the top). */
  private deliveryStopped = false;
  private nextRequestId = 1;
  /**
   * Settlements waiting for their answers, in the order they were made. All
   * get the same deadline, so this is also deadline order: one timer, set for
   * the oldest, serves them all (one timer per settlement cost more CPU than
   * the rest of an ack's trip through the client).
   */
  private readonly pending = new Map<number, Pending>();
  private deadlineTimer: NodeJS.Timeout | undefined;
  private readonly sweepBound = () => this.sweepDeadlines();
  private reconnects = 0;
  private reconnectTimer: WorkerTimer | undefined;
  private openedAtMs = 0;
  /** The current stream reached the server (see `healthyAfterMs`); the worker was told. */
  private healthy = false;
  private healthyTimer: WorkerTimer | undefined;
  private ended: (() => void) | undefined;
  private readonly flushBound = () => this.flush();
  /** Set once finish() half-closed the stream: nothing more may be written to it. */
  private halfClosed = false;
  private readonly recut: SettlementRecut;

  constructor(
    private readonly conn: Connection,
    private readonly config: TransportConfig,
    private readonly host: TransportHost,
  ) {
    this.recut = new SettlementRecut(conn);
  }

  start(): void {
    // Its settlement batches are bounded by the server's own bounds once the client knows them.
    void this.conn.learnServerBounds();
    this.open();
  }

  private open(): void {
    this.reconnectTimer = undefined;
    if (!this.taking || this.conn.closed) return;
    // The generated client's `work` with the hand-written codec of work-codec.ts (the same messages).
    const stream: WorkStream = this.conn.rpc.makeBidiStreamRequest(
      workPath,
      encodeWorkRequest,
      decodeWorkResponse,
      this.conn.metadata(),
    );
    this.stream = stream;
    this.outstanding = 0;
    this.deliveryStopped = false;
    this.recut.opened();
    this.openedAtMs = this.config.clock.nowMs();
    this.healthy = false;
    this.healthyTimer = this.config.clock.setTimer(healthyAfterMs, () => this.checkHealthy(stream));
    stream.on('data', (message: WorkResponse) => this.onMessage(stream, message));
    stream.on('error', (error: ServiceError) => this.onBroken(stream, toSeppError(error)));
    stream.on('end', () =>
      this.onBroken(stream, new SeppError(status.UNAVAILABLE, 'the server ended the Work stream')),
    );
    stream.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: {
          queues: [...this.config.queues],
          leaseDurationMs: this.config.leaseMs,
          workerId: this.config.workerId,
          batchResponses: true,
        },
      },
    });
    this.flush();
  }

  /**
   * A stream still open `healthyAfterMs` after it opened, on a channel that is
   * connected, reached the server; one still waiting for a connection is looked
   * at again as long as it stays open.
   */
  private checkHealthy(stream: WorkStream): void {
    this.healthyTimer = undefined;
    if (stream !== this.stream || this.healthy) return;
    const ready = this.conn.rpc.getChannel().getConnectivityState(false) === connectivityState.READY;
    if (ready) this.markHealthy();
    else this.healthyTimer = this.config.clock.setTimer(healthyAfterMs, () => this.checkHealthy(stream));
  }

  private markHealthy(): void {
    this.healthy = true;
    this.healthyTimer?.cancel();
    this.healthyTimer = undefined;
    this.host.connected();
  }

  private onMessage(stream: WorkStream, message: WorkResponse): void {
    if (stream !== this.stream) return;
    this.reconnects = 0;
    if (!this.healthy) this.markHealthy();
    const kind = message.kind;
    if (kind?.$case === 'job') {
      this.deliver(kind.value);
    } else if (kind?.$case === 'settled') {
      this.onSettled(kind.value);
    } else if (kind?.$case === 'batch') {
      for (const settled of kind.value.settled) this.onSettled(settled);
      for (const job of kind.value.jobs) this.deliver(job);
      for (const notice of kind.value.cancels) this.onCancel(notice);
      // An older server sends no timeouts (an absent repeated field decodes as []).
      for (const notice of kind.value.timeouts) this.onTimeout(notice);
    } else if (kind?.$case === 'cancel') {
      this.onCancel(kind.value);
    } else if (kind?.$case === 'timeout') {
      this.onTimeout(kind.value);
    }
  }

  /** A pushed job uses a credit; one past the credit granted (a server that ignores it) is unasked. */
  private deliver(job: ProtoLeasedJob): void {
    const unasked = this.outstanding <= 0;
    if (!unasked) this.outstanding--;
    this.host.deliver(job, unasked);
  }

  private onTimeout(notice: WorkResponse_TimeoutNotice): void {
    const at = notice.timeoutAtMs === 0 ? '' : ` at ${new Date(notice.timeoutAtMs).toISOString()}`;
    const error = new JobTimeoutError(
      status.FAILED_PRECONDITION,
      `job ${notice.jobId} attempt ${notice.attempt} ran past its hard timeout${at} (timeout_ms): stop working on it; the queue's retry policy decides what follows`,
    );
    this.host.timedOut(notice.jobId, notice.attempt, error);
  }

  private onCancel(notice: WorkResponse_CancelNotice): void {
    const by = notice.cancelledBy === '' ? '' : ` by ${notice.cancelledBy}`;
    const at = notice.cancelledAtMs === 0 ? '' : ` at ${new Date(notice.cancelledAtMs).toISOString()}`;
    const error = new JobCancelledError(
      status.FAILED_PRECONDITION,
      `job ${notice.jobId} was cancelled${by}${at}: stop working on it; it will not be retried`,
    );
    this.host.cancel(notice.jobId, notice.attempt, error);
  }

  private onSettled(settled: WorkResponse_Settled): void {
    const { requestId } = settled;
    const pending = this.pending.get(requestId);
    if (pending === undefined) return;
    this.pending.delete(requestId);
    if (this.pending.size === 0) this.stopDeadlineTimer();
    const repeated = this.recut.repeated(requestId);
    this.recut.done(requestId);
    if (settled.code === status.OK) {
      pending.resolve(settled);
      return;
    }
    const error = settledError(settled);
    // An ack or nack repeated, answered "not leased": its caller finds out what the first send
    // did. (An extend or progress report so answered is refused: the lease is gone either way.)
    const kind = pending.settlement.kind?.$case;
    if (repeated && (kind === 'ack' || kind === 'nack') && notLeased(error)) pending.resolve(settled);
    else pending.reject(error);
  }

  private onBroken(stream: WorkStream, error: SeppError): void {
    if (stream !== this.stream) return;
    this.stream = undefined;
    this.outstanding = 0;
    this.healthyTimer?.cancel();
    this.healthyTimer = undefined;
    if (this.ended === undefined && this.taking && !this.conn.closed && overCallBound(error)) {
      this.sendAgain(error);
      return;
    }
    this.loseAnswers(this.pending.values(), error);
    if (this.ended !== undefined) {
      this.ended();
      return;
    }
    this.reconnectAfter(error);
  }

  /**
   * Fails settlements whose answers the broken stream took with it, so that each is settled
   * over a unary call instead; one never written (still in `unsent`) without doubt.
   */
  private loseAnswers(lost: Iterable<Pending>, error: SeppError): void {
    const unsent = new Set(this.unsent);
    this.unsent = [];
    for (const pending of [...lost]) {
      const { requestId } = pending.settlement;
      this.pending.delete(requestId);
      const sent = !unsent.has(pending.settlement) || this.recut.repeated(requestId);
      this.recut.done(requestId);
      pending.reject(new AnswerLost(sent, `the Work stream broke: ${error.message}`));
    }
    if (this.pending.size === 0) this.stopDeadlineTimer();
  }

  /**
   * The stream ended as over a bound of the call (see the top): the settlements not answered
   * and not sent again before wait, in order, for the server's bounds; if they went down, a
   * new stream sends them again cut by them; else they are lost with the stream as on any break.
   */
  private sendAgain(error: SeppError): void {
    const unsent = new Set(this.unsent);
    const refused = this.recut.refused(this.pending.values(), unsent);
    const { lowered } = refused;
    // A give-back written once is never written again (see `nack`): lost with the stream.
    const once = (pending: Pending) => isGiveBack(pending.settlement) && !unsent.has(pending.settlement);
    const again = refused.again.filter((pending) => !once(pending));
    this.loseAnswers([...refused.lost, ...refused.again.filter(once)], error);
    this.unsent = again.map((pending) => pending.settlement);
    void lowered.then((wentDown) => {
      if (wentDown && this.taking && !this.conn.closed && this.stream === undefined) {
        this.host.report(error);
        this.open();
        return;
      }
      this.loseAnswers(
        again.filter((pending) => this.pending.get(pending.settlement.requestId) === pending),
        error,
      );
      if (this.stream === undefined) this.reconnectAfter(error);
    });
  }

  /** After a break: stop the worker for a refusal asking again cannot change, else reopen after a backoff. */
  private reconnectAfter(error: SeppError): void {
    if (!this.taking || this.conn.closed) return;
    if (stopsWorker(error)) {
      this.taking = false;
      this.host.stop(error);
      return;
    }
    this.host.report(error);
    // A stream that lived a while was healthy: start the backoff over.
    const livedMs = this.config.clock.nowMs() - this.openedAtMs;
    if (livedMs > this.config.reconnectMaxDelayMs) this.reconnects = 0;
    const delayMs = backoffDelayMs(
      this.reconnects++,
      this.config.reconnectBaseDelayMs,
      this.config.reconnectMaxDelayMs,
    );
    this.reconnectTimer = this.config.clock.setTimer(delayMs, () => this.open());
  }

  release(): void {
    if (this.taking) this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    process.nextTick(this.flushBound);
  }

  /** Writes the held settlements and the credit for the free slots, as few messages as it takes. */
  private flush(): void {
    this.flushScheduled = false;
    const stream = this.writable();
    if (stream === undefined) return;
    const wanted = this.taking ? Math.max(0, this.host.freeSlots() - this.outstanding) : 0;
    // Credit for held jobs only waits to be worth a lease of its own; idle slots get theirs at once.
    const grant = wanted >= this.host.refillJobs || this.host.idleSlots() > this.outstanding ? wanted : 0;
    this.outstanding += grant;
    // Not taking: the first message says so, before its settlements (give-backs) are applied.
    let stopDelivery = !this.taking && !this.deliveryStopped;
    this.deliveryStopped ||= stopDelivery;
    const unsent = this.unsent;
    this.unsent = [];
    // A batch's settlements count against the server's `max_batch_jobs`, as an enqueue batch does,
    // and results and progress documents against its message size.
    const { maxBatchJobs: perMessage, maxMessageBytes } = this.conn.options;
    const maxBytes = maxMessageBytes / 2;
    if (unsent.length > 0) this.recut.cut(perMessage, maxMessageBytes);
    let start = 0;
    while (start < unsent.length) {
      let end = start;
      let bytes = 0;
      while (end < unsent.length && end - start < perMessage) {
        const size = settlementBytes(unsent[end]!);
        if (end > start && bytes + size > maxBytes) break;
        bytes += size;
        end++;
      }
      stream.write({
        requestId: 0,
        kind: {
          $case: 'batch',
          value: {
            settlements: unsent.slice(start, end),
            credit: end === unsent.length ? grant : 0,
            stopDelivery,
          },
        },
      });
      stopDelivery = false;
      start = end;
    }
    if (stopDelivery) {
      stream.write({
        requestId: 0,
        kind: { $case: 'batch', value: { settlements: [], credit: 0, stopDelivery } },
      });
    }
    if (unsent.length === 0 && grant > 0) {
      stream.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: grant } } });
    }
  }

  /** The stream, while settlements and credit may still be written to it. */
  private writable(): WorkStream | undefined {
    return this.halfClosed ? undefined : this.stream;
  }

  private settle(kind: Settlement): Promise<WorkResponse_Settled> {
    const stream = this.writable();
    if (stream === undefined) return Promise.reject(new AnswerLost(false, 'no Work stream'));
    const requestId = this.nextRequestId++;
    return new Promise((resolve, reject) => {
      const deadlineMs = this.conn.options.defaultDeadlineMs;
      const settlement = { requestId, kind };
      this.pending.set(requestId, { resolve, reject, deadlineAtMs: Date.now() + deadlineMs, settlement });
      this.deadlineTimer ??= setTimeout(this.sweepBound, deadlineMs);
      this.unsent.push(settlement);
      this.scheduleFlush();
    });
  }

  /**
   * Like a unary call's deadline: a settlement not answered in time fails
   * with DEADLINE_EXCEEDED (it may still be applied; its answer is not waited
   * for). Then the timer is set again for the oldest settlement still waiting.
   */
  private sweepDeadlines(): void {
    this.deadlineTimer = undefined;
    const nowMs = Date.now();
    for (const [requestId, pending] of this.pending) {
      if (pending.deadlineAtMs > nowMs) {
        this.deadlineTimer = setTimeout(this.sweepBound, pending.deadlineAtMs - nowMs);
        return;
      }
      this.pending.delete(requestId);
      this.recut.done(requestId);
      pending.reject(
        new SeppError(status.DEADLINE_EXCEEDED, 'no answer from sepp on the Work stream before the deadline'),
      );
    }
  }

  /** Nothing waits for an answer: no timer may keep the process alive. */
  private stopDeadlineTimer(): void {
    if (this.deadlineTimer === undefined) return;
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = undefined;
  }

  ack(lease: LeaseRef, result: ProtoJobResult | undefined): Promise<void> {
    if (this.writable() === undefined) return this.ackUnary(lease, result, false);
    // No async frame: one promise less per ack on the hot path. A repeat answered "not leased"
    // resolves unless the job disproves its first send (repeated-settlement.ts).
    return this.settle({ $case: 'ack', value: { jobId: lease.id, attempt: lease.attempt, result } }).then(
      (settled) =>
        settled.code === status.OK ? undefined : ackAppliedOr(this.conn, lease, settledError(settled)),
      (error: unknown) => {
        if (!(error instanceof AnswerLost)) throw error;
        return this.ackUnary(lease, result, error.sent);
      },
    );
  }

  /** No stream, or it broke before answering (`ambiguous`: after the ack was written): leases can be settled over unary calls too. */
  private async ackUnary(
    lease: LeaseRef,
    result: ProtoJobResult | undefined,
    ambiguous: boolean,
  ): Promise<void> {
    // After a lost answer, "not leased" most likely means our own ack went through.
    await ackCall(this.conn, lease, result, {}, ambiguous);
  }

  async nack(lease: LeaseRef, options: NackOptions, repeated = false): Promise<NackResult> {
    let sent = repeated;
    if (this.writable() !== undefined) {
      const fields = errorFields(options.error);
      let refusal: SeppError | undefined;
      try {
        const settled = await this.settle({
          $case: 'nack',
          value: { jobId: lease.id, attempt: lease.attempt, ...fields, directive: nackDirective(options) },
        });
        if (settled.code === status.OK) {
          if (settled.result?.$case === 'nack') return nackResultFromProto(settled.result.value);
          throw new SeppError(status.INTERNAL, 'the server answered a nack without its outcome');
        }
        refusal = settledError(settled); // Sent again after a refusal, answered "not leased" (onSettled).
      } catch (error) {
        // A give-back is never sent again once it may have been applied: sent once, a lost one
        // leaves the lease to run out. (A repeat would be refused as stale: a give-back keeps
        // the attempt, so the job's next lease has the next one.)
        if (error instanceof AnswerLost && !(options.giveBack === true && error.sent)) sent ||= error.sent;
        else if (repeated && notLeased(error)) refusal = error;
        else throw error;
      }
      if (refusal !== undefined) return nackAppliedOr(this.conn, lease, fields, refusal);
    }
    return nackCall(this.conn, lease, options, sent);
  }

  async extend(lease: LeaseRef, leaseMs: number): Promise<Date> {
    if (this.writable() !== undefined) {
      try {
        const settled = await this.settle({
          $case: 'extend',
          value: { jobId: lease.id, attempt: lease.attempt, leaseDurationMs: leaseMs },
        });
        if (settled.result?.$case === 'extend') return new Date(settled.result.value.leaseDeadlineMs);
        throw new SeppError(status.INTERNAL, 'the server answered an extend without the new deadline');
      } catch (error) {
        if (!(error instanceof AnswerLost)) throw error;
      }
    }
    // Extending twice is harmless: the lease simply ends `leaseMs` from the later one.
    return extendCall(this.conn, lease, leaseMs);
  }

  async progress(lease: LeaseRef, fields: ProgressFields): Promise<void> {
    if (this.writable() !== undefined) {
      try {
        await this.settle({
          $case: 'progress',
          value: { jobId: lease.id, attempt: lease.attempt, ...fields },
        });
        return;
      } catch (error) {
        if (!(error instanceof AnswerLost)) throw error;
      }
    }
    // Reporting the same progress twice stores the same thing.
    await progressCall(this.conn, lease, fields);
  }

  stopTaking(): void {
    this.taking = false;
    this.reconnectTimer?.cancel();
    this.reconnectTimer = undefined;
    // Tell the server now, with or without settlements to send (see the top).
    if (this.writable() !== undefined) this.scheduleFlush();
  }

  cancel(): void {
    const stream = this.stream;
    this.taking = false;
    if (stream === undefined) return;
    cancelCall(stream);
    this.onBroken(stream, new SeppError(status.CANCELLED, 'the worker closed the Work stream'));
  }

  finish(): Promise<void> {
    const stream = this.stream;
    if (stream === undefined || this.halfClosed) return Promise.resolve();
    this.flush();
    this.halfClosed = true;
    // Half-close: the server answers what is in flight, then ends the stream with OK.
    return new Promise((resolve) => {
      this.ended = () => {
        this.ended = undefined;
        resolve();
      };
      stream.end();
    });
  }
}
