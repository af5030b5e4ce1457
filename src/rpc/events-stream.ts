/**
 * Events: a server stream of job lifecycle events. The engine's subscription
 * decides what to send and when (in commit order, after each commit is
 * durable, at most 256 KiB ahead of what the network has taken); this
 * handler turns its batches into EventsResponse messages and reports each
 * one written when grpc-js has handed it to HTTP/2.
 *
 * Streams are counted from the call's start until its HTTP/2 stream closes
 * (grpc-js reports that as `cancelled`), including a stream the engine has
 * already ended that still holds unread messages, so the number of
 * subscribers and the memory they hold stay within limits.max_event_subscribers.
 */
import type { handleServerStreamingCall, ServerWritableStream } from '@grpc/grpc-js';
import type { EventsRequest, EventsResponse } from '../../clients/typescript/src/gen/sepp/v1/events.js';
import { SeppError, toSeppError } from '../engine/errors.ts';
import type { EventSubscription } from '../engine/events/event-log.ts';
import { eventToProto, subscriptionFromProto } from './events-convert.ts';
import { MalformedRequest, type RpcContext } from './rpc-context.ts';
import { toServiceError } from './status.ts';

export function createEventsHandler(
  ctx: RpcContext,
): handleServerStreamingCall<EventsRequest, EventsResponse> {
  let open = 0;
  return (call: ServerWritableStream<EventsRequest, EventsResponse>) => {
    let subscription: EventSubscription | undefined;
    let counted = false;
    let ended = false;
    const stream = {
      endForShutdown: () =>
        end(new SeppError('unavailable', 'sepp is shutting down; subscribe again to the restarted server')),
    };
    const release = () => {
      subscription?.close();
      ctx.streams.delete(stream);
      if (counted) open--;
      counted = false;
    };
    const end = (error: SeppError) => {
      if (ended) return;
      ended = true;
      subscription?.close();
      ctx.streams.delete(stream);
      if (!call.cancelled) call.emit('error', toServiceError(error));
    };
    call.once('cancelled', () => {
      ended = true;
      release();
    });
    // A call cancelled before it got here has nothing to send to.
    if (call.cancelled) return;
    try {
      if (ctx.draining) throw new SeppError('unavailable', 'sepp is shutting down');
      ctx.auth.authorize(call.metadata, 'read', 'Events');
      const request: unknown = call.request;
      if (request instanceof MalformedRequest) throw new SeppError('invalid_argument', request.message);
      const { filter, start } = subscriptionFromProto(call.request);
      const max = ctx.engine.limits.maxEventSubscribers;
      if (open >= max) {
        throw new SeppError(
          'resource_exhausted',
          max === 0
            ? 'events are turned off on this server (limits.max_event_subscribers = 0)'
            : `${open} Events streams are open, the limit is ${max} (limits.max_event_subscribers); retry later`,
        );
      }
      open++;
      counted = true;
      ctx.streams.add(stream);
      const streamId = ctx.engine.eventStreamId;
      subscription = ctx.engine.subscribeEvents(filter, start, {
        send: (events, written) => {
          if (ended) return;
          call.write({ streamId, events: events.map(eventToProto), caughtUp: false, sequence: 0 }, () =>
            written(),
          );
        },
        caughtUp: (sequence) => {
          if (!ended) call.write({ streamId, events: [], caughtUp: true, sequence });
        },
        end,
      });
    } catch (error) {
      end(toSeppError(error));
      release();
    }
  };
}
