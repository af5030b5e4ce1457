/**
 * What a call may cost before it has shown a key. grpc-js reads a unary
 * call's whole request (up to `grpc.max_message_bytes`) before the handler
 * runs, so a key checked in the handler came too late: 200 calls without a
 * key, each with a 4 MiB body, took a server from 150 to 1,000 MiB. This
 * interceptor runs when a call's headers arrive, before grpc-js reads any of
 * its body:
 *
 * - a QueueService call without a valid key is answered UNAUTHENTICATED at
 *   once; its body is never read (HTTP/2 flow control holds the client to one
 *   stream window, and what still arrives is discarded);
 * - calls that may come without a key (health checks, reflection) are
 *   limited, when they come without one, to `keylessCallsPerConnection` open
 *   per connection and `keylessCallsPerServer` on the whole server, and must
 *   send their request within `grpc.handshake_timeout_ms`; one more is
 *   refused with RESOURCE_EXHAUSTED before its body is read. Their requests
 *   are a few bytes, so honest clients never meet the limits, and what such
 *   calls can make the server hold is bounded by
 *   keylessCallsPerServer × grpc.max_message_bytes.
 *
 * Every other call must send its first message within
 * `grpc.first_message_timeout_ms` of its headers (time its message waits for
 * room in a byte budget, the server's doing, does not count), or it ends with
 * RESOURCE_EXHAUSTED: a Work, Produce or Events stream that never sends
 * anything would otherwise hold its slot (a stream of the connection's
 * `grpc.max_streams_per_connection`, and for a stream the connection itself)
 * until the connection closed.
 *
 * It also tells the connection that a call opened (its handshake is done),
 * and holds every admitted call's request bytes to the budgets of its
 * connection and its caller (platform/byte-budget.ts): a message is read on only once
 * the bytes its prefix declares are reserved. The key's role is checked by
 * the handler as before; the identity found here is remembered, so the key
 * is hashed once per call. And it holds a unary QueueService call to the
 * budgets of answers not yet sent (unsent-answers.ts): the call runs once
 * they have room (a write that lists items: its request goes on to its
 * handler once they have room for the most it can answer), and its answer is serialized here (the service's
 * serializer passes bytes through), so its size is known before it is
 * written.
 */
import {
  type Metadata,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
  status,
} from '@grpc/grpc-js';
import { SeppError, toSeppError } from '../engine/errors.ts';
import type { Authenticator } from './auth.ts';
import type { BytesInFlight } from './bytes-in-flight.ts';
import type { Connection, Connections } from './connections.ts';
import type { RefusedAnswers } from './refused-answers.ts';
import { toServiceError } from './status.ts';
import type { FollowedAnswer, UnsentAnswers } from './unsent-answers.ts';

export const keylessCallsPerConnection = 4;
export const keylessCallsPerServer = 8;

const keyedPrefix = '/sepp.v1.QueueService/';

export interface AdmissionOptions {
  auth: Authenticator;
  connections: Connections;
  /** How long a call without a key may take to send its request. */
  requestTimeoutMs: number;
  /** How long any other call may take to send its first message (grpc.first_message_timeout_ms). */
  firstMessageTimeoutMs: number;
  /** Reports a refused QueueService call as a call that ended with `code` (metrics, the request log). */
  observeRefusal: (rpc: string, code: status) => void;
  /** The budgets of request bytes in flight, per connection and per caller. */
  bytesInFlight: BytesInFlight;
  /** The budgets of unary answers not yet sent, per connection and per caller. */
  unsentAnswers: UnsentAnswers;
  /** Told of an answer refused after its handler ran, by the call's request metadata. */
  refusedAnswers: RefusedAnswers;
  /** The most a write that lists items can answer, from its decoded request (answer-bounds.ts). */
  answerBytesMaxOf: (method: string, request: unknown) => number | undefined;
}

export function admissionInterceptor(options: AdmissionOptions): ServerInterceptor {
  const { auth, connections } = options;
  let keylessOpen = 0;
  return (method, call) => {
    const connection = connections.of(call.getPeer());
    connection?.callOpened();
    const keyed = method.path.startsWith(keyedPrefix);
    const unary = keyed && !method.requestStream && !method.responseStream;
    /** Set while this call counts as an open call without a key. */
    let holding: { connection: Connection | undefined; timer: NodeJS.Timeout } | undefined;
    const release = () => {
      if (holding === undefined) return;
      clearTimeout(holding.timer);
      keylessOpen--;
      if (holding.connection !== undefined) holding.connection.keylessCalls--;
      holding = undefined;
    };

    /** Counts a call that came without a key, or says why it may not go on. */
    const admitKeyless = (): SeppError | null => {
      const perConnection = connection?.keylessCalls ?? 0;
      if (perConnection >= keylessCallsPerConnection || keylessOpen >= keylessCallsPerServer) {
        connections.refusedCalls.keyless_limit++;
        return new SeppError(
          'resource_exhausted',
          perConnection >= keylessCallsPerConnection
            ? `at most ${keylessCallsPerConnection} calls without an API key may be open on one connection`
            : `at most ${keylessCallsPerServer} calls without an API key may be open at once; try again shortly`,
        );
      }
      keylessOpen++;
      if (connection !== undefined) connection.keylessCalls++;
      const timer = setTimeout(() => {
        release();
        refuse(
          call,
          new SeppError(
            'resource_exhausted',
            `a call without an API key must send its request within ${options.requestTimeoutMs} ms (grpc.handshake_timeout_ms)`,
          ),
        );
      }, options.requestTimeoutMs);
      timer.unref();
      holding = { connection, timer };
      return null;
    };

    /** Whose budget the call's bytes count in: its key, `anonymous` without keys, `(no key)` for keyless calls. */
    let callerName = 'anonymous';
    /** Why the call may not go on, or null. */
    const admit = (metadata: Metadata): SeppError | null => {
      if (!auth.enabled) return null;
      if (keyed) {
        try {
          callerName = auth.authenticate(metadata).name;
          return null;
        } catch (error) {
          connections.refusedCalls.unauthenticated++;
          return toSeppError(error);
        }
      }
      // Health and reflection need no key; one that comes with a valid key is not limited.
      if (metadata.get('authorization').length > 0) {
        try {
          callerName = auth.authenticate(metadata).name;
          return null;
        } catch {
          // An invalid key is no key.
        }
      }
      callerName = '(no key)';
      return admitKeyless();
    };
    /** The call's request metadata, as forwarded to its handler (refused-answers.ts). */
    let requestMetadata: Metadata | undefined;
    /** The call's request bytes, once admitted. */
    let budgeted: ReturnType<BytesInFlight['follow']> | undefined;
    /** A unary call's answer, once admitted. */
    let answer: FollowedAnswer | undefined;
    /** Sends the answer's headers, held until its answer may go. */
    let heldHeaders: (() => void) | undefined;
    const sendHeaders = () => {
      const send = heldHeaders;
      heldHeaders = undefined;
      send?.();
    };
    /** Until the first message arrives (an admitted call with no keyless deadline). */
    let firstMessageTimer: NodeJS.Timeout | undefined;
    const stopFirstMessageTimer = () => {
      if (firstMessageTimer === undefined) return;
      clearTimeout(firstMessageTimer);
      firstMessageTimer = undefined;
    };
    const expectFirstMessage = () => {
      firstMessageTimer = setTimeout(() => {
        firstMessageTimer = undefined;
        // The server holds the message back (its budgets are full): the client did send.
        if (budgeted?.holdingBack() === true) {
          expectFirstMessage();
          return;
        }
        connections.refusedCalls.first_message_timeout++;
        const code = refuse(
          call,
          new SeppError(
            'resource_exhausted',
            `no first message within ${options.firstMessageTimeoutMs} ms of the call's start ` +
              '(grpc.first_message_timeout_ms): send the request, or the subscribe of a stream, as it opens',
          ),
        );
        if (!keyed) return;
        try {
          options.observeRefusal(method.path.slice(keyedPrefix.length), code);
        } catch {
          // Telemetry failing must not fail the server: the call is answered already.
        }
      }, options.firstMessageTimeoutMs);
      firstMessageTimer.unref();
    };
    /** Everything the call holds goes back: it ended, or was answered. */
    const finish = () => {
      stopFirstMessageTimer();
      release();
      budgeted?.finished();
      answer?.finished();
    };

    return new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata: Metadata, forward: (metadata: Metadata) => void) => {
            // This runs inside grpc-js's own event handlers: nothing may escape it.
            let refusal: SeppError | null;
            try {
              refusal = admit(metadata);
              if (refusal === null) {
                budgeted = options.bytesInFlight.follow(call, connection, callerName, method.requestStream);
                if (unary) answer = options.unsentAnswers.follow(connection, callerName, method.path);
              }
            } catch (error) {
              refusal = toSeppError(error);
            }
            if (refusal === null) {
              requestMetadata = metadata;
              const run = () => {
                // A call without a key has its own, shorter deadline for its request (admitKeyless).
                if (holding === undefined) expectFirstMessage();
                forward(metadata);
              };
              // A unary call runs once its answer has room (its wait is the server's, not its first message's).
              if (answer === undefined) run();
              else answer.admit(run);
              return;
            }
            const code = refuse(call, refusal);
            if (!keyed) return;
            try {
              options.observeRefusal(method.path.slice(keyedPrefix.length), code);
            } catch {
              // Telemetry failing must not fail the server: the call is answered already.
            }
          },
          onReceiveMessage: (message: unknown, forward: (message: unknown) => void) => {
            // The request arrived: a call without a key no longer needs its deadline.
            if (holding !== undefined) clearTimeout(holding.timer);
            stopFirstMessageTimer();
            budgeted?.delivered();
            // A write that lists items keeps room for the most it can answer before its handler
            // has its request, waiting for it as a call waits to run (unsent-answers.ts).
            const boundBytes =
              answer === undefined ? undefined : options.answerBytesMaxOf(method.path, message);
            if (answer !== undefined && boundBytes !== undefined)
              answer.reserve(boundBytes, () => forward(message));
            else forward(message);
          },
          onCancel: finish,
        }),
      // A unary answer's headers wait for its decision: a refused answer then goes as trailers only,
      // which no flow-control window holds back (after headers, the trailers wait behind the window).
      sendMetadata: (metadata: Metadata, next: (metadata: Metadata) => void) => {
        if (answer === undefined) next(metadata);
        else heldHeaders = () => next(metadata);
      },
      sendMessage: (message: unknown, next: (message: unknown) => void) => {
        if (answer === undefined) {
          next(message);
          return;
        }
        let bytes: Buffer;
        try {
          bytes = method.responseSerialize(message);
        } catch {
          // grpc-js serializes it again and answers INTERNAL, as without this interceptor.
          sendHeaders();
          next(message);
          return;
        }
        const refusal = answer.hold(bytes.length);
        if (refusal === null) {
          sendHeaders();
          next(bytes);
          return;
        }
        heldHeaders = undefined;
        connections.refusedCalls.unread_answers++;
        finish();
        const code = refuse(call, refusal);
        // Its observation ends with this code, and a Reserve gives its jobs back (refused-answers.ts).
        if (requestMetadata !== undefined) options.refusedAnswers.refused(requestMetadata, code);
      },
      // A unary call's status goes out once its answer was taken by HTTP/2 (grpc-js waits for the write).
      sendStatus: (sent, next) => {
        finish();
        sendHeaders();
        next(sent);
      },
    });
  };
}

/** Ends a call with the status of `error`, before grpc-js read any of its body; returns the code. */
function refuse(call: ServerInterceptingCallInterface, error: SeppError): status {
  const { code = status.INTERNAL, details = '', metadata = null } = toServiceError(error);
  call.sendStatus({ code, details, metadata });
  return code;
}
