/**
 * The gRPC server: QueueService, the standard health service and server
 * reflection, on one address, with TLS when configured.
 */
import * as grpc from '@grpc/grpc-js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { nulRefusal } from '../engine/checks.ts';
import type { Engine } from '../engine/engine.ts';
import { SeppError, toSeppError } from '../engine/errors.ts';
import { KeyRefusalLines } from '../platform/key-refusal-lines.ts';
import { admissionInterceptor } from './admission.ts';
import { answerBytesMaxOf } from './answer-bounds.ts';
import { type ApiKey, Authenticator } from './auth.ts';
import { createBackupHandler } from './backup-stream.ts';
import { BytesInFlight, type BytesInFlightStats } from './bytes-in-flight.ts';
import type { BugReporter } from './call-guard.ts';
import { type ConnectionStats, Connections } from './connections.ts';
import { createEventsHandler } from './events-stream.ts';
import { descriptorSetBase64 } from './gen/descriptor-set.js';
import { routeGrpcLogs } from './grpc-logging.ts';
import { Health } from './health.ts';
import type { RpcObserver } from './observer.ts';
import { encodeProduceResponse } from './produce-response-codec.ts';
import { createProduceHandler } from './produce-stream.ts';
import { addReflection } from './reflection.ts';
import { RefusedAnswers } from './refused-answers.ts';
import { MalformedRequest, type RpcContext, type RpcLog, type ServerFacts } from './rpc-context.ts';
import { createUnaryHandlers } from './unary-handlers.ts';
import { UnsentAnswers } from './unsent-answers.ts';
import { Utf8Fields } from './utf8-fields.ts';
import { decodeWorkRequestDirect } from './work-request-codec.ts';
import { encodeWorkResponse } from './work-response-codec.ts';
import { createWorkHandler } from './work-stream.ts';

export interface RpcServerOptions {
  engine: Engine;
  /** Where Backup writes its temporary copy. */
  dataDir: string;
  apiKeys: readonly ApiKey[];
  facts: ServerFacts;
  tls?: { certPem: Buffer; keyPem: Buffer };
  /** Metrics, spans and request logs per call (telemetry, wired by app.ts). */
  observer?: RpcObserver;
  /** Where bugs caught in handlers and grpc-js's own lines are logged; default nowhere (grpc-js: stderr). */
  log?: RpcLog;
  /** Rereads the config file for ReloadConfig (app.ts); without it, ReloadConfig is FAILED_PRECONDITION. */
  reloadConfig?: RpcContext['reloadConfig'];
}

export interface RpcServer {
  /** Listens on `host:port` (port 0 picks a free one); resolves with the bound port. */
  listen(host: string, port: number): Promise<number>;
  /** Connections open, and what the limits refused, for metrics. */
  connectionStats(): ConnectionStats;
  /** Request bytes in flight, and unary answers not yet sent, per API key and per connection (grpc.max_bytes_in_flight_*). */
  bytesInFlightStats(): BytesInFlightStats;
  /**
   * Graceful stop: refuse new calls, end open streams, answer waiting
   * long-polls with no jobs (the engine does that on close), then wait up to
   * `timeoutMs` for calls in flight before forcing the rest.
   */
  shutdown(timeoutMs: number): Promise<void>;
  /**
   * Replaces the API keys (a reload): every later call is checked against
   * them, and each open stream at once, so a stream of a revoked key ends
   * with UNAUTHENTICATED (and one whose key lost the role, PERMISSION_DENIED).
   */
  replaceApiKeys(keys: readonly ApiKey[]): void;
  /**
   * This server refuses every call from now on (app.ts: the store's schema went past it): ends
   * every open stream and waiting Reserve with `refusal` at once, the health service answers
   * NOT_SERVING, and every connection open now is asked to close (a GOAWAY, then closed after
   * `shutOutGraceMs`), so that clients connect again — through a load balancer that no longer
   * sends them here (`/readyz` answers 503), to another server. Its gRPC port stops taking
   * connections (logged once, `rpc.listener_closed`): a client given several servers in one
   * address (pick_first) reconnects to the next rather than to this one. A call that meets the
   * refusal before its connection closes gets it (the store's, for most).
   */
  shutOut(refusal: SeppError): void;
}

const serviceName = 'sepp.v1.QueueService';

/** How long the connections of a server shut out have to finish their calls after its GOAWAY. */
const shutOutGraceMs = 5_000;

/**
 * Wraps each method's request decoder so that bytes that do not decode, or
 * whose string fields are not UTF-8, reach the handler as MalformedRequest
 * (INVALID_ARGUMENT naming the field) instead of grpc-js's INTERNAL or a
 * string with U+FFFD in it. `direct` decoders go first and answer only for
 * requests whose strings are all ASCII without U+0000 (nothing to check).
 */
function withMalformedRequests<T extends grpc.ServiceDefinition>(
  definition: T,
  utf8: Utf8Fields,
  direct: Partial<Record<keyof T, (bytes: Buffer) => unknown>> = {},
): T {
  const wrapped: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    const rpc = method.path.split('/').pop();
    const decodeDirect = direct[name];
    wrapped[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        // A canonical request that needs no UTF-8 check, decoded by hand; undefined for any other.
        const fast = decodeDirect?.(bytes);
        if (fast !== undefined) return fast;
        let request: unknown;
        try {
          request = method.requestDeserialize(bytes);
        } catch (error) {
          const detail = error instanceof Error ? error.message : String(error);
          return new MalformedRequest(`the request is not a valid ${rpc} message: ${detail}`);
        }
        const invalid = utf8.firstInvalid(method.path, bytes);
        if (invalid !== null) {
          return new MalformedRequest(
            invalid.problem === 'nul'
              ? `${invalid.field}: ${nulRefusal}`
              : `${invalid.field}: not valid UTF-8; string fields hold UTF-8 text (send other bytes in a bytes field such as payload)`,
            request,
          );
        }
        return request;
      },
    };
  }
  return wrapped as T;
}

/**
 * Lets each method's answer serializer take bytes the admission interceptor
 * serialized already (it counts an answer's bytes before they are written:
 * unsent-answers.ts), so an answer is serialized once.
 */
function withSerializedAnswers<T extends grpc.ServiceDefinition>(definition: T): T {
  const wrapped: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    wrapped[name] = {
      ...method,
      responseSerialize: (answer: unknown) =>
        Buffer.isBuffer(answer) ? answer : method.responseSerialize(answer),
    };
  }
  return wrapped as T;
}

export function createRpcServer(options: RpcServerOptions): RpcServer {
  const { facts } = options;
  const { grpcLimits } = facts;
  if (options.log !== undefined) routeGrpcLogs(options.log);
  const auth = new Authenticator(options.apiKeys);
  const credentials = options.tls
    ? grpc.ServerCredentials.createSsl(
        null,
        [{ cert_chain: options.tls.certPem, private_key: options.tls.keyPem }],
        false,
      )
    : grpc.ServerCredentials.createInsecure();
  // sepp accepts connections itself (connections.ts) and hands them to grpc-js.
  let injector: grpc.ConnectionInjector | undefined;
  const connections = new Connections(grpcLimits, (socket) => injector?.injectConnection(socket));
  const bytesInFlight = new BytesInFlight(grpcLimits);
  // Only a key's own clients see its refusals: the log names the key too, once a minute at most.
  const answerRefusals = new KeyRefusalLines(
    (key, { refused, givenBack }) =>
      options.log?.warn('rpc.answers_refused', {
        key,
        refused,
        given_back: givenBack,
        detail:
          `${refused} calls of API key ${key} were refused RESOURCE_EXHAUSTED and ${givenBack} times leased jobs ` +
          'were given back (of Reserve answers refused, of Work streams whose jobs were not sent) since the last ' +
          'line: its clients do not read their answers ' +
          '(grpc.max_bytes_in_flight_per_key, grpc.max_bytes_in_flight_per_connection; docs/configuration.md, "Answers not yet sent")',
      }),
    facts.nowMs,
  );
  const unsentAnswers = new UnsentAnswers(
    { ...grpcLimits, maxMessageBytes: facts.maxMessageBytes },
    (caller) => answerRefusals.refused(caller),
  );
  const refusedAnswers = new RefusedAnswers();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': facts.maxMessageBytes,
    'grpc.max_send_message_length': facts.maxMessageBytes,
    // The server's own pings (grpc.keepalive_ms, grpc.keepalive_timeout_ms; grpc-js's server reads
    // both options): a client gone without closing its connection is dropped within their sum, and
    // its Work streams stop counting as waiting. Clients' pings are answered at any interval:
    // grpc-js servers have no ping policy (C-core's grpc.http2.min_ping_interval_without_data_ms and
    // max_ping_strikes are not among their options), so no too_many_pings GOAWAY; the SDKs ping
    // every 30 s while a call is open (docs/configuration.md, "Keepalive pings").
    'grpc.keepalive_time_ms': grpcLimits.keepaliveMs,
    'grpc.keepalive_timeout_ms': grpcLimits.keepaliveTimeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
    // Calls per connection: a client cannot hold unbounded server state on one connection.
    'grpc.max_concurrent_streams': grpcLimits.maxStreamsPerConnection,
    'grpc.max_connection_idle_ms': grpcLimits.idleTimeoutMs,
    interceptors: [
      admissionInterceptor({
        auth,
        connections,
        requestTimeoutMs: grpcLimits.handshakeTimeoutMs,
        firstMessageTimeoutMs: grpcLimits.firstMessageTimeoutMs,
        bytesInFlight,
        unsentAnswers,
        answerBytesMaxOf: (method, request) => answerBytesMaxOf(method, request, options.engine.limits),
        refusedAnswers,
        observeRefusal: (method, code) =>
          options.observer?.callStarted({ method, parent: undefined }).end(code, undefined),
      }),
    ],
  });
  const ctx: RpcContext = {
    engine: options.engine,
    auth,
    facts,
    observer: options.observer,
    draining: false,
    refusedAnswers,
    answerRefusals,
    streamAnswers: (peer, caller) => unsentAnswers.followStream(connections.of(peer), caller),
    streams: new Set(),
    reloadConfig: options.reloadConfig,
  };
  const onBug: BugReporter = (error, rpc) =>
    options.log?.error('rpc.internal_error', { rpc, error: error.message });
  const descriptorSet = Buffer.from(descriptorSetBase64, 'base64');
  const utf8 = new Utf8Fields(descriptorSet, serviceName);
  const queueService = withSerializedAnswers(
    withMalformedRequests(QueueServiceService, utf8, { work: decodeWorkRequestDirect }),
  );
  server.addService(
    // The streams' answers by their own encoders: the generated one's bytes, less CPU per job.
    {
      ...queueService,
      work: { ...queueService.work, responseSerialize: encodeWorkResponse },
      produce: { ...queueService.produce, responseSerialize: encodeProduceResponse },
    },
    {
      ...createUnaryHandlers(ctx, onBug),
      produce: createProduceHandler(ctx, onBug),
      work: createWorkHandler(ctx, onBug),
      backup: createBackupHandler(ctx, options.dataDir, onBug),
      events: createEventsHandler(ctx, onBug),
    },
  );

  const health = new Health({ '': 'SERVING', [serviceName]: 'SERVING' });
  health.addToServer(server, descriptorSet);
  // Reflection describes every service this server answers (sepp's, health, reflection)
  // from the descriptor set protoc wrote, file by file (reflection.ts).
  addReflection(server, descriptorSet);
  injector = server.createConnectionInjector(credentials);

  return {
    listen: (host, port) => connections.listen(host, port),
    connectionStats: () => connections.stats(),
    bytesInFlightStats: () => ({ ...bytesInFlight.stats(), answers: unsentAnswers.stats() }),
    replaceApiKeys(keys) {
      ctx.auth.replaceKeys(keys);
      for (const stream of [...ctx.streams]) {
        const { metadata, permission, rpc, scope } = stream.access;
        try {
          const caller = ctx.auth.authorize(metadata, permission, rpc);
          // The stream checked its queues against the scope it opened with: a new scope, a new stream.
          if ((caller.scope?.describe() ?? null) !== (scope?.describe() ?? null)) {
            stream.endWith(
              new SeppError(
                'unavailable',
                `the queues of API key ${caller.name} changed in a reload; open the stream again`,
              ),
            );
          }
        } catch (error) {
          stream.endWith(toSeppError(error));
        }
      }
    },
    shutOut(refusal) {
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(serviceName, 'NOT_SERVING');
      for (const stream of [...ctx.streams]) stream.endWith(refusal);
      // Before the GOAWAY: a client that reconnects at once must find the port closed, not this server.
      connections.stopAccepting();
      options.log?.warn('rpc.listener_closed', { reason: refusal.message });
      // After the statuses above, which the connections' GOAWAY lets through.
      injector?.drain(shutOutGraceMs);
    },
    async shutdown(timeoutMs) {
      ctx.draining = true;
      connections.stopAccepting();
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(serviceName, 'NOT_SERVING');
      for (const stream of [...ctx.streams]) stream.endForShutdown();
      options.engine.drainWaiters();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          connections.destroyAll();
          resolve();
        }, timeoutMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
