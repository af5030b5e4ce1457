/**
 * A batch re-cut after a lowered limit (docs/protocol.md, "Whether to repeat a call") is sent in
 * parts, each answered on its own. A part the server answers wrongly — fewer results than jobs,
 * or an atomic outcome for best-effort jobs — fails the batch with INTERNAL, as a batch sent
 * whole does, never with a job left without an outcome. A stand-in server implements what the
 * SDK calls: GetServerInfo (the bound it says), EnqueueBatch and Produce (refusing a batch over
 * its bound as a lowered limits.max_batch_jobs does, and answering parts as each test says).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { GetServerInfoResponse } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import type { EnqueueJob, EnqueueResult } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type {
  EnqueueAtomicResponse,
  EnqueueBatchRequest,
  EnqueueBatchResponse,
  ProduceRequest,
  ProduceResponse,
} from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';

/** How the stand-in answers a batch within its bound: every job, one result short, or an atomic outcome. */
type Answer = 'all' | 'short' | 'atomic';

const limitJobs = 2;
/** The bound GetServerInfo says: the stand-in's own until it refuses a batch (a reload lowered it). */
let saidJobs = 1000;
/** How the n-th batch within the bound (from 0) is answered. */
let answerOf: (n: number) => Answer = () => 'all';
let answered = 0;
/** The job types of every batch the stand-in received, refused ones too. */
const received: string[][] = [];

const overBound = (jobs: number) =>
  `the batch has ${jobs} jobs, the limit is ${limitJobs} (limits.max_batch_jobs)`;

function resultsFor(jobs: readonly EnqueueJob[], answer: Answer): EnqueueResult[] {
  const results = jobs.map(
    (job): EnqueueResult => ({
      outcome: {
        $case: 'accepted',
        value: { jobId: `id-${job.type}`, deduplicated: false, debounced: false },
      },
    }),
  );
  return answer === 'short' ? results.slice(1) : results;
}

function atomicFor(jobs: readonly EnqueueJob[]): EnqueueAtomicResponse {
  return {
    committed: true,
    results: jobs.map((job) => ({ jobId: `id-${job.type}`, deduplicated: false, debounced: false })),
    rejections: [],
  };
}

/** The stand-in's answer to a batch: refused over its bound, or per `answerOf`. */
function answerBatch(jobs: readonly EnqueueJob[]): { refused: string } | { answer: Answer } {
  received.push(jobs.map((job) => job.type));
  if (jobs.length > limitJobs) {
    saidJobs = limitJobs;
    return { refused: overBound(jobs.length) };
  }
  return { answer: answerOf(answered++) };
}

let server: grpc.Server;
let address: string;

before(async () => {
  server = new grpc.Server();
  server.addService(QueueServiceService, {
    getServerInfo: (
      _call: grpc.ServerUnaryCall<unknown, GetServerInfoResponse>,
      callback: grpc.sendUnaryData<GetServerInfoResponse>,
    ) => callback(null, GetServerInfoResponse.fromPartial({ limits: { maxBatchJobs: saidJobs } })),
    enqueueBatch: (
      call: grpc.ServerUnaryCall<EnqueueBatchRequest, EnqueueBatchResponse>,
      callback: grpc.sendUnaryData<EnqueueBatchResponse>,
    ) => {
      const outcome = answerBatch(call.request.jobs);
      if ('refused' in outcome) {
        const metadata = new grpc.Metadata();
        metadata.set('sepp-retry', 'never');
        callback({ code: status.RESOURCE_EXHAUSTED, details: outcome.refused, metadata });
        return;
      }
      // A unary EnqueueBatch answer has no atomic outcome: its wrong answer is a short one.
      callback(null, { results: resultsFor(call.request.jobs, outcome.answer) });
    },
    produce: (call: grpc.ServerDuplexStream<ProduceRequest, ProduceResponse>) => {
      call.on('data', (message: ProduceRequest) => {
        const outcome = answerBatch(message.jobs);
        const base = { sequence: message.sequence, code: status.OK, message: '', results: [], retry: '' };
        if ('refused' in outcome)
          call.write({ ...base, code: status.RESOURCE_EXHAUSTED, message: outcome.refused, retry: 'never' });
        else if (outcome.answer === 'atomic') call.write({ ...base, atomic: atomicFor(message.jobs) });
        else call.write({ ...base, results: resultsFor(message.jobs, outcome.answer) });
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  address = await listenOnLoopback(server);
});

after(() => server.forceShutdown());

/** Four jobs enqueued best effort by a new client: the outcomes' words (`ok`, a message) or the error. */
async function enqueueFour(transport: 'stream' | 'unary', answers: (n: number) => Answer): Promise<string> {
  saidJobs = 1000;
  answered = 0;
  answerOf = answers;
  received.length = 0;
  const client = SeppClient.connect(address, { transport });
  try {
    const jobs = ['a', 'b', 'c', 'd'].map((type) => ({ queue: 'q', type }));
    const outcomes = await client.enqueueBatch(jobs);
    return outcomes.map((o) => (o.ok ? 'ok' : `${o.reason}: ${o.message}`)).join(', ');
  } catch (error) {
    assert.ok(error instanceof SeppError, `a SeppError, not ${String(error)}`);
    return `${status[error.grpcCode]}: ${error.message}`;
  } finally {
    await client.close();
  }
}

test('re-cut parts answered in full give every outcome', async () => {
  for (const transport of ['stream', 'unary'] as const) {
    assert.equal(await enqueueFour(transport, () => 'all'), 'ok, ok, ok, ok', transport);
    assert.deepEqual(
      received,
      [
        ['a', 'b', 'c', 'd'],
        ['a', 'b'],
        ['c', 'd'],
      ],
      transport,
    );
  }
});

test('a re-cut part answered short, or with an atomic outcome, fails the batch with INTERNAL', async () => {
  const secondPart = (wrong: Answer) => (n: number) => (n === 1 ? wrong : 'all');
  assert.equal(
    await enqueueFour('unary', secondPart('short')),
    'INTERNAL: the server answered 1 results for 2 jobs',
  );
  assert.equal(
    await enqueueFour('stream', secondPart('short')),
    'INTERNAL: the server answered 1 results for 2 jobs',
  );
  assert.equal(
    await enqueueFour('stream', secondPart('atomic')),
    'INTERNAL: the server answered an atomic outcome for 2 jobs',
  );
  assert.deepEqual(
    received,
    [
      ['a', 'b', 'c', 'd'],
      ['a', 'b'],
      ['c', 'd'],
    ],
    'sent once more, not again',
  );
});

test('a batch sent whole and answered with an atomic outcome fails the same way', async () => {
  saidJobs = 1000;
  answered = 0;
  answerOf = () => 'atomic';
  const client = SeppClient.connect(address);
  try {
    const error = await client.enqueueBatch([{ queue: 'q', type: 'a' }]).then(
      () => assert.fail('a best-effort batch answered with an atomic outcome resolved'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof SeppError);
    assert.equal(
      `${status[error.grpcCode]}: ${error.message}`,
      'INTERNAL: the server answered an atomic outcome for 1 jobs',
    );
  } finally {
    await client.close();
  }
});
