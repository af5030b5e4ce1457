/** Produce and Work streams for tests: opening, subscribing, and collecting what the server sends. */
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import type { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { WorkRequest, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';

export type ProduceStream = ClientDuplexStream<ProduceRequest, ProduceResponse>;
export type WorkStream = ClientDuplexStream<WorkRequest, WorkResponse>;

/** Resolves with every message the stream sent once `until` holds; rejects on the stream's error. */
export function collect<Req, T>(
  stream: ClientDuplexStream<Req, T>,
  until: (seen: T[]) => boolean,
): Promise<T[]> {
  const seen: T[] = [];
  return new Promise((resolve, reject) => {
    if (until(seen)) resolve(seen);
    stream.on('data', (m: T) => {
      seen.push(m);
      if (until(seen)) resolve(seen);
    });
    stream.on('error', reject);
  });
}

/** How a stream ended: its status code and details (0 for OK). */
export function streamEnd<Req, T>(
  stream: ClientDuplexStream<Req, T>,
): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => {
    stream.on('error', (error: ServiceError) => resolve({ code: error.code, details: error.details }));
    stream.on('status', (s: { code: number; details: string }) => {
      if (s.code === 0) resolve({ code: 0, details: s.details });
    });
    // Reading keeps the stream flowing so that its status arrives.
    stream.on('data', () => {});
  });
}

export function subscribeMessage(
  queues: string[],
  fields: { leaseDurationMs?: number; workerId?: string; batchResponses?: boolean } = {},
): WorkRequest {
  return {
    requestId: 0,
    kind: {
      $case: 'subscribe',
      value: {
        queues,
        leaseDurationMs: fields.leaseDurationMs ?? 60_000,
        workerId: fields.workerId ?? 'test',
        batchResponses: fields.batchResponses ?? false,
      },
    },
  };
}

export function creditMessage(jobs: number): WorkRequest {
  return { requestId: 0, kind: { $case: 'credit', value: { jobs } } };
}

export function openProduce(client: QueueServiceClient): ProduceStream {
  return client.produce() as ProduceStream;
}

export function openWork(client: QueueServiceClient): WorkStream {
  return client.work() as WorkStream;
}
