/**
 * Events: a server stream of job lifecycle events. The engine's subscription
 * decides what to send and when (in commit order, after each commit is
 * durable, at most 256 KiB ahead of what the network has taken); this
 * handler turns its batches into EventsResponse messages and reports each
 * one written when grpc-js has handed it to HTTP/2. It runs inside
 * call-guard.ts's guard: whatever it throws ends the call with its status.
 *
 * Streams are counted from the call's start until its HTTP/2 stream closes
 * (`onStreamClosed`), including a stream the engine has already ended that
 * still holds unread messages, so the number of subscribers and the memory
 * they hold stay within limits.max_event_subscribers. The share of one key
 * (grpc.max_event_subscribers_per_key, when the server has API keys) is the
 * engine's to count (engine/events/event-log.ts), over this handler's streams
 * and the HTTP API's event streams and outcome waits together: one count, so
 * a key holds its share across both transports, never twice it.
 */
import type { handleServerStreamingCall } from '@grpc/grpc-js';
import type { EventsRequest, EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { requireInScope } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';
import { eventsTurnedOff } from '../engine/events/index.ts';
import { type BugReporter, guardServerStream } from './call-guard.ts';
import { eventToProto, subscriptionFromProto } from './events-convert.ts';
import { admit, MalformedRequest, type OpenStream, type RpcContext } from './rpc-context.ts';

export function createEventsHandler(
  ctx: RpcContext,
  onBug: BugReporter,
): handleServerStreamingCall<EventsRequest, EventsResponse> {
  let open = 0;
  return guardServerStream<EventsRequest, EventsResponse>('Events', onBug, (call, request) => {
    // A call cancelled before it got here has nothing to send to.
    if (call.closed) return;
    const caller = admit(ctx, call.metadata, 'read', 'Events');
    const raw: unknown = request;
    if (raw instanceof MalformedRequest) throw new SeppError('invalid_argument', raw.message);
    const { filter: asked, start } = subscriptionFromProto(request);
    // A key scoped to queues names only its queues, and sees only their events.
    const scope = caller.scope;
    requireInScope(
      caller,
      asked.queues.map((queue, i) => ({ queue, field: `queues[${i}]` })),
    );
    const filter =
      scope === null ? asked : { ...asked, queueAllowed: (queue: string) => scope.allows(queue) };
    const max = ctx.engine.limits.maxEventSubscribers;
    if (max === 0) throw eventsTurnedOff();
    if (open >= max) {
      throw new SeppError(
        'resource_exhausted',
        `${open} Events streams are open, the limit is ${max} (limits.max_event_subscribers); retry later`,
      );
    }
    const key = ctx.auth.enabled ? caller.name : undefined;
    open++;
    call.onStreamClosed(() => {
      open--;
    });
    const stream: OpenStream = {
      endForShutdown: () =>
        call.fail(
          new SeppError('unavailable', 'sepp is shutting down; subscribe again to the restarted server'),
        ),
      access: { metadata: call.metadata, permission: 'read', rpc: 'Events', scope },
      // A reload that revokes the key ends the subscription (call.onFinish closes it).
      endWith: (error) => call.fail(error),
    };
    const streamId = ctx.engine.eventStreamId;
    // The engine bounds the key's subscriptions over gRPC and the HTTP API together
    // (grpc.max_event_subscribers_per_key): its refusal ends this call with RESOURCE_EXHAUSTED.
    const subscription = ctx.engine.subscribeEvents(
      filter,
      start,
      {
        send: (events, written) => {
          call.write({ streamId, events: events.map(eventToProto), caughtUp: false, sequence: 0 }, written);
        },
        caughtUp: (sequence) => {
          call.write({ streamId, events: [], caughtUp: true, sequence });
        },
        end: (error) => call.fail(error),
      },
      key === undefined
        ? undefined
        : { key, maxSubscriptions: ctx.facts.grpcLimits.maxEventSubscribersPerKey },
    );
    ctx.streams.add(stream);
    // Runs at once if the subscription already ended the call.
    call.onFinish(() => {
      subscription.close();
      ctx.streams.delete(stream);
    });
  });
}
