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
 * they hold stay within limits.max_event_subscribers; and, when the server
 * has API keys, per key within grpc.max_event_subscribers_per_key, so one
 * key (a producer's, say) cannot take every slot.
 */
import type { handleServerStreamingCall } from '@grpc/grpc-js';
import type { EventsRequest, EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { requireInScope } from '../config/index.ts';
import { SeppError } from '../engine/errors.ts';
import { type BugReporter, guardServerStream } from './call-guard.ts';
import { eventToProto, subscriptionFromProto } from './events-convert.ts';
import { admit, MalformedRequest, type OpenStream, type RpcContext } from './rpc-context.ts';

export function createEventsHandler(
  ctx: RpcContext,
  onBug: BugReporter,
): handleServerStreamingCall<EventsRequest, EventsResponse> {
  let open = 0;
  /** Streams open per key name (only while the server has keys). */
  const openByKey = new Map<string, number>();
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
    if (open >= max) {
      throw new SeppError(
        'resource_exhausted',
        max === 0
          ? 'events are turned off on this server (limits.max_event_subscribers = 0)'
          : `${open} Events streams are open, the limit is ${max} (limits.max_event_subscribers); retry later`,
      );
    }
    const perKey = ctx.facts.grpcLimits.maxEventSubscribersPerKey;
    const key = ctx.auth.enabled ? caller.name : undefined;
    const mine = key === undefined ? 0 : (openByKey.get(key) ?? 0);
    if (key !== undefined && mine >= perKey) {
      throw new SeppError(
        'resource_exhausted',
        `key ${key} holds ${mine} Events streams, the limit per key is ${perKey} ` +
          '(grpc.max_event_subscribers_per_key); close one, or give this client a key of its own',
      );
    }
    open++;
    if (key !== undefined) openByKey.set(key, mine + 1);
    call.onStreamClosed(() => {
      open--;
      if (key === undefined) return;
      const left = (openByKey.get(key) ?? 1) - 1;
      if (left > 0) openByKey.set(key, left);
      else openByKey.delete(key);
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
    // The engine bounds the key's subscriptions over gRPC and the HTTP API together.
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
      key === undefined ? undefined : { key, maxSubscriptions: perKey },
    );
    ctx.streams.add(stream);
    // Runs at once if the subscription already ended the call.
    call.onFinish(() => {
      subscription.close();
      ctx.streams.delete(stream);
    });
  });
}
