/**
 * The standard gRPC health service (grpc.health.v1.Health: Check, Watch, List), answered as
 * grpc-health-check 2.1 answers it. That package compiles its health.proto when it is
 * imported, ~100 ms of CPU at every server start (#32); here the codecs come from the
 * descriptor set protoc wrote (the same health.proto, scripts/gen.mjs), built on the first
 * health call (lazy-service.ts).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { descriptorSubset, lazyService, once } from './lazy-service.ts';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';

interface HealthCheckRequest {
  service: string;
}
interface HealthCheckResponse {
  status: string;
}

/** List's answer: `map<string, HealthCheckResponse> statuses = 1` as its entries. */
interface ListResponse {
  statuses: { key: string; value: HealthCheckResponse }[];
}

/** List answers RESOURCE_EXHAUSTED beyond this many services (the reference's limit). */
const listLimit = 100;

export class Health {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Map<string, Set<(status: ServingStatus) => void>>();

  constructor(initial: Record<string, ServingStatus>) {
    for (const [service, status] of Object.entries(initial)) this.statuses.set(service, status);
  }

  setStatus(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    for (const watcher of this.watchers.get(service) ?? []) watcher(status);
  }

  /** How many service names have a Watch open now (their entries go with their last watcher). */
  watchedServices(): number {
    return this.watchers.size;
  }

  /** Adds the service to `server`; its codecs come from health.proto in `descriptorSet`. */
  addToServer(server: grpc.Server, descriptorSet: Uint8Array): void {
    const files = descriptorSubset(descriptorSet, ['grpc/health/v1/health.proto']);
    const definitions = once(() =>
      protoLoader.loadFileDescriptorSetFromBuffer(files, {
        keepCase: true,
        longs: String,
        enums: String,
        defaults: true,
        oneofs: true,
      }),
    );
    const service = lazyService(
      'grpc.health.v1.Health',
      [
        { name: 'Check', requestStream: false, responseStream: false },
        { name: 'Watch', requestStream: false, responseStream: true },
        { name: 'List', requestStream: false, responseStream: false },
      ],
      definitions,
    );
    server.addService(service, {
      Check: (
        call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>,
        callback: grpc.sendUnaryData<HealthCheckResponse>,
      ) => {
        const name = call.request.service;
        const status = this.statuses.get(name);
        if (status !== undefined) callback(null, { status });
        else callback({ code: grpc.status.NOT_FOUND, details: `Health status unknown for service ${name}` });
      },
      Watch: (call: grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => {
        const name = call.request.service;
        const watcher = (status: ServingStatus) => call.write({ status });
        const watchers = this.watchers.get(name) ?? new Set();
        watchers.add(watcher);
        this.watchers.set(name, watchers);
        // The entry goes with its last watcher: names come from clients, so none may stay behind.
        call.on('cancelled', () => {
          watchers.delete(watcher);
          if (watchers.size === 0 && this.watchers.get(name) === watchers) this.watchers.delete(name);
        });
        call.write({ status: this.statuses.get(name) ?? 'SERVICE_UNKNOWN' });
      },
      List: (
        _call: grpc.ServerUnaryCall<object, ListResponse>,
        callback: grpc.sendUnaryData<ListResponse>,
      ) => {
        if (this.statuses.size > listLimit) {
          callback({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'Too many services to list.' }, null);
          return;
        }
        // A codec built from a descriptor sees the map as the repeated entries it is on the
        // wire (key 1, value 2): the same bytes, in the same order, as the package's map.
        callback(null, { statuses: [...this.statuses].map(([key, status]) => ({ key, value: { status } })) });
      },
    });
  }
}
