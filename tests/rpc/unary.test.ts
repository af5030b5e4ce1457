/** Every unary RPC over a real socket against the real server: results and status codes. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import {
  DeadReason,
  type EnqueueJob,
  JobState,
  RejectionReason,
} from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { SettleOutcome } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { collect, openWork, subscribeMessage } from '../helpers/streams.ts';

const payload = Buffer.from('{"to":"a@example.com"}');
const job = (queue: string, extra: Partial<EnqueueJob> = {}) =>
  testJob(queue, { type: 'send', payload, contentType: 'application/json', ...extra });

async function rejects(promise: Promise<unknown>, code: status, pattern?: RegExp): Promise<ServiceError> {
  try {
    await promise;
  } catch (error) {
    const e = error as ServiceError;
    assert.equal(e.code, code, `expected status ${status[code]}, got ${status[e.code]}: ${e.details}`);
    if (pattern) assert.match(e.details, pattern);
    return e;
  }
  assert.fail(`expected status ${status[code]}, the call succeeded`);
}

describe('unary RPCs', () => {
  let t: TestServer;
  let c: QueueServiceClient;
  const clock = new FakeClock(Date.UTC(2026, 5, 1));

  before(async () => {
    t = await startTestServer({
      clock,
      toml: `
[queues.limited]
max_depth = 2
[queues.typed]
allowed_types = ["send"]
[queues.small]
max_payload_bytes = 8
[queues.retry]
max_attempts = 2
`,
    });
    c = t.client;
  });
  after(() => t.dispose());

  test('Enqueue → Reserve → Ack, and GetJob through the states', async () => {
    const { jobId, deduplicated } = await call(c, c.enqueue, { job: job('emails') });
    assert.equal(deduplicated, false);
    assert.equal((await call(c, c.getJob, { jobId })).job?.state, JobState.READY);
    const { jobs } = await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['emails'],
      maxJobs: 1,
      leaseDurationMs: 30_000,
      waitTimeoutMs: 0,
      workerId: 'w1',
    });
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]?.jobId, jobId);
    assert.equal(jobs[0]?.attempt, 1);
    assert.deepEqual(jobs[0]?.payload, payload);
    const leased = (await call(c, c.getJob, { jobId })).job;
    assert.equal(leased?.state, JobState.LEASED);
    assert.equal(leased?.workerId, 'w1');
    await call(c, c.ack, { jobId, attempt: 1 });
    // Deleted on its ack (no retention): GetJob answers with its outcome only.
    const done = (await call(c, c.getJob, { jobId })).job;
    assert.deepEqual([done?.state, done?.outcomeOnly, done?.payload.length], [JobState.COMPLETED, true, 0]);
  });

  test('idempotency key returns the original id with deduplicated', async () => {
    const first = await call(c, c.enqueue, { job: job('dedup', { idempotencyKey: 'order-1' }) });
    const second = await call(c, c.enqueue, { job: job('dedup', { idempotencyKey: 'order-1' }) });
    assert.equal(second.jobId, first.jobId);
    assert.equal(second.deduplicated, true);
  });

  test('EnqueueBatch gives one typed result per job, in order', async () => {
    const { results } = await call(c, c.enqueueBatch, {
      jobs: [
        job('batch'),
        job('bad queue!'),
        job('small', { payload: Buffer.alloc(9) }),
        job('typed', { type: 'other' }),
        job('batch', { metadata: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) }),
        job('batch', { schedule: { $case: 'delayMs', value: 400 * 86_400_000 } }),
        job('batch', { priority: 12 }),
      ],
    });
    assert.equal(results.length, 7);
    assert.equal(results[0]?.outcome?.$case, 'accepted');
    const reasons = results
      .slice(1)
      .map((r) => (r.outcome?.$case === 'rejection' ? r.outcome.value.reason : -1));
    assert.deepEqual(reasons, [
      RejectionReason.INVALID_NAME,
      RejectionReason.PAYLOAD_TOO_LARGE,
      RejectionReason.JOB_TYPE_NOT_ALLOWED,
      RejectionReason.METADATA_TOO_LARGE,
      RejectionReason.SCHEDULED_TOO_FAR,
      RejectionReason.INVALID_JOB,
    ]);
    const small = results[2]?.outcome;
    assert.ok(small?.$case === 'rejection');
    assert.match(small.value.message, /9 bytes.*limit for queue small is 8 bytes \(max_payload_bytes\)/);
  });

  test('queue full: batch rejection and RESOURCE_EXHAUSTED for a single enqueue', async () => {
    await call(c, c.enqueue, { job: job('limited') });
    await call(c, c.enqueue, { job: job('limited') });
    const e = await rejects(
      call(c, c.enqueue, { job: job('limited') }),
      status.RESOURCE_EXHAUSTED,
      /max_depth is 2/,
    );
    assert.deepEqual(e.metadata.get('sepp-rejection-reason'), ['queue_full']);
  });

  test('a rejected single enqueue names the field and stores nothing', async () => {
    const before =
      (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find((q) => q.name === 'small')
        ?.counts?.ready ?? 0;
    const e = await rejects(
      call(c, c.enqueue, { job: job('small', { payload: Buffer.alloc(100) }) }),
      status.INVALID_ARGUMENT,
    );
    assert.deepEqual(e.metadata.get('sepp-rejection-reason'), ['payload_too_large']);
    const afterCount =
      (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find((q) => q.name === 'small')
        ?.counts?.ready ?? 0;
    assert.equal(afterCount, before);
    await rejects(call(c, c.enqueue, {}), status.INVALID_ARGUMENT, /job: required/);
  });

  test('EnqueueAtomic is all or nothing with every failing index', async () => {
    const failed = await call(c, c.enqueueAtomic, {
      jobs: [job('atomic'), job('atomic', { priority: 10 }), job('x y')],
    });
    assert.equal(failed.committed, false);
    assert.deepEqual(
      failed.rejections.map((r) => [r.index, r.reason]),
      [
        [1, RejectionReason.INVALID_JOB],
        [2, RejectionReason.INVALID_NAME],
      ],
    );
    assert.equal(
      (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find((q) => q.name === 'atomic'),
      undefined,
    );
    const ok = await call(c, c.enqueueAtomic, { jobs: [job('atomic'), job('atomic')] });
    assert.equal(ok.committed, true);
    assert.equal(ok.results.length, 2);
  });

  test('batch too large is RESOURCE_EXHAUSTED; an empty batch INVALID_ARGUMENT', async () => {
    await rejects(
      call(c, c.enqueueBatch, { jobs: Array.from({ length: 1001 }, () => job('big')) }),
      status.RESOURCE_EXHAUSTED,
      /max_batch_jobs/,
    );
    await rejects(call(c, c.enqueueBatch, { jobs: [] }), status.INVALID_ARGUMENT, /empty/);
  });

  test("Extend with lease_duration_ms 0 (unset) sets the queue's default lease, on both transports", async () => {
    // The built-in default lease is 30 s; max_lease_ms (12 h) still clamps a long one.
    const { jobId } = await call(c, c.enqueue, { job: job('extend-default') });
    const [leased] = (
      await call(c, c.reserve, {
        maxResponseBytes: 0,
        queues: ['extend-default'],
        maxJobs: 1,
        leaseDurationMs: 1000,
        waitTimeoutMs: 0,
        workerId: '',
      })
    ).jobs;
    assert.ok(leased);
    const unary = await call(c, c.extend, { jobId, attempt: 1, leaseDurationMs: 0 });
    assert.equal(unary.leaseDeadlineMs, clock.nowMs() + 30_000);
    await rejects(
      call(c, c.extend, { jobId, attempt: 1, leaseDurationMs: -1 }),
      status.INVALID_ARGUMENT,
      /lease_duration_ms is -1; give a positive integer of ms, or 0 for the queue's default_lease_ms/,
    );
    const long = await call(c, c.extend, { jobId, attempt: 1, leaseDurationMs: 365 * 24 * 3600_000 });
    assert.equal(long.leaseDeadlineMs, clock.nowMs() + 12 * 3600_000, 'clamped to max_lease_ms');

    const w = openWork(t.connect());
    w.write(subscribeMessage(['extend-default-none']));
    const got = collect(w, (seen) => seen.length === 1);
    w.write({ requestId: 4, kind: { $case: 'extend', value: { jobId, attempt: 1, leaseDurationMs: 0 } } });
    const [answer] = await got;
    assert.ok(answer?.kind?.$case === 'settled' && answer.kind.value.result?.$case === 'extend');
    assert.equal(answer.kind.value.code, status.OK);
    assert.equal(answer.kind.value.result.value.leaseDeadlineMs, clock.nowMs() + 30_000);
    w.cancel();
  });

  test('dead-letter RPCs on a queue that was never used: NOT_FOUND; on one that exists: empty', async () => {
    const list = (queue: string) =>
      call(c, c.listDeadLetters, { queue, reason: DeadReason.UNSPECIFIED, pageSize: 0, pageToken: '' });
    const never = 'never-used-queue';
    await rejects(list(never), status.NOT_FOUND, /"never-used-queue" does not exist.*check the name/);
    await rejects(
      call(c, c.requeueDeadLetters, {
        requestKey: '',
        queue: never,
        jobIds: [],
        all: true,
        reason: 0,
        errorText: '',
        background: false,
      }),
      status.NOT_FOUND,
    );
    await rejects(
      call(c, c.deleteDeadLetters, {
        requestKey: '',
        queue: never,
        jobIds: ['0190a4c2-0000-7000-8000-000000000000'],
        all: false,
        reason: 0,
        errorText: '',
        background: false,
      }),
      status.NOT_FOUND,
    );
    // Declared in the config (limited), or used once (dlq-used): an empty answer.
    await call(c, c.enqueue, { job: job('dlq-used') });
    for (const queue of ['limited', 'dlq-used']) {
      assert.deepEqual((await list(queue)).jobs, []);
      assert.equal(
        (
          await call(c, c.requeueDeadLetters, {
            requestKey: '',
            queue,
            jobIds: [],
            all: true,
            reason: 0,
            errorText: '',
            background: false,
          })
        ).requeuedCount,
        0,
      );
      assert.equal(
        (
          await call(c, c.deleteDeadLetters, {
            requestKey: '',
            queue,
            jobIds: [],
            all: true,
            reason: 0,
            errorText: '',
            background: false,
          })
        ).deletedCount,
        0,
      );
    }
  });

  test('fencing: stale attempt FAILED_PRECONDITION, unknown job NOT_FOUND, bad fields INVALID_ARGUMENT', async () => {
    const { jobId } = await call(c, c.enqueue, { job: job('fence') });
    const [leased] = (
      await call(c, c.reserve, {
        maxResponseBytes: 0,
        queues: ['fence'],
        maxJobs: 1,
        leaseDurationMs: 1000,
        waitTimeoutMs: 0,
        workerId: '',
      })
    ).jobs;
    assert.ok(leased);
    const e = await rejects(
      call(c, c.ack, { jobId, attempt: 2 }),
      status.FAILED_PRECONDITION,
      /no longer holds the lease/,
    );
    assert.deepEqual(e.metadata.get('sepp-error-code'), ['lease_lost']);
    await rejects(
      call(c, c.extend, { jobId, attempt: 5, leaseDurationMs: 1000 }),
      status.FAILED_PRECONDITION,
    );
    await rejects(
      call(c, c.ack, { jobId: '0190a4c2-0000-7000-8000-000000000000', attempt: 1 }),
      status.NOT_FOUND,
    );
    await rejects(call(c, c.ack, { jobId: 'nope', attempt: 1 }), status.INVALID_ARGUMENT, /job_id/);
    await rejects(call(c, c.ack, { jobId, attempt: 0 }), status.INVALID_ARGUMENT, /attempt/);
    const extended = await call(c, c.extend, { jobId, attempt: 1, leaseDurationMs: 5000 });
    assert.equal(extended.leaseDeadlineMs, clock.nowMs() + 5000);
    const { results } = await call(c, c.ackBatch, {
      acks: [
        { jobId, attempt: 1 },
        { jobId, attempt: 1 },
      ],
    });
    assert.deepEqual(
      results.map((r) => r.outcome),
      [SettleOutcome.OK, SettleOutcome.NOT_FOUND],
    );
  });

  test('Nack: backoff, explicit delay, dead-letter; dead letters listed, requeued, deleted', async () => {
    const { jobId } = await call(c, c.enqueue, { job: job('retry') });
    const reserve = async () =>
      (
        await call(c, c.reserve, {
          maxResponseBytes: 0,
          queues: ['retry'],
          maxJobs: 1,
          leaseDurationMs: 1000,
          waitTimeoutMs: 0,
          workerId: '',
        })
      ).jobs[0];
    let leased = await reserve();
    assert.equal(leased?.jobId, jobId);
    const nacked = await call(c, c.nack, {
      jobId,
      attempt: 1,
      errorMessage: 'smtp down',
      errorClass: '',
      errorStack: '',
      directive: { $case: 'retryDelayMs', value: 0 },
    });
    assert.equal(nacked.state, JobState.READY);
    leased = await reserve();
    assert.equal(leased?.attempt, 2);
    assert.equal(leased?.lastError, 'smtp down');
    // max_attempts = 2 on this queue: the second failure dead-letters.
    const dead = await call(c, c.nack, {
      jobId,
      attempt: 2,
      errorMessage: 'still down',
      errorClass: '',
      errorStack: '',
      directive: undefined,
    });
    assert.equal(dead.state, JobState.DEAD);
    const info = (await call(c, c.getJob, { jobId })).job;
    assert.equal(info?.deadReason, DeadReason.ATTEMPTS_EXHAUSTED);
    assert.deepEqual(
      info?.errors.map((e) => e.error),
      ['smtp down', 'still down'],
    );
    const page = await call(c, c.listDeadLetters, {
      queue: 'retry',
      pageSize: 10,
      pageToken: '',
      reason: DeadReason.UNSPECIFIED,
    });
    assert.deepEqual(
      page.jobs.map((j) => j.jobId),
      [jobId],
    );
    assert.equal(page.jobs[0]?.payload.length, 0, 'listing pages leave the payload out');
    assert.equal(page.jobs[0]?.payloadBytes, payload.length);
    assert.equal(
      (
        await call(c, c.requeueDeadLetters, {
          requestKey: '',
          queue: 'retry',
          jobIds: [jobId],
          all: false,
          reason: 0,
          errorText: '',
          background: false,
        })
      ).requeuedCount,
      1,
    );
    leased = await reserve();
    assert.equal(leased?.attempt, 3, 'requeue keeps the attempt counter monotonic');
    await call(c, c.nack, {
      jobId,
      attempt: 3,
      errorMessage: 'give up',
      errorClass: '',
      errorStack: '',
      directive: { $case: 'deadLetter', value: true },
    });
    assert.equal((await call(c, c.getJob, { jobId })).job?.deadReason, DeadReason.DEAD_LETTERED);
    assert.equal(
      (
        await call(c, c.deleteDeadLetters, {
          requestKey: '',
          queue: 'retry',
          jobIds: [],
          all: true,
          reason: 0,
          errorText: '',
          background: false,
        })
      ).deletedCount,
      1,
    );
    await rejects(
      call(c, c.deleteDeadLetters, {
        requestKey: '',
        queue: 'retry',
        jobIds: [],
        all: false,
        reason: 0,
        errorText: '',
        background: false,
      }),
      status.INVALID_ARGUMENT,
    );
  });

  test('CancelJob cancels a waiting job at once and a leased one once its worker stops', async () => {
    const { jobId } = await call(c, c.enqueue, {
      job: job('cancel', { schedule: { $case: 'delayMs', value: 60_000 } }),
    });
    assert.deepEqual(await call(c, c.cancelJob, { jobId }), {
      previousState: JobState.SCHEDULED,
      state: JobState.CANCELLED,
    });
    const second = await call(c, c.enqueue, { job: job('cancel') });
    await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['cancel'],
      maxJobs: 1,
      leaseDurationMs: 1000,
      waitTimeoutMs: 0,
      workerId: '',
    });
    assert.deepEqual(await call(c, c.cancelJob, { jobId: second.jobId }), {
      previousState: JobState.LEASED,
      state: JobState.LEASED,
    });
  });

  test('PauseQueue stops handing out jobs; ResumeQueue resumes; ListQueues shows it', async () => {
    await call(c, c.enqueue, { job: job('pausable') });
    await call(c, c.pauseQueue, { queue: 'pausable', allowMissing: false });
    const q = (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find(
      (x) => x.name === 'pausable',
    );
    assert.equal(q?.paused, true);
    assert.equal(q?.counts?.ready, 1);
    const none = await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['pausable'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 0,
      workerId: '',
    });
    assert.equal(none.jobs.length, 0);
    await call(c, c.resumeQueue, { queue: 'pausable', allowMissing: false });
    const some = await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['pausable'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 0,
      workerId: '',
    });
    assert.equal(some.jobs.length, 1);
    await rejects(
      call(c, c.pauseQueue, { queue: '', allowMissing: false }),
      status.INVALID_ARGUMENT,
      /queue: required/,
    );
  });

  test('PauseQueue and ResumeQueue on a queue nobody used: NOT_FOUND and nothing created, unless allow_missing', async () => {
    const names = async () =>
      (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.map((q) => q.name);
    await rejects(
      call(c, c.pauseQueue, { queue: 'emials', allowMissing: false }),
      status.NOT_FOUND,
      /queue emials does not exist: no job was ever enqueued to it/,
    );
    await rejects(call(c, c.resumeQueue, { queue: 'emials', allowMissing: false }), status.NOT_FOUND);
    assert.ok(!(await names()).includes('emials'), 'a typo leaves no phantom queue');
    // Deliberately: pause a queue before its producers start.
    await call(c, c.pauseQueue, { queue: 'prepared', allowMissing: true });
    await call(c, c.enqueue, { job: job('prepared') });
    const prepared = (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find(
      (q) => q.name === 'prepared',
    );
    assert.equal(prepared?.paused, true);
    assert.equal(prepared?.counts?.ready, 1);
  });

  test('DeleteQueue deletes an empty queue, refuses one with jobs, and an enqueue creates it anew', async () => {
    const names = async () =>
      (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.map((q) => q.name);
    await call(c, c.pauseQueue, { queue: 'typo', allowMissing: true });
    assert.ok((await names()).includes('typo'));
    await call(c, c.deleteQueue, { queue: 'typo' });
    assert.ok(!(await names()).includes('typo'));
    await rejects(call(c, c.deleteQueue, { queue: 'typo' }), status.NOT_FOUND, /does not exist/);

    await call(c, c.enqueue, { job: job('busy') });
    await rejects(
      call(c, c.deleteQueue, { queue: 'busy' }),
      status.FAILED_PRECONDITION,
      /queue busy holds 1 job \(ready 1\); only an empty queue can be deleted/,
    );
    // A cancelled job is kept for the queue's retention; a purge removes the waiting one.
    await call(c, c.purgeQueue, { requestKey: '', queue: 'busy', background: false });
    await call(c, c.deleteQueue, { queue: 'busy' });
    assert.ok(!(await names()).includes('busy'));
    // Gone, not broken: the next job creates the queue again, running and counted.
    await call(c, c.enqueue, { job: job('busy') });
    const again = (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find(
      (q) => q.name === 'busy',
    );
    assert.equal(again?.paused, false);
    assert.equal(again?.counts?.ready, 1);
    await rejects(call(c, c.deleteQueue, { queue: 'bad name' }), status.INVALID_ARGUMENT);
  });

  test('GetServerInfo reports version, durability and every limit', async () => {
    const info = await call(c, c.getServerInfo, {});
    assert.equal(info.version, '0.0.0-test');
    assert.equal(info.serverTimeMs, clock.nowMs());
    assert.equal(info.limits?.maxBatchJobs, 1000);
    assert.ok((info.limits?.maxMessageBytes ?? 0) > 1024 * 1024);
    assert.equal(info.queueDefaults?.maxAttempts, 5);
  });

  test('garbage bytes get INVALID_ARGUMENT, not INTERNAL', async () => {
    const raw = c.makeUnaryRequest(
      '/sepp.v1.QueueService/Enqueue',
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
      new Metadata(),
      {},
      () => {},
    );
    const e = await new Promise<ServiceError>((resolve) =>
      raw.on('status', (s) => resolve(s as ServiceError)),
    );
    assert.equal(e.code, status.INVALID_ARGUMENT);
  });

  test('lease expiry returns the job (fake clock) and the restart keeps acknowledged state', async () => {
    const { jobId } = await call(c, c.enqueue, { job: job('expiry') });
    await call(c, c.reserve, {
      maxResponseBytes: 0,
      queues: ['expiry'],
      maxJobs: 1,
      leaseDurationMs: 1000,
      waitTimeoutMs: 0,
      workerId: '',
    });
    clock.advance(1001);
    await t.server.engine.runMaintenance();
    assert.equal((await call(c, c.getJob, { jobId })).job?.state, JobState.READY);
    t = await t.restart();
    c = t.client;
    const again = await call(c, c.getJob, { jobId });
    assert.equal(again.job?.state, JobState.READY);
    assert.equal(again.job?.attempt, 1);
    const q = (await call(c, c.listQueues, { pageSize: 0, pageToken: '' })).queues.find(
      (x) => x.name === 'pausable',
    );
    assert.equal(q?.paused, false);
  });
});
