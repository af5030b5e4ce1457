/**
 * Answers that grow with stored data stay within what the caller can take
 * (issue 29, items 2 and 3): a unary Reserve leases no more jobs than fit its
 * answer and says so when one job alone does not; ListQueues is paged; a new
 * queue beyond limits.max_queues is refused by name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { credentials, type ServiceError, status } from '@grpc/grpc-js';
import { JobState, RejectionReason } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import {
  type QueueServiceClient,
  QueueServiceClient as QueueServiceClientCtor,
} from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { ReserveRequest } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const KiB = 1024;
const MiB = 1024 * KiB;

function reserve(queue: string, maxJobs: number, maxResponseBytes = 0): ReserveRequest {
  return {
    queues: [queue],
    maxJobs,
    leaseDurationMs: 60_000,
    waitTimeoutMs: 0,
    workerId: 'w',
    maxResponseBytes,
  };
}

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    return error as ServiceError;
  }
  assert.fail('the call succeeded');
}

async function queueCounts(c: QueueServiceClient, queue: string) {
  const { queues } = await call(c, c.listQueues, { pageSize: 1000, pageToken: '' });
  const found = queues.find((q) => q.name === queue);
  assert.ok(found, `queue ${queue} is listed`);
  return found.counts;
}

describe('a unary Reserve never leases more than its answer holds', () => {
  let t: TestServer;
  let big: QueueServiceClient;

  before(async () => {
    t = await startTestServer({
      toml: `
[grpc]
max_message_bytes = "16MiB"
[queues.large]
max_payload_bytes = "12MiB"
`,
    });
    // A client that reads answers up to 16 MiB (gRPC's default is 4 MiB).
    big = new QueueServiceClientCtor(t.address, credentials.createInsecure(), {
      'grpc.max_receive_message_length': 16 * MiB,
    });
  });
  after(async () => {
    big.close();
    await t.dispose();
  });

  test('100 jobs of 60 KB: each answer fits 4 MiB, nothing is leased beyond it, none burns an attempt', async () => {
    const c = t.client;
    const payload = Buffer.alloc(60 * KiB, 7);
    const jobs = Array.from({ length: 100 }, () => testJob('sixty', { payload }));
    await call(c, c.enqueueBatch, { jobs });
    const seen = new Set<string>();
    let rounds = 0;
    while (seen.size < 100) {
      rounds++;
      assert.ok(rounds <= 5, 'all 100 delivered within 5 rounds');
      const { jobs: leased } = await call(c, c.reserve, reserve('sixty', 100));
      assert.ok(leased.length > 0, 'every round leases some');
      const bytes = leased.reduce((sum, job) => sum + job.payload.length, 0);
      assert.ok(bytes <= 4 * MiB, `an answer of ${bytes} bytes fits gRPC's default 4 MiB`);
      // Leased = what came back: nothing stays leased into an answer that was never sent.
      assert.equal((await queueCounts(c, 'sixty'))?.leased, leased.length);
      for (const job of leased) {
        assert.equal(job.attempt, 1, 'first delivery');
        seen.add(job.jobId);
        await call(c, c.ack, { jobId: job.jobId, attempt: job.attempt, result: undefined });
      }
    }
    assert.equal(rounds, 2, 'about 68 fit the first answer, the rest the second');
    const counts = await queueCounts(c, 'sixty');
    assert.equal(counts?.dead, 0);
    assert.equal(counts?.ready, 0);
  });

  test('max_response_bytes: a smaller budget leases fewer jobs', async () => {
    const c = t.client;
    const payload = Buffer.alloc(10 * KiB, 1);
    await call(c, c.enqueueBatch, { jobs: Array.from({ length: 10 }, () => testJob('small', { payload })) });
    const { jobs } = await call(c, c.reserve, reserve('small', 10, 35 * KiB));
    assert.equal(jobs.length, 3, 'three 10 KiB jobs fit 35 KiB, a fourth does not');
    assert.equal((await queueCounts(c, 'small'))?.leased, 3);
    assert.equal((await queueCounts(c, 'small'))?.ready, 7);
  });

  test('one job larger than the answer: RESOURCE_EXHAUSTED naming it, the job stays ready, no attempt counted', async () => {
    const c = t.client;
    const payload = Buffer.alloc(6 * MiB, 3);
    const { jobId } = await call(big, big.enqueue, { job: testJob('large', { payload }) });
    for (let i = 0; i < 3; i++) {
      const error = await failure(call(c, c.reserve, reserve('large', 5)));
      assert.equal(error.code, status.RESOURCE_EXHAUSTED, error.details);
      assert.match(error.details, new RegExp(`job ${jobId} takes about \\d+ bytes`));
      assert.match(error.details, /max_response_bytes/);
      assert.match(error.details, /no attempt counted/);
    }
    const stored = (await call(big, big.getJob, { jobId })).job;
    assert.equal(stored?.state, JobState.READY);
    assert.equal(stored?.attempt, 0, 'three refused reserves burned no attempt');
    // A caller that can take it gets it, on its first attempt.
    const { jobs } = await call(big, big.reserve, reserve('large', 5, 16 * MiB));
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]?.jobId, jobId);
    assert.equal(jobs[0]?.attempt, 1);
  });

  test('a budget above the server limit is clamped to it; a negative one is refused', async () => {
    const c = t.client;
    const error = await failure(call(c, c.reserve, reserve('small', 1, -1)));
    assert.equal(error.code, status.INVALID_ARGUMENT);
    assert.match(error.details, /max_response_bytes/);
    const { jobs } = await call(c, c.reserve, reserve('small', 1, Number.MAX_SAFE_INTEGER));
    assert.equal(jobs.length, 1);
  });
});

describe('queues: limits.max_queues and paged listings', () => {
  let t: TestServer;
  let c: QueueServiceClient;

  before(async () => {
    t = await startTestServer({
      toml: `
[limits]
max_queues = 4
[queues.declared]
`,
    });
    c = t.client;
  });
  after(() => t.dispose());

  test('a job for a new queue beyond max_queues is refused, naming the limit; existing queues still take jobs', async () => {
    await call(c, c.enqueue, { job: testJob('q1') });
    await call(c, c.enqueue, { job: testJob('q2') });
    // declared + q1 + q2 = 3; one batch with two new queues: the first fits, the second does not.
    const { results } = await call(c, c.enqueueBatch, {
      jobs: [testJob('q3'), testJob('q4'), testJob('q1'), testJob('q3')],
    });
    assert.ok(results[0]?.outcome?.$case === 'accepted', 'q3 is the 4th queue');
    const refused = results[1]?.outcome;
    assert.ok(refused?.$case === 'rejection');
    assert.equal(refused.value.reason, RejectionReason.UNKNOWN_QUEUE);
    assert.match(refused.value.message, /limits\.max_queues = 4/);
    assert.ok(results[2]?.outcome?.$case === 'accepted', 'an existing queue takes jobs');
    assert.ok(
      results[3]?.outcome?.$case === 'accepted',
      'the queue this batch made, the limit reached, takes more',
    );
    const error = await failure(call(c, c.enqueue, { job: testJob('q5') }));
    assert.equal(error.code, status.NOT_FOUND);
    assert.match(error.details, /already has 4 queues, its limit \(limits\.max_queues = 4\)/);
    const atomic = await call(c, c.enqueueAtomic, { jobs: [testJob('q1'), testJob('q6')] });
    assert.equal(atomic.committed, false);
    assert.deepEqual(
      atomic.rejections.map((r) => [r.index, r.reason]),
      [[1, RejectionReason.UNKNOWN_QUEUE]],
    );
    const { queues } = await call(c, c.listQueues, { pageSize: 0, pageToken: '' });
    assert.deepEqual(
      queues.map((q) => q.name),
      ['declared', 'q1', 'q2', 'q3'],
    );
  });

  test('ListQueues pages in name order; a bad token or size is INVALID_ARGUMENT', async () => {
    const names: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const page = await call(c, c.listQueues, { pageSize: 3, pageToken });
      assert.ok(page.queues.length <= 3);
      names.push(...page.queues.map((q) => q.name));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== '');
    assert.equal(pages, 2);
    assert.deepEqual(names, ['declared', 'q1', 'q2', 'q3']);
    const badToken = await failure(call(c, c.listQueues, { pageSize: 0, pageToken: 'nonsense' }));
    assert.equal(badToken.code, status.INVALID_ARGUMENT);
    assert.match(badToken.details, /page_token/);
    const tooLarge = await failure(call(c, c.listQueues, { pageSize: 1001, pageToken: '' }));
    assert.equal(tooLarge.code, status.INVALID_ARGUMENT);
    assert.match(tooLarge.details, /limits\.max_page_size/);
  });
});
