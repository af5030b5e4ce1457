/**
 * The budgets of request bytes in flight (platform/byte-budget.ts), one per
 * connection and one per caller (an API key's name; `anonymous` when the
 * server has no keys, so then it bounds the whole server), and what follows
 * one call's request: its frames (message-frames.ts), its reservations, the
 * HTTP/2 stream it pauses while it waits.
 *
 * The HTTP/2 stream is grpc-js's own (its server call keeps it as `stream`;
 * nothing public hands it out). grpc-js pauses it until it wants a message
 * and reads it as 'data' events; a listener added after grpc-js's sees each
 * chunk after grpc-js did, so at most the chunk in which a message's prefix
 * ends is read before the message is admitted. tests/rpc/bytes-in-flight.test.ts
 * fails if a grpc-js upgrade takes the stream away.
 */

import { type BudgetWaiter, ByteBudget, cancel, force, release, reserve } from '../platform/byte-budget.ts';
import type { Connection } from './connections.ts';
import { MessageFrames } from './message-frames.ts';
import type { UnsentAnswersStats } from './unsent-answers.ts';

export interface BytesInFlightLimits {
  readonly maxBytesInFlightPerConnection: number;
  readonly maxBytesInFlightPerKey: number;
}

/** What a budget holds, for stats and tests. */
export interface BudgetStats {
  readonly usedBytes: number;
  readonly peakBytes: number;
  readonly waited: number;
}

export interface RequestBytesInFlightStats {
  /** Per caller: key name, `anonymous` (no keys), `(no key)` (health checks and reflection without one). */
  readonly byKey: Readonly<Record<string, BudgetStats>>;
  /** Over every connection's budget: bytes now, the highest one connection ever held, waits. */
  readonly connections: BudgetStats;
}

/** The server's figures: requests' bytes in flight, and unary answers not yet sent (unsent-answers.ts). */
export interface BytesInFlightStats extends RequestBytesInFlightStats {
  readonly answers: UnsentAnswersStats;
}

/** The parts of a Node HTTP/2 stream the budget uses. */
interface RawStream {
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  off(event: 'data', listener: (chunk: Buffer) => void): unknown;
  pause: () => unknown;
  resume: () => unknown;
}

function isRawStream(value: unknown): value is RawStream {
  if (typeof value !== 'object' || value === null) return false;
  return ['on', 'off', 'pause', 'resume'].every((name) => typeof Reflect.get(value, name) === 'function');
}

/** One call's request bytes: reported to by the admission interceptor. */
export interface FollowedCall {
  /** grpc-js handed a message to the handler (a stream gives its bytes back then). */
  delivered(): void;
  /** The call ended: every byte it holds goes back, a wait ends. */
  finished(): void;
  /** Whether a message of the call waits for room in a budget (the server holds it back, not the client). */
  holdingBack(): boolean;
}

export class BytesInFlight {
  private readonly byConnection = new WeakMap<Connection, ByteBudget>();
  private readonly byKey = new Map<string, ByteBudget>();
  /** What the budgets of closed connections held (their peaks and waits count in the stats). */
  private closedConnections = { usedBytes: 0, peakBytes: 0, waited: 0 };
  private readonly liveConnections = new Set<ByteBudget>();

  constructor(private readonly limits: BytesInFlightLimits) {}

  /**
   * Starts following `call`'s request (its grpc-js server call), whose
   * messages are bounded by the budgets of `connection` and `caller`. A
   * unary call keeps its bytes until it ends; a stream gives each message's
   * back when it is delivered.
   */
  follow(
    call: unknown,
    connection: Connection | undefined,
    caller: string,
    streaming: boolean,
  ): FollowedCall {
    const raw = Reflect.get(Object(call), 'stream');
    if (!isRawStream(raw)) throw new Error('bug: the grpc-js server call has no HTTP/2 stream to hold back');
    const budgets = [
      this.keyBudget(caller),
      ...(connection === undefined ? [] : [this.connectionBudget(connection)]),
    ];
    const frames = new MessageFrames();
    /** Reserved bytes of the messages not yet given back, oldest first. */
    const held: number[] = [];
    let waiter: BudgetWaiter | undefined;
    let done = false;
    // grpc-js pauses the stream until it wants a message and resumes it to read one. While a
    // message waits for room, a resume of grpc-js's is remembered, not done: it happens once
    // the bytes are reserved (grpc-js has paused the stream by now, in its constructor).
    const pause = raw.pause.bind(raw);
    const resume = raw.resume.bind(raw);
    let grpcReading = false;
    raw.pause = () => {
      grpcReading = false;
      return pause();
    };
    raw.resume = () => {
      grpcReading = true;
      return waiter === undefined ? resume() : raw;
    };
    const onData = (chunk: Buffer) => {
      for (const start of frames.push(chunk)) {
        if (start.complete) {
          // It is here whole already: count it, there is nothing left to hold back.
          force(budgets, start.bytes);
          held.push(start.bytes);
          continue;
        }
        // A message that did not end in this chunk is the chunk's last one: hold back the rest of it.
        waiter = reserve(budgets, start.bytes, () => {
          waiter = undefined;
          held.push(start.bytes);
          if (!done && grpcReading) resume();
        });
        if (waiter === undefined) held.push(start.bytes);
        else pause();
      }
    };
    raw.on('data', onData);
    return {
      holdingBack: () => waiter !== undefined,
      delivered: () => {
        if (!streaming || done) return;
        const bytes = held.shift();
        if (bytes !== undefined) release(budgets, bytes);
      },
      finished: () => {
        if (done) return;
        done = true;
        raw.off('data', onData);
        if (waiter !== undefined) cancel(waiter);
        waiter = undefined;
        // A resume grpc-js asked for meanwhile (to discard the rest of a cancelled call) happens now.
        if (grpcReading) resume();
        release(
          budgets,
          held.splice(0).reduce((sum, bytes) => sum + bytes, 0),
        );
      },
    };
  }

  stats(): RequestBytesInFlightStats {
    const byKey: Record<string, BudgetStats> = {};
    for (const [name, b] of this.byKey)
      byKey[name] = { usedBytes: b.used, peakBytes: b.peak, waited: b.waited };
    let { usedBytes, peakBytes, waited } = this.closedConnections;
    for (const b of this.liveConnections) {
      usedBytes += b.used;
      peakBytes = Math.max(peakBytes, b.peak);
      waited += b.waited;
    }
    return { byKey, connections: { usedBytes, peakBytes, waited } };
  }

  private keyBudget(caller: string): ByteBudget {
    let budget = this.byKey.get(caller);
    if (budget === undefined) {
      budget = new ByteBudget(`key ${caller}`, this.limits.maxBytesInFlightPerKey);
      this.byKey.set(caller, budget);
    }
    return budget;
  }

  private connectionBudget(connection: Connection): ByteBudget {
    let budget = this.byConnection.get(connection);
    if (budget === undefined) {
      budget = new ByteBudget('connection', this.limits.maxBytesInFlightPerConnection);
      this.byConnection.set(connection, budget);
      this.liveConnections.add(budget);
      const b = budget;
      connection.socket.once('close', () => {
        this.liveConnections.delete(b);
        const closed = this.closedConnections;
        this.closedConnections = {
          usedBytes: closed.usedBytes,
          peakBytes: Math.max(closed.peakBytes, b.peak),
          waited: closed.waited + b.waited,
        };
      });
    }
    return budget;
  }
}
