/**
 * The two ways a client reaches the queue, behind one interface, so a test can
 * check the same behaviour over both: the unary calls (EnqueueBatch, Reserve,
 * Nack, Ack) and the streams (Produce, Work). Each lease over the streams opens
 * its own Work stream and settles over it.
 */
import type { ClientDuplexStream } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import type { EnqueueJob, EnqueueResult, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import type { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type {
  NackResponse,
  WorkRequest,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { call } from './server.ts';

export type Enqueued = { jobId: string; deduplicated: boolean } | { rejected: number; message: string };

export interface Transport {
  readonly name: 'unary' | 'stream';
  enqueue(job: EnqueueJob): Promise<Enqueued>;
  /** Leases the next job of `queue`, which must be ready now. */
  lease(queue: string, leaseMs?: number): Promise<LeasedJob>;
  /** Nacks with the queue's backoff. */
  nack(job: LeasedJob): Promise<NackResponse>;
  ack(job: LeasedJob): Promise<void>;
  close(): void;
}

function enqueued(result: EnqueueResult | undefined): Enqueued {
  const outcome = result?.outcome;
  if (outcome?.$case === 'accepted') return outcome.value;
  if (outcome?.$case === 'rejection')
    return { rejected: outcome.value.reason, message: outcome.value.message };
  throw new Error('no enqueue result');
}

export function unaryTransport(client: QueueServiceClient): Transport {
  return {
    name: 'unary',
    async enqueue(job) {
      const response = await call(client, client.enqueueBatch, { jobs: [job] });
      return enqueued(response.results[0]);
    },
    async lease(queue, leaseMs = 0) {
      const response = await call(client, client.reserve, {
        maxResponseBytes: 0,
        queues: [queue],
        maxJobs: 1,
        leaseDurationMs: leaseMs,
        waitTimeoutMs: 0,
        workerId: '',
      });
      const job = response.jobs[0];
      if (job === undefined) throw new Error(`no job to lease on ${queue}`);
      return job;
    },
    nack: (job) =>
      call(client, client.nack, {
        jobId: job.jobId,
        attempt: job.attempt,
        errorMessage: 'failed',
        errorClass: '',
        errorStack: '',
        directive: { $case: 'backoff', value: true },
      }),
    async ack(job) {
      await call(client, client.ack, { jobId: job.jobId, attempt: job.attempt });
    },
    close() {},
  };
}

export function streamTransport(client: QueueServiceClient): Transport {
  const produce = client.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
  const answers = new Map<number, (response: ProduceResponse) => void>();
  produce.on('data', (response: ProduceResponse) => answers.get(response.sequence)?.(response));
  produce.on('error', () => {});
  let sequence = 0;
  /** The Work stream each leased job came on, to settle it there. */
  const workOf = new Map<string, ClientDuplexStream<WorkRequest, WorkResponse>>();
  let requestId = 0;

  const settle = (job: LeasedJob, kind: WorkRequest['kind']): Promise<WorkResponse> => {
    const work = workOf.get(job.jobId);
    if (work === undefined) throw new Error(`job ${job.jobId} was not leased over a stream`);
    const id = ++requestId;
    return new Promise((resolve, reject) => {
      const onData = (response: WorkResponse) => {
        if (response.kind?.$case !== 'settled' || response.kind.value.requestId !== id) return;
        work.off('data', onData);
        workOf.delete(job.jobId);
        work.end();
        if (response.kind.value.code !== status.OK) reject(new Error(response.kind.value.message));
        else resolve(response);
      };
      work.on('data', onData);
      work.write({ requestId: id, kind });
    });
  };

  return {
    name: 'stream',
    enqueue(job) {
      const seq = ++sequence;
      return new Promise((resolve, reject) => {
        answers.set(seq, (response) => {
          answers.delete(seq);
          if (response.code !== status.OK) reject(new Error(response.message));
          else resolve(enqueued(response.results[0]));
        });
        produce.write({ sequence: seq, jobs: [job], atomic: false });
      });
    },
    lease(queue, leaseMs = 0) {
      const work = client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
      work.on('error', () => {});
      return new Promise((resolve, reject) => {
        work.on('data', (response: WorkResponse) => {
          const job =
            response.kind?.$case === 'job'
              ? response.kind.value
              : response.kind?.$case === 'batch'
                ? response.kind.value.jobs[0]
                : undefined;
          if (job === undefined) return;
          workOf.set(job.jobId, work);
          resolve(job);
        });
        work.on('error', reject);
        work.write({
          requestId: 0,
          kind: {
            $case: 'subscribe',
            value: { queues: [queue], leaseDurationMs: leaseMs, workerId: '', batchResponses: false },
          },
        });
        work.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
      });
    },
    async nack(job) {
      const response = await settle(job, {
        $case: 'nack',
        value: {
          jobId: job.jobId,
          attempt: job.attempt,
          errorMessage: 'failed',
          errorClass: '',
          errorStack: '',
          directive: { $case: 'backoff', value: true },
        },
      });
      const settled = response.kind?.$case === 'settled' ? response.kind.value.result : undefined;
      if (settled?.$case !== 'nack') throw new Error('no nack result');
      return settled.value;
    },
    async ack(job) {
      await settle(job, { $case: 'ack', value: { jobId: job.jobId, attempt: job.attempt } });
    },
    close() {
      produce.end();
      for (const work of workOf.values()) work.end();
    },
  };
}
