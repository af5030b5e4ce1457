/**
 * The one place where whatever a gRPC handler throws or rejects becomes a
 * status. A rejection that escapes a handler (an event listener, a promise
 * continuation) is an uncaught exception or an unhandled rejection, and either
 * ends the process; so no handler code runs outside this module's guards:
 *
 * - `attempt(work)` runs work whose failure is an *answer* (one unary call,
 *   one Produce message, one Work settlement). Its promise never rejects: it
 *   resolves with the value or with the error, normalised to a SeppError.
 * - A `GuardedCall` wraps a stream (Produce, Work, Backup). Its listeners
 *   (`on`) and continuations (`spawn`) run inside a guard: whatever they throw
 *   or reject ends the call with that error's status instead of escaping.
 *   Handlers see only this wrapper, never grpc-js's call object.
 *
 * Anything that is not a SeppError is a bug in sepp: it becomes INTERNAL and
 * is reported through `onBug` (the server log).
 */
import type {
  handleBidiStreamingCall,
  handleServerStreamingCall,
  Metadata,
  ServerDuplexStream,
  ServerWritableStream,
  sendUnaryData,
} from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { type SeppError, toSeppError } from '../engine/errors.ts';
import { grpcStatusOf, toServiceError } from './status.ts';

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: SeppError; code: status };

function failed(thrown: unknown): { ok: false; error: SeppError; code: status } {
  const error = toSeppError(thrown);
  return { ok: false, error, code: grpcStatusOf[error.code] };
}

/** Runs `work`; the promise resolves with its value or its error and never rejects. */
export function attempt<T>(work: () => T | PromiseLike<T>): Promise<Outcome<T>> {
  try {
    return Promise.resolve(work()).then((value): Outcome<T> => ({ ok: true, value }), failed);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
}

/** Where bugs (anything thrown that is not a SeppError) are reported. */
export type BugReporter = (error: SeppError, where: string) => void;

/** Reports a failure that is a bug; SeppErrors are the product working as designed. */
export function reportIfBug(error: SeppError, where: string, onBug: BugReporter): void {
  if (error.code !== 'internal') return;
  try {
    onBug(error, where);
  } catch {
    // A failing log sink must not turn a handled error into an unhandled one.
  }
}

type AnyServerStream<Res> = ServerDuplexStream<unknown, Res> | ServerWritableStream<unknown, Res>;
type StreamEvent = 'data' | 'end';

/**
 * A stream call as handlers see it. Listeners and continuations are guarded;
 * `fail` ends the call with a status (once; later calls are ignored).
 */
export class GuardedCall<Req, Res> {
  private finished = false;
  private readonly finishListeners: (() => void)[] = [];

  constructor(
    private readonly call: AnyServerStream<Res>,
    private readonly rpc: string,
    private readonly onBug: BugReporter,
  ) {
    // The client going away, or grpc-js ending the call itself (a failed write), also finishes it.
    call.on('cancelled', () => this.markFinished());
    call.on('close', () => this.markFinished());
    this.finishAtDeadline();
  }

  /**
   * When the client's deadline passes, grpc-js sends DEADLINE_EXCEEDED but
   * tells the handler nothing until the client has read what is buffered —
   * never, for a client that stopped reading. The call is over then anyway.
   */
  private finishAtDeadline(): void {
    const deadline = this.call.getDeadline();
    const atMs = deadline instanceof Date ? deadline.getTime() : deadline;
    if (!Number.isFinite(atMs)) return;
    const timer = setTimeout(
      () => this.markFinished(),
      Math.min(Math.max(0, atMs - Date.now()), 2 ** 31 - 1),
    );
    timer.unref();
    this.finishListeners.push(() => clearTimeout(timer));
  }

  get metadata(): Metadata {
    return this.call.metadata;
  }

  /** The client's address, as grpc-js reports it (the Workers list shows it). */
  getPeer(): string {
    return this.call.getPeer();
  }

  /** True once the client went away or the call was ended. */
  get cancelled(): boolean {
    return this.call.cancelled;
  }

  /** True once `fail` or `end` ended the call, or the client went away. */
  get closed(): boolean {
    return this.finished || this.call.cancelled;
  }

  /** Runs `listener` once when the call is over, whatever ended it (at once if it already is). */
  onFinish(listener: () => void): void {
    if (this.closed) this.guard(listener);
    else this.finishListeners.push(listener);
  }

  private markFinished(): void {
    if (this.finished) return;
    this.finished = true;
    for (const listener of this.finishListeners.splice(0)) this.guard(listener);
  }

  /** Registers a listener whose failure ends the call with its status. */
  on(event: 'data', listener: (message: Req) => void): void;
  on(event: 'end', listener: () => void): void;
  on(event: StreamEvent, listener: (message: Req) => void): void {
    this.call.on(event, (message: Req) => this.guard(() => listener(message)));
  }

  /**
   * Runs a continuation (sync or async) whose failure ends the call with its
   * status. The promise settles when it is done and never rejects.
   */
  spawn(work: () => unknown): Promise<void> {
    return attempt(work).then((outcome) => {
      if (!outcome.ok) this.fail(outcome.error);
    });
  }

  /**
   * Runs `continuation` with the outcome of `attempt(...)` once it is known;
   * a throw ends the call with its status. Cheaper than `spawn` (no extra
   * async function), for the per-settlement path.
   */
  whenSettled<T>(outcome: Promise<Outcome<T>>, continuation: (outcome: Outcome<T>) => void): void {
    // `outcome` never rejects (attempt) and `guard` never throws: nothing can escape.
    void outcome.then((settled) => this.guard(() => continuation(settled)));
  }

  /** Runs `work` now; a throw ends the call with its status. */
  guard(work: () => void): void {
    try {
      work();
    } catch (error) {
      this.fail(error);
    }
  }

  /**
   * Writes `message`; `onWritten` runs once grpc-js has handed it to HTTP/2 (never if the call is
   * over), with the error when it was not (the stream was destroyed first).
   */
  write(message: Res, onWritten?: (error?: Error | null) => void): boolean {
    if (this.closed) return true;
    if (onWritten === undefined) return this.call.write(message);
    return this.call.write(message, (error?: Error | null) => this.guard(() => onWritten(error)));
  }

  /**
   * Runs `listener` once the call's HTTP/2 stream is gone (grpc-js reports it
   * as `cancelled`, also after a status was sent). Unlike `onFinish`, which
   * runs when the call is ended, this waits while messages are still buffered
   * for a client that does not read them (at once if the stream is gone).
   */
  onStreamClosed(listener: () => void): void {
    if (this.call.cancelled) this.guard(listener);
    else this.call.once('cancelled', () => this.guard(listener));
  }

  pause(): void {
    if ('pause' in this.call) this.call.pause();
  }

  resume(): void {
    if ('resume' in this.call) this.call.resume();
  }

  once(event: 'drain', listener: () => void): void {
    this.call.once(event, () => this.guard(listener));
  }

  /** Resolves when the client has taken what is buffered, or when the call is over (nothing more to wait for). */
  drained(): Promise<void> {
    return new Promise((resolve) => {
      this.once('drain', resolve);
      this.onFinish(resolve);
    });
  }

  /** Ends the call with OK. */
  end(): void {
    if (this.closed) return;
    this.markFinished();
    this.call.end();
  }

  /** Ends the call with the status of `thrown` (INTERNAL, reported, when it is not a SeppError). */
  fail(thrown: unknown): void {
    const error = toSeppError(thrown);
    reportIfBug(error, this.rpc, this.onBug);
    if (this.closed) return;
    this.markFinished();
    try {
      this.call.emit('error', toServiceError(error));
    } catch (sendError) {
      reportIfBug(toSeppError(sendError), `${this.rpc} (sending its status)`, this.onBug);
    }
  }
}

/**
 * A bidirectional-streaming handler for grpc-js: `handler` gets the guarded
 * call; a throw while it sets the stream up ends the call with its status.
 */
export function guardBidi<Req, Res>(
  rpc: string,
  onBug: BugReporter,
  handler: (call: GuardedCall<Req, Res>) => void,
): handleBidiStreamingCall<Req, Res> {
  return (call) => {
    const guarded = new GuardedCall<Req, Res>(call, rpc, onBug);
    guarded.guard(() => handler(guarded));
  };
}

/** A server-streaming handler for grpc-js; the request is the call's `request`. */
export function guardServerStream<Req, Res>(
  rpc: string,
  onBug: BugReporter,
  handler: (call: GuardedCall<never, Res>, request: Req) => void,
): handleServerStreamingCall<Req, Res> {
  return (call) => {
    const guarded = new GuardedCall<never, Res>(call, rpc, onBug);
    guarded.guard(() => handler(guarded, call.request));
  };
}

/**
 * Answers a unary call with the outcome of `work`: its value, or its error's
 * status. Then `answered` learns the status code sent (for telemetry). The
 * promise never rejects.
 */
export async function answerUnary<Res>(
  rpc: string,
  onBug: BugReporter,
  callback: sendUnaryData<Res>,
  work: () => Res | PromiseLike<Res>,
  answered: (code: status) => void,
): Promise<void> {
  const outcome = await attempt(work);
  if (!outcome.ok) reportIfBug(outcome.error, rpc, onBug);
  const code = outcome.ok ? status.OK : outcome.code;
  const sent = await attempt(() => {
    if (outcome.ok) callback(null, outcome.value);
    else callback(toServiceError(outcome.error));
    answered(code);
  });
  if (!sent.ok) reportIfBug(sent.error, `${rpc} (after its answer)`, onBug);
}
