/**
 * Plays producer and worker for one job, the way an instrumented service
 * would, to show how a trace crosses sepp (docs/observability.md, "Tracing a
 * job"): a producer span's traceparent goes in with Enqueue, GetJob shows it
 * stored, Reserve hands it back, and the worker's span links to it.
 *
 *   npx tsx scripts/trace-a-job.ts [grpc address, default 127.0.0.1:50051]
 */

import { randomBytes } from 'node:crypto';
import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { QueueServiceClient } from '../clients/typescript/src/gen/sepp/v1/queue_service.js';

const client = new QueueServiceClient(process.argv[2] ?? '127.0.0.1:50051', credentials.createInsecure());
function unary<Req, Res>(
  method: (r: Req, m: Metadata, o: object, cb: (e: ServiceError | null, res: Res) => void) => unknown,
  request: Req,
): Promise<Res> {
  return new Promise((resolve, reject) =>
    method.call(client, request, new Metadata(), {}, (e, res) => (e ? reject(e) : resolve(res))),
  );
}

// The producer's span, as its own tracer would start it (ids made here to stay dependency-free).
const traceId = randomBytes(16).toString('hex');
const producerSpanId = randomBytes(8).toString('hex');
const traceparent = `00-${traceId}-${producerSpanId}-01`;
console.log(`producer span      ${traceparent}`);

const { jobId } = await unary(client.enqueue, {
  job: {
    queue: 'emails',
    type: 'send_welcome',
    payload: Buffer.from('{"to":"ada@example.com"}'),
    contentType: 'application/json',
    priority: 0,
    schedule: undefined,
    maxAttempts: 0,
    idempotencyKey: '',
    metadata: {},
    traceparent,
    tracestate: '',
    uniqueWhileActive: false,
    group: '',
    dependsOn: [],
    onDependencyFailure: 0,
    timeoutMs: 0,
    debounceKey: '',
    debounceMs: 0,
    debounceMaxMs: 0,
  },
});
console.log(`enqueued           job ${jobId}`);
const { job } = await unary(client.getJob, { jobId });
console.log(`stored with job    ${job?.traceparent}`);

const { jobs } = await unary(client.reserve, {
  maxResponseBytes: 0,
  queues: ['emails'],
  maxJobs: 1,
  leaseDurationMs: 30_000,
  waitTimeoutMs: 1000,
  workerId: 'demo-worker',
});
const leased = jobs[0];
if (leased === undefined) throw new Error('no job reserved');
console.log(`worker received    ${leased.traceparent} (attempt ${leased.attempt})`);
// The worker's process span: a new span that links to the producer's context it was handed.
const workerSpanId = randomBytes(8).toString('hex');
console.log(
  `worker span        00-${traceId}-${workerSpanId}-01 links to ${leased.traceparent.split('-')[2]}`,
);
await unary(client.ack, { jobId: leased.jobId, attempt: leased.attempt });
console.log('acked');
client.close();
