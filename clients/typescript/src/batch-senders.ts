/**
 * Two ways to send one enqueue batch and get its answer: a message on the
 * client's one Produce stream (the fast path), or a unary EnqueueBatch /
 * EnqueueAtomic call. Both resolve with the same answer and reject with a
 * SeppError, so the batcher above them does not care which it has. A flow
 * (flows.ts) goes the same two ways: on the Produce stream, together with the
 * other flows sent in the same turn of the event loop (one message: grpc-js
 * sends a stream's messages one per write of the connection, so flows sent as
 * messages of their own reach the server a few at a time and take as many
 * commits), or the unary EnqueueFlow.
 *
 * The Produce stream: opened on first use. The server answers messages in the
 * order they arrived, so an answer answers the oldest message on the stream not
 * yet answered; its sequence number must be that message's, or 0 when the
 * server could not decode the message at all (an answer that is neither means
 * the answers are out of step: the stream is ended, and its messages fail with
 * INTERNAL). A message whose caller's deadline passed keeps its place in that
 * order until its answer comes. When the stream breaks, every message in flight
 * fails with the stream's status (UNAVAILABLE for a lost connection) and the next
 * message opens a new stream, with an order of its own. An idle stream is
 * half-closed after `streamIdleMs`, so an application that forgets `close()`
 * still exits.
 */
import { type ClientDuplexStream, type ServiceError, status } from '@grpc/grpc-js';
import type { Connection } from './connection.ts';
import { fromStatus, retryAdviceOf, SeppError, toSeppError } from './errors.ts';
import type { EnqueueFlowRequest, EnqueueFlowResponse } from './gen/sepp/v1/flow.js';
import type { EnqueueJob, EnqueueResult } from './gen/sepp/v1/job.js';
import type { EnqueueAtomicResponse, ProduceRequest, ProduceResponse } from './gen/sepp/v1/produce.js';

/** The answer to one batch: per-job results, or an atomic batch's outcome. */
export type BatchAnswer =
  | { results: EnqueueResult[]; atomic?: undefined }
  | { atomic: EnqueueAtomicResponse };

export interface BatchSender {
  /** Sends one batch (1 to maxBatchJobs jobs) and resolves with its answer once durable. */
  send(jobs: EnqueueJob[], atomic: boolean, bytes: number, deadlineAtMs: number): Promise<BatchAnswer>;
  /** Sends one flow (`bytes`: about its encoded size) and resolves with its answer once durable; never retried. */
  sendFlow(flow: EnqueueFlowRequest, bytes: number, deadlineAtMs: number): Promise<EnqueueFlowResponse>;
  /** Waits for batches in flight, then releases the stream. */
  close(): Promise<void>;
}

/** EnqueueBatch and EnqueueAtomic, one call per batch. */
export class UnaryBatchSender implements BatchSender {
  constructor(private readonly conn: Connection) {}

  async send(
    jobs: EnqueueJob[],
    atomic: boolean,
    _bytes: number,
    deadlineAtMs: number,
  ): Promise<BatchAnswer> {
    const rpc = this.conn.rpc;
    const deadlineMs = remainingMs(deadlineAtMs);
    // The batcher decides about retries (it knows which jobs carry idempotency keys).
    if (atomic) {
      const answer = await this.conn.invoke(rpc.enqueueAtomic, { jobs }, { deadlineMs, retrySafe: false });
      return { atomic: answer };
    }
    const answer = await this.conn.invoke(rpc.enqueueBatch, { jobs }, { deadlineMs, retrySafe: false });
    return { results: answer.results };
  }

  sendFlow(flow: EnqueueFlowRequest, _bytes: number, deadlineAtMs: number): Promise<EnqueueFlowResponse> {
    return this.conn.invoke(this.conn.rpc.enqueueFlow, flow, {
      deadlineMs: remainingMs(deadlineAtMs),
      retrySafe: false,
    });
  }

  async close(): Promise<void> {}
}

function remainingMs(deadlineAtMs: number): number {
  return Math.max(0, deadlineAtMs - Date.now());
}

/** A caller waiting for the answer to its message, until `timer` (its deadline) fires. */
interface Caller {
  resolve(answer: ProduceResponse): void;
  reject(error: SeppError): void;
  timer: NodeJS.Timeout;
}

/**
 * A message sent on a stream and not yet answered. It keeps its place in the stream's order
 * once its caller's deadline has passed (`caller` is then undefined): the server still
 * answers it, in its turn, and the answers after it belong to the messages after it.
 */
interface Unanswered {
  sequence: number;
  caller: Caller | undefined;
}

type ProduceStream = ClientDuplexStream<ProduceRequest, ProduceResponse>;

/** One Produce stream and its messages not yet answered, oldest first: the order of its answers. */
interface OpenStream {
  call: ProduceStream;
  unanswered: Unanswered[];
}

/** A flow waiting for this turn's message. */
interface QueuedFlow {
  flow: EnqueueFlowRequest;
  bytes: number;
  deadlineAtMs: number;
  resolve(answer: EnqueueFlowResponse): void;
  reject(error: unknown): void;
}

/** Most flows in one Produce message (the server's limit). */
const maxFlowsPerMessage = 64;

/** How a server without flows on Produce answers one (a message of no jobs); a newer one never says it of a flow. */
const olderServerRefusal = 'jobs: the batch is empty';

function isOlderServerRefusal(error: unknown): boolean {
  return (
    error instanceof SeppError &&
    error.grpcCode === status.INVALID_ARGUMENT &&
    error.message === olderServerRefusal
  );
}

/**
 * The errors a broken Produce stream failed its messages with: whether the server stored such a
 * message's jobs before the stream broke is unknown (unlike a message it answered with an error).
 */
const brokenStreamErrors = new WeakSet<SeppError>();

/** The error failed a message because its Produce stream broke (its jobs may have been stored). */
export function lostWithStream(error: SeppError): boolean {
  return brokenStreamErrors.has(error);
}

const missingFlowOutcome = 'the server answered a flow on the Produce stream without its outcome';

/**
 * The error of a message (or flow) the server answered with a failure: its status, its words and
 * its `retry` advice, which the batcher's retries heed as they heed a unary call's trailer.
 */
function answerError(code: number, message: string, retry: string): SeppError {
  return fromStatus(code, message, false, undefined, undefined, retryAdviceOf(retry));
}

/** Batches as messages on one Produce stream, each answered in the order they were sent. */
export class ProduceStreamSender implements BatchSender {
  private stream: OpenStream | undefined;
  /** Callers waiting for an answer on the stream (its messages whose deadline has not passed). */
  private waiting = 0;
  private nextSequence = 1;
  private lastSendMs = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private drained: (() => void) | undefined;
  private closing = false;
  /** The server answered a flow as a message without jobs: it predates flows on Produce. */
  private flowsUnary = false;
  /** The server answered several flows as a message without jobs: it predates `flows`. */
  private flowsSingly = false;
  /** Flows sent in this turn, for one message; `flowBytes` is their size. */
  private flowQueue: QueuedFlow[] = [];
  private flowBytes = 0;
  private readonly flushFlowsBound = () => this.flushFlows();
  /** Messages sent on Produce streams (for tuning and tests). */
  messagesSent = 0;

  constructor(
    private readonly conn: Connection,
    private readonly unary: UnaryBatchSender,
  ) {}

  send(jobs: EnqueueJob[], atomic: boolean, bytes: number, deadlineAtMs: number): Promise<BatchAnswer> {
    // A message larger than the server may accept would end the whole stream
    // (and fail every batch on it): such a batch goes alone as a unary call.
    if (bytes > this.conn.options.maxMessageBytes) return this.unary.send(jobs, atomic, bytes, deadlineAtMs);
    return this.post({ jobs, atomic }, deadlineAtMs).then((answer) =>
      answer.atomic !== undefined ? { atomic: answer.atomic } : { results: answer.results },
    );
  }

  /**
   * A flow on the stream, in one message with the other flows sent in this turn (at most
   * `maxFlowsPerMessage` and `maxMessageBytes` together). One too large for a message goes as
   * a unary EnqueueFlow, as a batch does; so does one sent once the sender is closing (the
   * client's close), which then fails as a unary call on a closed client does.
   */
  sendFlow(flow: EnqueueFlowRequest, bytes: number, deadlineAtMs: number): Promise<EnqueueFlowResponse> {
    if (bytes > this.conn.options.maxMessageBytes || this.closing || this.conn.closed || this.flowsUnary) {
      return this.unary.sendFlow(flow, bytes, deadlineAtMs);
    }
    return new Promise<EnqueueFlowResponse>((resolve, reject) => {
      const queued = this.flowQueue.length;
      if (
        queued > 0 &&
        (queued >= maxFlowsPerMessage || this.flowBytes + bytes > this.conn.options.maxMessageBytes)
      ) {
        this.flushFlows();
      }
      if (this.flowQueue.length === 0) {
        if (this.conn.options.flushOn === 'setImmediate') setImmediate(this.flushFlowsBound);
        else process.nextTick(this.flushFlowsBound);
      }
      this.flowQueue.push({ flow, bytes, deadlineAtMs, resolve, reject });
      this.flowBytes += bytes;
    });
  }

  /**
   * Sends the queued flows: one alone as `flow`, several as `flows`, each answered on
   * its own. The message waits for the latest of their deadlines; a flow whose own
   * deadline passes first fails alone, as its own message would.
   */
  private flushFlows(): void {
    const queued = this.flowQueue;
    this.flowQueue = [];
    this.flowBytes = 0;
    if (queued.length === 0) return;
    if (queued.length === 1 || this.flowsSingly) {
      for (const q of queued) this.sendOneFlow(q.flow, q.bytes, q.deadlineAtMs).then(q.resolve, q.reject);
      return;
    }
    const latest = Math.max(...queued.map((q) => q.deadlineAtMs));
    const timers = queued.map((q) =>
      q.deadlineAtMs < latest
        ? setTimeout(
            () =>
              q.reject(new SeppError(status.DEADLINE_EXCEEDED, 'no answer from sepp before the deadline')),
            Math.max(0, q.deadlineAtMs - Date.now()),
          )
        : undefined,
    );
    const settle = (each: (q: QueuedFlow, i: number) => void) =>
      queued.forEach((q, i) => {
        clearTimeout(timers[i]);
        each(q, i);
      });
    this.post({ jobs: [], atomic: false, flows: { flows: queued.map((q) => q.flow) } }, latest).then(
      (answer) => {
        const answers = answer.flows?.answers ?? [];
        if (answers.length !== queued.length) {
          const message = `the server answered ${answers.length} flows on the Produce stream for ${queued.length}`;
          settle((q) => q.reject(new SeppError(status.INTERNAL, message)));
          return;
        }
        settle((q, i) => {
          const { code, message, flow, retry } = answers[i]!;
          if (code !== status.OK) q.reject(answerError(code, message, retry));
          else if (flow === undefined) q.reject(new SeppError(status.INTERNAL, missingFlowOutcome));
          else q.resolve(flow);
        });
      },
      (error: unknown) => {
        // A server older than `flows` skips the field and refuses the message as an empty
        // batch, storing nothing: these flows and the later ones go as messages of their own.
        if (isOlderServerRefusal(error)) {
          this.flowsSingly = true;
          settle((q) => this.sendOneFlow(q.flow, q.bytes, q.deadlineAtMs).then(q.resolve, q.reject));
        } else settle((q) => q.reject(error));
      },
    );
  }

  /** A flow as a message of its own (`flow`), or the unary call on a server older than that. */
  private async sendOneFlow(
    flow: EnqueueFlowRequest,
    bytes: number,
    deadlineAtMs: number,
  ): Promise<EnqueueFlowResponse> {
    if (this.closing || this.conn.closed || this.flowsUnary)
      return this.unary.sendFlow(flow, bytes, deadlineAtMs);
    let answer: ProduceResponse;
    try {
      answer = await this.post({ jobs: [], atomic: false, flow }, deadlineAtMs);
    } catch (error) {
      // A server older than flows on Produce skips the field and refuses the message as an
      // empty batch, storing nothing: this flow and the later ones take the unary call.
      if (!isOlderServerRefusal(error)) throw error;
      this.flowsUnary = true;
      return this.unary.sendFlow(flow, bytes, deadlineAtMs);
    }
    if (answer.flow === undefined) throw new SeppError(status.INTERNAL, missingFlowOutcome);
    return answer.flow;
  }

  /** Sends one message and resolves with its answer once durable; rejects with the answer's error. */
  private post(message: Omit<ProduceRequest, 'sequence'>, deadlineAtMs: number): Promise<ProduceResponse> {
    const stream = this.stream ?? this.open();
    const sent: Unanswered = { sequence: this.nextSequence++, caller: undefined };
    this.lastSendMs = Date.now();
    this.messagesSent++;
    return new Promise<ProduceResponse>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          if (this.release(sent) === undefined) return;
          // Like a unary deadline: the jobs may still be stored, the answer will not be waited for.
          reject(new SeppError(status.DEADLINE_EXCEEDED, 'no answer from sepp before the deadline'));
          this.maybeIdle();
        },
        Math.max(0, deadlineAtMs - this.lastSendMs),
      );
      sent.caller = { resolve, reject, timer };
      this.waiting++;
      stream.unanswered.push(sent);
      stream.call.write({ ...message, sequence: sent.sequence });
    });
  }

  /** Takes the caller of a message (undefined once its deadline passed): nobody else answers it. */
  private release(sent: Unanswered): Caller | undefined {
    const caller = sent.caller;
    if (caller === undefined) return undefined;
    sent.caller = undefined;
    clearTimeout(caller.timer);
    this.waiting--;
    return caller;
  }

  private open(): OpenStream {
    const call = this.conn.rpc.produce(this.conn.metadata());
    const stream: OpenStream = { call, unanswered: [] };
    this.stream = stream;
    call.on('data', (answer: ProduceResponse) => this.onAnswer(stream, answer));
    call.on('error', (error: ServiceError) => this.onBroken(stream, toSeppError(error)));
    call.on('end', () =>
      this.onBroken(stream, new SeppError(status.UNAVAILABLE, 'the server ended the Produce stream')),
    );
    return stream;
  }

  /** An answer answers the oldest message on its stream not yet answered. */
  private onAnswer(stream: OpenStream, answer: ProduceResponse): void {
    const sent = stream.unanswered[0];
    if (sent === undefined || (answer.sequence !== 0 && answer.sequence !== sent.sequence)) {
      // Whatever the later answers say could be another message's: none of them is trusted.
      const next = sent === undefined ? 'no message was waiting' : `message ${sent.sequence} was next`;
      const message = `the server answered Produce message ${answer.sequence} where ${next}; the stream was ended`;
      this.onBroken(stream, new SeppError(status.INTERNAL, message));
      stream.call.cancel();
      return;
    }
    stream.unanswered.shift();
    const caller = this.release(sent);
    if (caller === undefined) return; // Its deadline passed; nobody waits for it any more.
    // A sequence of 0: the message did not decode; its answer's code says why.
    if (answer.code !== status.OK) caller.reject(answerError(answer.code, answer.message, answer.retry));
    else caller.resolve(answer);
    this.maybeIdle();
  }

  /** The stream ended or failed: whatever was in flight on it fails with its status. */
  private onBroken(stream: OpenStream, error: SeppError): void {
    if (this.stream === stream) this.stream = undefined;
    const failed = error.grpcCode === status.OK ? new SeppError(status.UNAVAILABLE, error.message) : error;
    brokenStreamErrors.add(failed);
    const unanswered = stream.unanswered;
    stream.unanswered = [];
    for (const sent of unanswered) this.release(sent)?.reject(failed);
    this.maybeIdle();
  }

  private maybeIdle(): void {
    if (this.waiting > 0) return;
    if (this.drained !== undefined) {
      this.drained();
      return;
    }
    if (this.stream === undefined || this.idleTimer !== undefined) return;
    const check = () => {
      this.idleTimer = undefined;
      const idleMs = Date.now() - this.lastSendMs;
      if (this.waiting > 0 || this.stream === undefined) return;
      if (idleMs < this.conn.options.streamIdleMs) {
        this.idleTimer = setTimeout(check, this.conn.options.streamIdleMs - idleMs).unref();
        return;
      }
      this.endStream();
    };
    this.idleTimer = setTimeout(check, this.conn.options.streamIdleMs).unref();
  }

  /** Half-closes the stream (nothing is in flight); the next send opens a new one. */
  private endStream(): void {
    const stream = this.stream;
    if (stream === undefined) return;
    this.stream = undefined;
    stream.call.on('error', () => {}); // Nothing depends on this stream any more.
    stream.call.end();
  }

  async close(): Promise<void> {
    // The flows sent before the close go as they would have (on the stream, or as unary calls).
    this.flushFlows();
    this.closing = true;
    if (this.waiting > 0) {
      await new Promise<void>((resolve) => {
        this.drained = resolve;
      });
    }
    this.drained = undefined;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.endStream();
  }
}
