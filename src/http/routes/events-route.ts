/**
 * Job lifecycle events as Server-Sent Events: the gRPC Events stream over
 * HTTP, with the same engine subscription and so the same backlog rules (in
 * commit order after each commit is durable; at most 256 KiB handed to the
 * socket and not yet written; a reader that falls out of the backlog is
 * ended; limits.max_event_subscribers streams at once).
 *
 * Every event's SSE id is `<streamId>:<sequence>`, and so is the id of the
 * `caught_up` event that marks the end of the backlog, so a client that
 * reconnects with `Last-Event-ID` (EventSource does it by itself) resumes
 * exactly after the last event it got: none twice, none missed. A resume the
 * server cannot serve (it restarted, or the events are no longer kept)
 * answers 416 `out_of_range`; read the state you need and subscribe again.
 */
import { requireInScope } from '../../config/index.ts';
import { SeppError } from '../../engine/errors.ts';
import type { EventSink } from '../../engine/events/index.ts';
import type { EventStart, LifecycleEventKind } from '../../engine/events/lifecycle-event.ts';
import { lifecycleEventKinds } from '../../engine/events/lifecycle-event.ts';
import { eventToJson } from '../job-json.ts';
import { stringifyWithRaw } from '../raw-json.ts';
import type { ApiContext, ApiRequest, RouteSpec } from '../route-spec.ts';
import { ref } from '../schema-primitives.ts';
import { queryBoolean, queryList, queryString } from './request-parts.ts';

/**
 * The engine words its refusals of a subscription for gRPC (`after_sequence`,
 * GetJob); over HTTP the same things have these names.
 */
const httpNames: readonly (readonly [string, string])[] = [
  ['after_sequence is', "Last-Event-ID's sequence is"],
  ['without after_sequence', 'without Last-Event-ID'],
  ['with GetJob or ListQueues', '(GET /v1/jobs/{jobId})'],
];

function inHttpTerms(error: SeppError): SeppError {
  let message = error.message;
  for (const [grpc, http] of httpNames) message = message.replaceAll(grpc, http);
  return message === error.message ? error : new SeppError(error.code, message);
}

/** Where a subscription starts: after `Last-Event-ID` (header, or `lastEventId`), else oldest or now. */
function startOf(request: ApiRequest, currentStreamId: string): EventStart {
  const header = request.headers['last-event-id'];
  const fromQuery = queryString(request, 'lastEventId', 128);
  const resume = typeof header === 'string' && header !== '' ? header : fromQuery;
  if (resume !== undefined && resume !== '') {
    const match = /^([0-9a-f]{1,64}):(\d{1,16})$/.exec(resume);
    if (match === null) {
      throw new SeppError(
        'invalid_argument',
        `Last-Event-ID: ${JSON.stringify(resume.slice(0, 80))} is not an event id of this API (<streamId>:<sequence>)`,
      );
    }
    const streamId = match[1] ?? '';
    if (streamId !== currentStreamId) {
      throw new SeppError(
        'out_of_range',
        `Last-Event-ID: stream ${streamId} is not this server's event stream (${currentStreamId}): this ` +
          "server restarted since (events are not kept across restarts), or the id is another server's " +
          '(servers sharing a PostgreSQL database each have their own events). Read the state you need ' +
          '(GET /v1/jobs/{jobId}) and subscribe again without Last-Event-ID',
      );
    }
    // A resume point wins over fromOldest: EventSource reconnects with the same URL and the header.
    return { kind: 'after', streamId, sequence: Number(match[2]) };
  }
  return queryBoolean(request, 'fromOldest') === true ? { kind: 'oldest' } : { kind: 'now' };
}

export function eventsRoute(ctx: ApiContext): RouteSpec {
  // Read at each call, not here: the OpenAPI document is built from these routes without an engine.
  const engine = () => ctx.engine;
  return {
    kind: 'sse',
    method: 'GET',
    path: '/v1/events',
    operationId: 'events',
    permission: 'read',
    scope: 'handler',
    tag: 'events',
    summary: 'Job lifecycle events as Server-Sent Events, resumable with Last-Event-ID',
    description:
      'Each event is `id: <streamId>:<sequence>` and `data: <JobEvent JSON>`. An event named `caught_up` ' +
      '(data: `{"streamId", "sequence"}`, with an id too) says the backlog has been read and what follows is ' +
      'live; one named `end` (data: an error object) says why the server ended the stream (it fell behind ' +
      'the backlog, or the server is shutting down). Comment lines keep a quiet stream alive every 15 s.',
    query: {
      queues: {
        description: 'only these queues (repeat, or separate with commas)',
        schema: { type: 'string' },
      },
      jobIds: { description: 'only these jobs', schema: { type: 'string' } },
      kinds: {
        description: `only these kinds: ${lifecycleEventKinds.join(', ')}`,
        schema: { type: 'string' },
      },
      fromOldest: {
        description: 'start from the oldest event kept instead of now',
        schema: { type: 'boolean' },
      },
      lastEventId: {
        description: 'resume after this event id, for clients that cannot send the Last-Event-ID header',
        schema: { type: 'string' },
      },
    },
    event: ref('JobEvent'),
    errors: ['out_of_range'],
    open(request, stream) {
      const limits = engine().limits;
      const queues = queryList(request, 'queues', limits.maxReserveQueues);
      // A key scoped to queues names only its queues, and sees only their events.
      const scope = request.caller.scope;
      requireInScope(
        request.caller,
        queues.map((queue, i) => ({ queue, field: `queues[${i}]` })),
      );
      const filter = {
        queues,
        jobIds: queryList(request, 'jobIds', limits.maxBatchJobs),
        kinds: queryList(request, 'kinds', lifecycleEventKinds.length) as LifecycleEventKind[],
        ...(scope === null ? {} : { queueAllowed: (queue: string) => scope.allows(queue) }),
      };
      const streamId = engine().eventStreamId;
      const start = startOf(request, streamId);
      const sink: EventSink = {
        send: (events, written) => {
          stream.send(
            events.map((event) => ({
              id: `${streamId}:${event.sequence}`,
              data: stringifyWithRaw(eventToJson(event)),
            })),
            written,
          );
        },
        caughtUp: (sequence) => {
          stream.send([
            {
              id: `${streamId}:${sequence}`,
              event: 'caught_up',
              data: JSON.stringify({ streamId, sequence }),
            },
          ]);
        },
        end: (ended) => {
          const error = inHttpTerms(ended);
          stream.send([
            { event: 'end', data: JSON.stringify({ error: { code: error.code, message: error.message } }) },
          ]);
          stream.end();
        },
      };
      const subscription = (() => {
        try {
          return engine().subscribeEvents(filter, start, sink, ctx.eventOwner(request.caller));
        } catch (error) {
          throw error instanceof SeppError ? inHttpTerms(error) : error;
        }
      })();
      // The subscription may have ended the stream already (it fell behind at once).
      stream.onClose(() => subscription.close());
      /** Ends the stream with an `end` event that says why. */
      const endWith = (code: string, message: string) => {
        stream.send([{ event: 'end', data: JSON.stringify({ error: { code, message } }) }]);
        stream.end();
      };
      const stopDrain = ctx.onDrain(() =>
        endWith('unavailable', 'sepp is shutting down; resume against the restarted server'),
      );
      stream.onClose(stopDrain);
      // A reload that removes the key, or changes its role or queues, ends the stream (gRPC's Events too).
      const stopKeys = ctx.onKeysChanged(request.caller, (ended) => {
        if (ended !== null) endWith(ended.code, ended.message);
      });
      stream.onClose(stopKeys);
      // A subscription from now that has nothing to catch up on still tells the client it is live.
      stream.start();
    },
  };
}
