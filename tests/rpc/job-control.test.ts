/**
 * Job control over the protocol, with a raw gRPC client: the cancel notice on
 * the Work stream (single and batched answers) and the `job_cancelled` answer
 * to extends and acks (stream `error_code`, unary trailer), expiry and
 * unique-while-active on enqueue, and the bulk and update calls.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ClientDuplexStream, credentials, type ServiceError, status } from '@grpc/grpc-js';
import { BulkOperationState } from '../../clients/typescript/src/gen/sepp/v1/bulk_operation.js';
import { DeadReason, JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { ProduceRequest, ProduceResponse } from '../../clients/typescript/src/gen/sepp/v1/produce.js';
import { QueueServiceClient } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import {
  SettleOutcome,
  type WorkRequest,
  type WorkResponse,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { unsetFilterFields } from '../helpers/proto-filter.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

type Work = ClientDuplexStream<WorkRequest, WorkResponse>;

/** Opens a Work stream and collects what it receives. */
function openWork(t: TestServer, queue: string, workerId: string, batchResponses: boolean) {
  const stream = t.client.work() as Work;
  const seen: WorkResponse[] = [];
  const waiters: { until: (seen: WorkResponse[]) => boolean; resolve: () => void }[] = [];
  stream.on('data', (m: WorkResponse) => {
    seen.push(m);
    for (const w of [...waiters]) if (w.until(seen)) w.resolve();
  });
  stream.on('error', () => {});
  stream.write({
    requestId: 0,
    kind: {
      $case: 'subscribe',
      value: { queues: [queue], leaseDurationMs: 60_000, workerId, batchResponses },
    },
  });
  const wait = (until: (seen: WorkResponse[]) => boolean) =>
    new Promise<void>((resolve) => {
      if (until(seen)) resolve();
      else waiters.push({ until, resolve });
    });
  return { stream, seen, wait };
}

const jobsOf = (m: WorkResponse) =>
  m.kind?.$case === 'job' ? [m.kind.value] : m.kind?.$case === 'batch' ? m.kind.value.jobs : [];
const cancelsOf = (m: WorkResponse) =>
  m.kind?.$case === 'cancel' ? [m.kind.value] : m.kind?.$case === 'batch' ? m.kind.value.cancels : [];
const settledOf = (m: WorkResponse) =>
  m.kind?.$case === 'settled' ? [m.kind.value] : m.kind?.$case === 'batch' ? m.kind.value.settled : [];

async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  return promise.then(
    () => assert.fail('the call succeeded'),
    (error: ServiceError) => error,
  );
}

describe('job control over gRPC', () => {
  let t: TestServer;
  const clock = new FakeClock();
  before(async () => {
    t = await startTestServer({ clock });
  });
  after(() => t.dispose());

  for (const batchResponses of [false, true]) {
    test(`a cancel reaches the Work stream holding the lease at once (batch_responses ${batchResponses})`, async () => {
      const queue = `notice-${batchResponses}`;
      const { jobId } = await call(t.client, t.client.enqueue, { job: testJob(queue) });
      const holder = openWork(t, queue, 'holder', batchResponses);
      const bystander = openWork(t, queue, 'someone-else', batchResponses);
      holder.stream.write({ requestId: 0, kind: { $case: 'credit', value: { jobs: 1 } } });
      await holder.wait((seen) => seen.some((m) => jobsOf(m).length > 0));
      const leased = holder.seen.flatMap(jobsOf)[0]!;
      assert.equal(leased.jobId, jobId);

      const answer = await call(t.client, t.client.cancelJob, { jobId });
      assert.deepEqual(answer, { previousState: JobState.LEASED, state: JobState.LEASED });
      await holder.wait((seen) => seen.some((m) => cancelsOf(m).length > 0));
      assert.deepEqual(holder.seen.flatMap(cancelsOf), [
        { jobId, attempt: leased.attempt, cancelledBy: 'anonymous', cancelledAtMs: clock.nowMs() },
      ]);

      // The next extend is refused with job_cancelled; the nack ends the job cancelled.
      const settlement = (requestId: number, kind: WorkRequest_Kind): WorkRequest => ({ requestId, kind });
      holder.stream.write(
        settlement(7, {
          $case: 'extend',
          value: { jobId, attempt: leased.attempt, leaseDurationMs: 60_000 },
        }),
      );
      holder.stream.write(
        settlement(8, {
          $case: 'nack',
          value: {
            jobId,
            attempt: leased.attempt,
            errorMessage: 'stopped',
            errorClass: '',
            errorStack: '',
            directive: undefined,
          },
        }),
      );
      await holder.wait((seen) => seen.flatMap(settledOf).length === 2);
      const [extend, nack] = holder.seen.flatMap(settledOf);
      assert.equal(extend?.code, status.FAILED_PRECONDITION);
      assert.equal(extend?.errorCode, 'job_cancelled');
      assert.match(extend?.message ?? '', /cancelled by anonymous/);
      assert.equal(nack?.code, status.OK);
      assert.equal(nack?.errorCode, '');
      assert.deepEqual(nack?.result, { $case: 'nack', value: { state: JobState.CANCELLED, runAtMs: 0 } });
      const { job } = await call(t.client, t.client.getJob, { jobId });
      assert.equal(job?.state, JobState.CANCELLED);
      assert.equal(job?.cancelledBy, 'anonymous');
      assert.equal(job?.cancelledAtMs, clock.nowMs());
      assert.deepEqual(bystander.seen.flatMap(cancelsOf), [], 'another worker id is not told');
      holder.stream.cancel();
      bystander.stream.cancel();
    });
  }

  test('who is told of a cancel: lease with or without worker_id × streams with none, the same or another', async () => {
    // work.proto: the streams subscribed to the job's queue under the lease's worker_id,
    // or all of them when the lease has none (a stream not holding the lease ignores it).
    const queue = 'notice-matrix';
    const streams = {
      none: openWork(t, queue, '', true),
      same: openWork(t, queue, 'wa', false),
      other: openWork(t, queue, 'wb', true),
    };
    const elsewhere = openWork(t, 'notice-matrix-other-queue', '', true);
    const leaseAndCancel = async (workerId: string) => {
      const { jobId } = await call(t.client, t.client.enqueue, { job: testJob(queue) });
      const reserve = {
        queues: [queue],
        maxJobs: 1,
        leaseDurationMs: 60_000,
        waitTimeoutMs: 0,
        workerId,
        maxResponseBytes: 0,
      };
      const [leased] = (await call(t.client, t.client.reserve, reserve)).jobs;
      assert.equal(leased?.jobId, jobId);
      await call(t.client, t.client.cancelJob, { jobId });
      return jobId;
    };
    /** Resolves once `stream` was told of `jobId`; a generous guard turns a notice that never comes into a failure. */
    const told = (stream: ReturnType<typeof openWork>, jobId: string, who: string) =>
      Promise.race([
        stream.wait((seen) => seen.flatMap(cancelsOf).some((n) => n.jobId === jobId)),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`${who} was never told of ${jobId}`)), 10_000).unref(),
        ),
      ]);
    const expected = {
      '': { none: true, same: true, other: true },
      wa: { none: false, same: true, other: false },
    } as const;
    for (const [leaseWorkerId, reaches] of Object.entries(expected)) {
      const jobId = await leaseAndCancel(leaseWorkerId);
      // A marker every stream on the queue is told of: notices reach a stream in commit order,
      // so what a stream was told before the marker is all it will ever be told of jobId.
      const marker = await leaseAndCancel('');
      for (const [name, stream] of Object.entries(streams)) {
        await told(stream, marker, `the stream with worker_id "${name}"`);
        const before = stream.seen.flatMap(cancelsOf).map((n) => n.jobId);
        const toldOfJob = before.indexOf(jobId) >= 0 && before.indexOf(jobId) < before.indexOf(marker);
        assert.equal(
          toldOfJob,
          reaches[name as keyof typeof reaches],
          `lease worker_id "${leaseWorkerId}", stream "${name}": ${before.join(', ')}`,
        );
      }
    }
    assert.deepEqual(elsewhere.seen.flatMap(cancelsOf), [], 'a stream on another queue is told nothing');
    for (const stream of [...Object.values(streams), elsewhere]) stream.stream.cancel();
  });

  test('on unary calls: Extend and Ack answer FAILED_PRECONDITION with sepp-error-code job_cancelled', async () => {
    const queue = 'unary-cancel';
    await call(t.client, t.client.enqueueBatch, { jobs: [testJob(queue), testJob(queue), testJob(queue)] });
    const { jobs } = await call(t.client, t.client.reserve, {
      maxResponseBytes: 0,
      queues: [queue],
      maxJobs: 3,
      leaseDurationMs: 60_000,
      waitTimeoutMs: 0,
      workerId: '',
    });
    const [a, b, c] = jobs;
    assert.ok(a && b && c);
    const filter = { queue, type: '', states: [JobState.LEASED], group: '', ...unsetFilterFields };
    assert.equal(
      (await call(t.client, t.client.cancelJobs, { requestKey: '', filter, dryRun: true, background: false }))
        .matchedCount,
      3,
    );
    const cancelled = await call(t.client, t.client.cancelJobs, {
      requestKey: '',
      filter,
      dryRun: false,
      background: false,
    });
    assert.deepEqual([cancelled.cancelledCount, cancelled.cancelRequestedCount], [0, 3]);
    assert.equal(cancelled.operation?.state, BulkOperationState.DONE);
    assert.deepEqual([cancelled.operation?.matchedCount, cancelled.operation?.changedCount], [3, 3]);
    const extend = await failure(
      call(t.client, t.client.extend, { jobId: a.jobId, attempt: a.attempt, leaseDurationMs: 1000 }),
    );
    assert.equal(extend.code, status.FAILED_PRECONDITION);
    assert.deepEqual(extend.metadata.get('sepp-error-code'), ['job_cancelled']);
    const ack = await failure(call(t.client, t.client.ack, { jobId: a.jobId, attempt: a.attempt }));
    assert.equal(ack.code, status.FAILED_PRECONDITION);
    assert.deepEqual(ack.metadata.get('sepp-error-code'), ['job_cancelled']);
    const batch = await call(t.client, t.client.ackBatch, {
      acks: [
        { jobId: b.jobId, attempt: b.attempt },
        { jobId: c.jobId, attempt: c.attempt },
      ],
    });
    assert.deepEqual(
      batch.results.map((r) => r.outcome),
      [SettleOutcome.CANCELLED, SettleOutcome.CANCELLED],
    );
    const counts = (await call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' })).queues.find(
      (q) => q.name === queue,
    )?.counts;
    assert.equal(counts?.cancelled, 3);
    assert.equal(counts?.leased, 0);
  });

  test('expiry on Enqueue and on Produce; a job not started in time is dead with reason EXPIRED', async () => {
    const queue = 'ttl';
    const { jobId } = await call(t.client, t.client.enqueue, {
      job: testJob(queue, { expiry: { $case: 'ttlMs', value: 5000 } }),
    });
    const produce = t.client.produce() as ClientDuplexStream<ProduceRequest, ProduceResponse>;
    const answered = new Promise<ProduceResponse>((resolve) => produce.once('data', resolve));
    produce.write({
      sequence: 1,
      jobs: [testJob(queue, { expiry: { $case: 'expiresAtMs', value: clock.nowMs() + 5000 } })],
      atomic: false,
    });
    const streamed = (await answered).results[0]?.outcome;
    assert.equal(streamed?.$case, 'accepted');
    produce.end();
    const { job } = await call(t.client, t.client.getJob, { jobId });
    assert.equal(job?.expiresAtMs, clock.nowMs() + 5000);
    clock.advance(5000);
    await t.server.engine.runMaintenance();
    const { jobs } = await call(t.client, t.client.listDeadLetters, {
      queue,
      pageSize: 0,
      pageToken: '',
      reason: DeadReason.EXPIRED,
    });
    assert.equal(jobs.length, 2);
    const refused = await failure(
      call(t.client, t.client.enqueue, { job: testJob(queue, { expiry: { $case: 'ttlMs', value: 0 } }) }),
    );
    assert.equal(refused.code, status.INVALID_ARGUMENT);
    assert.deepEqual(refused.metadata.get('sepp-rejection-reason'), ['invalid_job']);
  });

  test('unique_while_active: a duplicate while the first is unfinished, a new job once it is done', async () => {
    const queue = 'unique';
    const unique = testJob(queue, { idempotencyKey: 'nightly', uniqueWhileActive: true });
    const first = await call(t.client, t.client.enqueue, { job: unique });
    const again = await call(t.client, t.client.enqueue, { job: unique });
    assert.deepEqual(again, { jobId: first.jobId, deduplicated: true });
    await call(t.client, t.client.cancelJob, { jobId: first.jobId });
    const third = await call(t.client, t.client.enqueue, { job: unique });
    assert.equal(third.deduplicated, false);
  });

  test('UpdateJob, UpdateJobs and PurgeQueue; ListAuditEntries pages through what they did', async () => {
    const queue = 'manage';
    const later = testJob(queue, { schedule: { $case: 'delayMs', value: 60_000 } });
    const { jobId } = await call(t.client, t.client.enqueue, { job: later });
    await call(t.client, t.client.enqueueBatch, { jobs: [later, later] });
    const updated = await call(t.client, t.client.updateJob, {
      jobId,
      changes: {
        priorityChange: { $case: 'priority', value: 8 },
        scheduleChange: { $case: 'runNow', value: true },
      },
    });
    assert.equal(updated.job?.state, JobState.READY);
    assert.equal(updated.job?.priority, 8);
    const noChange = await failure(call(t.client, t.client.updateJob, { jobId, changes: {} }));
    assert.equal(noChange.code, status.INVALID_ARGUMENT);
    const runNow = { scheduleChange: { $case: 'runNow' as const, value: true } };
    const ran = await call(t.client, t.client.updateJobs, {
      requestKey: '',
      filter: { queue, type: '', states: [], group: '', ...unsetFilterFields },
      changes: runNow,
      dryRun: false,
      background: false,
    });
    assert.equal(ran.updatedCount, 2);
    assert.equal(
      (await call(t.client, t.client.purgeQueue, { requestKey: '', queue, background: false })).deletedCount,
      3,
    );
    const purgeMissing = await failure(
      call(t.client, t.client.purgeQueue, { requestKey: '', queue: '', background: false }),
    );
    assert.equal(purgeMissing.code, status.INVALID_ARGUMENT);

    const first = await call(t.client, t.client.listAuditEntries, {
      actor: 'anonymous',
      action: '',
      target: `queue:${queue}`,
      pageSize: 1,
      pageToken: '',
    });
    assert.equal(first.entries[0]?.action, 'queue.purge');
    const { operationId, ...purged } = JSON.parse(first.entries[0]?.detailsJson ?? '{}') as Record<
      string,
      unknown
    >;
    assert.equal(typeof operationId, 'string');
    assert.deepEqual(purged, {
      via: 'grpc',
      queue,
      states: ['scheduled', 'ready'],
      matched: 3,
      changed: 3,
      done: true,
    });
    const second = await call(t.client, t.client.listAuditEntries, {
      actor: 'anonymous',
      action: '',
      target: `queue:${queue}`,
      pageSize: 1,
      pageToken: first.nextPageToken,
    });
    assert.equal(second.entries[0]?.action, 'jobs.update');
    const bad = await failure(
      call(t.client, t.client.listAuditEntries, {
        actor: '',
        action: '',
        target: '',
        pageSize: 0,
        pageToken: 'x',
      }),
    );
    assert.equal(bad.code, status.INVALID_ARGUMENT);
  });

  test('bulk calls on a queue nobody has used answer NOT_FOUND, as PurgeQueue does, and audit nothing', async () => {
    const queue = 'never-used';
    const filter = { queue, type: '', states: [], group: '', ...unsetFilterFields };
    const runNow = { scheduleChange: { $case: 'runNow' as const, value: true } };
    const answers = [
      await failure(call(t.client, t.client.purgeQueue, { requestKey: '', queue, background: false })),
      await failure(
        call(t.client, t.client.cancelJobs, { requestKey: '', filter, dryRun: false, background: false }),
      ),
      await failure(
        call(t.client, t.client.cancelJobs, { requestKey: '', filter, dryRun: true, background: false }),
      ),
      await failure(
        call(t.client, t.client.updateJobs, {
          requestKey: '',
          filter,
          changes: runNow,
          dryRun: false,
          background: false,
        }),
      ),
    ];
    for (const answer of answers) {
      assert.equal(answer.code, status.NOT_FOUND);
      assert.match(answer.details, /queue never-used does not exist/);
    }
    const { entries } = await call(t.client, t.client.listAuditEntries, {
      actor: '',
      action: '',
      target: `queue:${queue}`,
      pageSize: 10,
      pageToken: '',
    });
    assert.deepEqual(entries, []);
  });

  test('the sepp command names itself in its user agent: its entries say via cli, others via grpc', async () => {
    const cli = new QueueServiceClient(t.address, credentials.createInsecure(), {
      'grpc.primary_user_agent': 'sepp-cli/0.0.0',
    });
    try {
      await call(cli, cli.pauseQueue, { queue: 'door', allowMissing: true });
      await call(t.client, t.client.resumeQueue, { queue: 'door', allowMissing: false });
    } finally {
      cli.close();
    }
    const { entries } = await call(t.client, t.client.listAuditEntries, {
      actor: '',
      action: '',
      target: 'queue:door',
      pageSize: 2,
      pageToken: '',
    });
    assert.deepEqual(
      entries.map((e) => [e.action, JSON.parse(e.detailsJson).via]),
      [
        ['queue.resume', 'grpc'],
        ['queue.pause', 'cli'],
      ],
    );
  });
});

type WorkRequest_Kind = NonNullable<WorkRequest['kind']>;
