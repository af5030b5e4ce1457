/**
 * A Worker's settlements after the server's bounds went down (work-stream-transport.ts,
 * "Re-cut"): a reload lowers `limits.max_batch_jobs` while a worker runs, the server ends its
 * Work stream at the next batch of settlements over the new bound (`retry: 'never'`), and the
 * worker asks the bounds again, opens a new stream and sends the refused settlements once more,
 * cut by them: every job is acked once, none fails, and the worker goes on. An ack the server
 * took before the refusal and answers "not leased" when sent again is taken as its own, and so is
 * a nack so answered whose job proves it (repeated-settlement.ts); a
 * settlement refused a second time is not sent on a stream again (it is settled by a unary
 * call), and a refusal the bounds do not explain still stops the worker (on a stand-in). The Python SDK's tests of the same
 * are in clients/python/tests/test_worker_stops.py.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { GetJobResponse, GetServerInfoResponse } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { type Job, JobState, LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueServiceService } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import {
  type AckRequest,
  AckResponse,
  type WorkRequest,
  type WorkRequest_Settlement,
  WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { type JobHandler, SeppClient, SeppError, type Worker } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { listenOnLoopback } from '../helpers/stand-in-server.ts';
import { deferred, until } from './helpers.ts';

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/** A worker's `error` events, its failed jobs (`id: message`) and the ids of its completed ones. */
function watch(worker: Worker): { errors: SeppError[]; failed: string[]; completed: string[] } {
  const seen = { errors: [] as SeppError[], failed: [] as string[], completed: [] as string[] };
  worker.on('error', (error: SeppError) => seen.errors.push(error));
  worker.on('failed', (job, error: Error) => seen.failed.push(`${job.id}: ${error.message}`));
  worker.on('completed', (job) => seen.completed.push(job.id));
  return seen;
}

/** A client of the stand-in at `address` and its worker of three on `q`, reconnecting at once. */
function threeOn(address: string, fallback: JobHandler): { own: SeppClient; worker: Worker } {
  const own = SeppClient.connect(address);
  const worker = own.worker({
    queues: ['q'],
    concurrency: 3,
    logger: quiet,
    reconnect: { baseDelayMs: 1, maxDelayMs: 20 },
    fallback,
  });
  return { own, worker };
}

let t: TestServer;
let client: SeppClient;
before(async () => {
  t = await startTestServer();
  client = SeppClient.connect(t.address);
});
after(async () => {
  await client.close();
  await t.dispose();
});

test('settlements refused after a reload lowered max_batch_jobs are cut again and sent once', async () => {
  const queue = 'recut';
  const rounds = 3;
  const concurrency = 4;
  // The client reads the server's max_batch_jobs (1000) before its first batch leaves; the reload
  // lowers it after that, so the worker's first round of four acks is one batch over the bound.
  const ids: string[] = [];
  for (let i = 0; i < rounds * concurrency; i++) ids.push((await client.enqueue(queue, 't')).id);
  t.writeConfig('[limits]\nmax_batch_jobs = 2\n');
  assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, true);
  // Each round of four jobs ends together, so its four acks leave in one batch.
  const gates = Array.from({ length: rounds }, () => deferred());
  let started = 0;
  const worker = client.worker({
    queues: [queue],
    concurrency,
    logger: quiet,
    reconnect: { baseDelayMs: 1, maxDelayMs: 20 },
    fallback: async () => {
      const gate = gates[Math.floor(started++ / concurrency)];
      if (started % concurrency === 0) gate?.resolve();
      await gate?.promise;
    },
  });
  const { errors, failed, completed } = watch(worker);
  try {
    await until(() => completed.length === ids.length, 'every job completed');
    const jobs = await Promise.all(ids.map((id) => client.getJob(id)));
    assert.deepEqual(
      jobs.map((job) => `${job.state} ${job.attempt}`),
      ids.map(() => 'completed 1'),
      'each acked on its first attempt',
    );
    assert.deepEqual(failed, []);
    assert.deepEqual(completed.toSorted(), ids.toSorted(), 'each acked once');
    assert.equal(worker.state, 'running', 'the worker went on');
    // The refusal is said once; the batches after it are cut by the new bound.
    assert.equal(errors.length, 1, errors.map((e) => e.message).join('; '));
    assert.deepEqual([errors[0]?.grpcCode, errors[0]?.retry], [status.RESOURCE_EXHAUSTED, 'never']);
    assert.match(errors[0]?.message ?? '', /the limit is 2 \(limits\.max_batch_jobs\)/);
  } finally {
    await worker.close({ timeoutMs: 0 });
    t.writeConfig('');
    await t.server.reload({ actor: 'signal:SIGHUP' });
  }
});

/** What the stand-in does with a settlement on stream `stream` (1 first): answer it with a status, or never. */
type Answer = (stream: number, settlement: WorkRequest_Settlement) => status | 'never';

/**
 * A stand-in for sepp whose first Work stream pushes `jobs` at the first credit, and which refuses
 * every batch of more settlements than `limit` with RESOURCE_EXHAUSTED marked `never`, as sepp
 * does over `limits.max_batch_jobs`, and answers the others as `answer` says (by default never).
 * GetServerInfo answers `infoLimits` in turn (the last one again and again); a unary Ack is
 * answered OK and counted, a unary Nack counted and refused; GetJob answers `read` (else NOT_FOUND).
 */
async function standIn(
  limit: number,
  infoLimits: number[],
  jobs: string[],
  answer: Answer = () => 'never',
  read: Partial<Job> | undefined = undefined,
): Promise<{
  address: string;
  streams: number;
  acks: AckRequest[];
  nacks: string[];
  settled: string[];
  close(): void;
}> {
  const server = new grpc.Server();
  const state = {
    address: '',
    streams: 0,
    acks: [] as AckRequest[],
    nacks: [] as string[],
    /** Each settlement answered on a stream: `stream job status`. */
    settled: [] as string[],
    close: () => server.forceShutdown(),
  };
  let infos = 0;
  server.addService(QueueServiceService, {
    work: (call: grpc.ServerDuplexStream<WorkRequest, WorkResponse>) => {
      const stream = ++state.streams;
      let pushed = false;
      call.on('end', () => call.end());
      call.on('data', (message: WorkRequest) => {
        const kind = message.kind;
        const credit =
          kind?.$case === 'credit' ? kind.value.jobs : kind?.$case === 'batch' ? kind.value.credit : 0;
        if (kind?.$case === 'batch' && kind.value.settlements.length > limit) {
          const metadata = new grpc.Metadata();
          metadata.set('sepp-retry', 'never');
          call.emit('error', {
            code: status.RESOURCE_EXHAUSTED,
            details: `batch.settlements: the limit is ${limit} (limits.max_batch_jobs)`,
            metadata,
          });
          return;
        }
        for (const settlement of kind?.$case === 'batch' ? kind.value.settlements : []) {
          const code = answer(stream, settlement);
          if (code === 'never') continue;
          const kind = settlement.kind;
          const jobId = kind?.$case === 'ack' || kind?.$case === 'nack' ? kind.value.jobId : '?';
          state.settled.push(`${stream} ${jobId} ${status[code]}`);
          const errorCode = code === status.NOT_FOUND ? 'not_found' : '';
          const settled = { requestId: settlement.requestId, code, message: 'stand-in', errorCode };
          call.write(WorkResponse.fromPartial({ kind: { $case: 'settled', value: settled } }));
        }
        if (credit > 0 && !pushed && stream === 1) {
          pushed = true;
          for (const jobId of jobs) {
            const job = LeasedJob.fromPartial({
              jobId,
              queue: 'q',
              type: 't',
              attempt: 1,
              maxAttempts: 3,
              leaseDeadlineMs: Date.now() + 60_000,
            });
            call.write(WorkResponse.fromPartial({ kind: { $case: 'job', value: job } }));
          }
        }
      });
    },
    ack: (call: grpc.ServerUnaryCall<AckRequest, AckResponse>, callback: grpc.sendUnaryData<AckResponse>) => {
      state.acks.push(call.request);
      callback(null, AckResponse.fromPartial({}));
    },
    nack: (call: grpc.ServerUnaryCall<{ jobId: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      state.nacks.push(call.request.jobId);
      callback({ code: status.NOT_FOUND, details: 'stand-in' });
    },
    getJob: (_call: unknown, callback: grpc.sendUnaryData<GetJobResponse>) => {
      if (read === undefined) callback({ code: status.NOT_FOUND, details: 'stand-in' });
      else callback(null, GetJobResponse.fromPartial({ job: read }));
    },
    getServerInfo: (_call: unknown, callback: grpc.sendUnaryData<GetServerInfoResponse>) => {
      const maxBatchJobs = infoLimits[Math.min(infos++, infoLimits.length - 1)] ?? 1000;
      callback(
        null,
        GetServerInfoResponse.fromPartial({ limits: { maxBatchJobs, maxMessageBytes: 4 << 20 } }),
      );
    },
  });
  state.address = await listenOnLoopback(server);
  return state;
}

test('an ack written before the refusal and answered not_found when sent again is its own', async () => {
  // job-1's ack leaves alone and is taken but not answered (as a server applies a batch whose
  // answer the refusal after it cuts off); job-2's and job-3's leave together and are refused.
  // On the next stream, cut by 1, job-1's is answered "not leased" (its first send went through).
  const firstHeld = deferred();
  const stand = await standIn(1, [1000, 1], ['job-1', 'job-2', 'job-3'], (stream, settlement) => {
    const jobId = settlement.kind?.$case === 'ack' ? settlement.kind.value.jobId : '';
    if (stream === 1) {
      if (jobId === 'job-1') firstHeld.resolve();
      return 'never';
    }
    return jobId === 'job-1' ? status.NOT_FOUND : status.OK;
  });
  const { own, worker } = threeOn(stand.address, async (job) => {
    if (job.id !== 'job-1') await firstHeld.promise;
  });
  const { errors, failed, completed } = watch(worker);
  try {
    await until(() => completed.length === 3, 'every job completed');
    assert.deepEqual(completed.toSorted(), ['job-1', 'job-2', 'job-3']);
    assert.deepEqual(failed, []);
    assert.deepEqual(stand.settled.toSorted(), ['2 job-1 NOT_FOUND', '2 job-2 OK', '2 job-3 OK']);
    assert.deepEqual(stand.acks, [], 'no unary ack');
    assert.equal(stand.streams, 2);
    assert.equal(errors.length, 1, 'the refusal, said once');
    assert.equal(worker.state, 'running');
  } finally {
    await worker.close({ timeoutMs: 0 });
    await own.close();
    stand.close();
  }
});

test('a nack written before the refusal, answered not_found when sent again, is applied where the job proves it', async () => {
  // As the test above, with job-1 failing: its nack is taken before the refusal and not answered;
  // sent again, it is answered "not leased", and the job read shows this attempt's entry with the
  // nack's own message and class: the nack is reported applied, with the job's state.
  const firstHeld = deferred();
  const runAtMs = Date.now() + 60_000;
  const read = {
    jobId: 'job-1',
    state: JobState.SCHEDULED,
    attempt: 1,
    runAtMs,
    errors: [{ attempt: 1, atMs: Date.now(), error: 'boom', errorClass: 'Error', errorStack: '' }],
  };
  const stand = await standIn(
    1,
    [1000, 1],
    ['job-1', 'job-2', 'job-3'],
    (stream, settlement) => {
      const kind = settlement.kind;
      const jobId = kind?.$case === 'ack' || kind?.$case === 'nack' ? kind.value.jobId : '';
      if (stream === 1) {
        if (jobId === 'job-1') firstHeld.resolve();
        return 'never';
      }
      return jobId === 'job-1' ? status.NOT_FOUND : status.OK;
    },
    read,
  );
  const { own, worker } = threeOn(stand.address, async (job) => {
    if (job.id === 'job-1') throw new Error('boom');
    await firstHeld.promise;
  });
  const { errors, completed } = watch(worker);
  const failed: string[] = [];
  worker.on('failed', (job, _error, result) =>
    failed.push(`${job.id} ${result.state} ${result.runAt?.getTime()}`),
  );
  try {
    await until(() => completed.length === 2 && failed.length === 1, 'every job settled');
    assert.deepEqual(failed, [`job-1 scheduled ${runAtMs}`]);
    assert.deepEqual(stand.settled.toSorted(), ['2 job-1 NOT_FOUND', '2 job-2 OK', '2 job-3 OK']);
    assert.deepEqual(stand.nacks, [], 'no unary nack');
    assert.equal(errors.length, 1, 'the refusal, said once');
  } finally {
    await worker.close({ timeoutMs: 0 });
    await own.close();
    stand.close();
  }
});

test('a settlement refused again after its re-cut is acked by a unary call; unexplained, the worker stops', async () => {
  // The stand-in takes one settlement per batch but says 1000, then 2 (lowered: a re-cut), then 2
  // (not lowered): the two acks go once in one batch, once more in one batch of two, then unary.
  const stand = await standIn(1, [1000, 2], ['job-1', 'job-2']);
  const own = SeppClient.connect(stand.address);
  const gate = deferred();
  let started = 0;
  const worker = own.worker({
    queues: ['q'],
    concurrency: 2,
    logger: quiet,
    reconnect: { baseDelayMs: 1, maxDelayMs: 20 },
    fallback: async () => {
      if (++started === 2) gate.resolve();
      await gate.promise;
    },
  });
  const { errors } = watch(worker);
  try {
    const stopped = await worker.wait().then(
      () => assert.fail('the worker closed without an error'),
      (error: unknown) => error,
    );
    assert.ok(stopped instanceof SeppError);
    assert.deepEqual([stopped.grpcCode, stopped.retry], [status.RESOURCE_EXHAUSTED, 'never']);
    assert.equal(stand.streams, 2, 'one stream refused, one more for the re-cut, then none');
    assert.deepEqual(
      stand.acks.map((a) => `${a.jobId} ${a.attempt}`).toSorted(),
      ['job-1 1', 'job-2 1'],
      'refused twice, each ack went by a unary call, once',
    );
    assert.equal(errors.length, 2, 'the re-cut said, then the stop');
  } finally {
    await worker.close({ timeoutMs: 0 });
    await own.close();
    stand.close();
  }
});
