/**
 * The gRPC server: QueueService, the standard health service and server
 * reflection, on one address, with TLS when configured.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation } from 'grpc-health-check';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { Engine } from '../engine/engine.ts';
import { type ApiKey, Authenticator } from './auth.ts';
import { createBackupHandler } from './backup-stream.ts';
import { createEventsHandler } from './events-stream.ts';
import { descriptorSetBase64 } from './gen/descriptor-set.js';
import type { RpcObserver } from './observer.ts';
import { createProduceHandler } from './produce-stream.ts';
import { MalformedRequest, type RpcContext, type ServerFacts } from './rpc-context.ts';
import { createUnaryHandlers } from './unary-handlers.ts';
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
}

export interface RpcServer {
  /** Binds `host:port` (port 0 picks a free one); resolves with the bound port. */
  listen(address: string): Promise<number>;
  /**
   * Graceful stop: refuse new calls, end open streams, answer waiting
   * long-polls with no jobs (the engine does that on close), then wait up to
   * `timeoutMs` for calls in flight before forcing the rest.
   */
  shutdown(timeoutMs: number): Promise<void>;
}

const serviceName = 'sepp.v1.QueueService';

/** Wraps each method's request decoder so bytes that do not decode reach the handler as MalformedRequest. */
function withMalformedRequests<T extends grpc.ServiceDefinition>(definition: T): T {
  const wrapped: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    wrapped[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (error) {
          const detail = error instanceof Error ? error.message : String(error);
          return new MalformedRequest(
            `the request is not a valid ${method.path.split('/').pop()} message: ${detail}`,
          );
        }
      },
    };
  }
  return wrapped as T;
}

export function createRpcServer(options: RpcServerOptions): RpcServer {
  const { facts } = options;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': facts.maxMessageBytes,
    'grpc.max_send_message_length': facts.maxMessageBytes,
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_permit_without_calls': 1,
    // Streams per connection: a client cannot hold unbounded server state on one connection.
    'grpc.max_concurrent_streams': 10_000,
  });
  const ctx: RpcContext = {
    engine: options.engine,
    auth: new Authenticator(options.apiKeys),
    facts,
    observer: options.observer,
    draining: false,
    streams: new Set(),
  };
  server.addService(withMalformedRequests(QueueServiceService), {
    ...createUnaryHandlers(ctx),
    produce: createProduceHandler(ctx),
    work: createWorkHandler(ctx),
    backup: createBackupHandler(ctx, options.dataDir),
    events: createEventsHandler(ctx),
  });

  const health = new HealthImplementation({ '': 'SERVING', [serviceName]: 'SERVING' });
  health.addToServer(server);
  const packageDefinition = protoLoader.loadFileDescriptorSetFromBuffer(
    Buffer.from(descriptorSetBase64, 'base64'),
  );
  new ReflectionService(packageDefinition).addToServer(server);

  const credentials = options.tls
    ? grpc.ServerCredentials.createSsl(
        null,
        [{ cert_chain: options.tls.certPem, private_key: options.tls.keyPem }],
        false,
      )
    : grpc.ServerCredentials.createInsecure();

  return {
    listen(address) {
      return new Promise((resolve, reject) => {
        server.bindAsync(address, credentials, (error, port) => (error ? reject(error) : resolve(port)));
      });
    },
    async shutdown(timeoutMs) {
      ctx.draining = true;
      health.setStatus('', 'NOT_SERVING');
      health.setStatus(serviceName, 'NOT_SERVING');
      for (const stream of [...ctx.streams]) stream.endForShutdown();
      options.engine.drainWaiters();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
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
