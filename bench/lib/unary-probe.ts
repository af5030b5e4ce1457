/**
 * What the stall benchmarks (bench/bulk-stall.ts, bench/chain-cancel-stall.ts) share: a unary
 * gRPC call as a promise, and a probe that sends one Enqueue after another while an operation
 * runs, recording each one's latency.
 */
import { Metadata } from '@grpc/grpc-js';
import type { EnqueueJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { LatencyRecorder, type LatencySummary } from './latency.ts';

type Rpc<Req, Res> = (
  req: Req,
  md: Metadata,
  opts: { deadline: number },
  cb: (e: Error | null, r: Res) => void,
) => unknown;

/** `method` of `client` called with `request`, answered within 10 minutes. */
export function unary<Req, Res>(
  client: QueueServiceClient,
  method: Rpc<Req, Res>,
  request: Req,
): Promise<Res> {
  return new Promise((resolve, reject) =>
    method.call(client, request, new Metadata(), { deadline: Date.now() + 600_000 }, (error, response) =>
      error ? reject(error) : resolve(response),
    ),
  );
}

/** Sends Enqueues of `job`, one after another, until `stop` settles; their latencies (none sent: undefined). */
export async function probeEnqueues(
  client: QueueServiceClient,
  stop: Promise<unknown>,
  job: EnqueueJob,
): Promise<LatencySummary | undefined> {
  let stopped = false;
  // Either way the operation ended (its own failure is the caller's to report).
  const end = () => {
    stopped = true;
  };
  void stop.then(end, end);
  const latencies = new LatencyRecorder();
  while (!stopped) {
    const started = performance.now();
    await unary(client, client.enqueue, { job });
    latencies.record(performance.now() - started);
  }
  return latencies.summary();
}
