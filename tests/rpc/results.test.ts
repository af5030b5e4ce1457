/**
 * Results and progress over gRPC: a result round trip on each transport
 * (unary Ack, AckBatch, a Work ack message, a Work batch), GetJob until the
 * retention ends and NOT_FOUND after it (injected clock), the result limit's
 * INVALID_ARGUMENT, and progress reports unary and on the Work stream.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ClientDuplexStream, ServiceError } from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { JobState, type LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type {
  WorkRequest,
  WorkRequest_Settlement,
  WorkResponse,
  WorkResponse_Settled,
} from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';

const HOUR_MS = 3_600_000;

describe('results and progress over gRPC', () => {
  let t: TestServer;
  const clock = new FakeClock();
  before(async () => {
    t = await startTestServer({
      clock,
      toml: '[limits]\nmax_result_bytes = 1000\n[queues.keep]\ncompleted_retention_ms = "1h"\n',
    });
  });
  after(() => t.dispose());

  async function lease(queue: string, count: number): Promise<LeasedJob[]> {
    for (let i = 0; i < count; i++) await call(t.client, t.client.enqueue, { job: testJob(queue) });
    const { jobs } = await call(t.client, t.client.reserve, {
      maxResponseBytes: 0,
      queues: [queue],
      maxJobs: count,
      leaseDurationMs: 60_000,
      waitTimeoutMs: 0,
      workerId: 'w',
    });
    assert.equal(jobs.length, count);
    return jobs;
  }

  async function resultOf(jobId: string) {
    const { job } = await call(t.client, t.client.getJob, { jobId });
    assert.equal(job?.state, JobState.COMPLETED);
    return {
      data: job?.result?.data.toString(),
      contentType: job?.result?.contentType,
      size: job?.resultBytes,
    };
  }

  /** Opens a Work stream subscribed to nothing: it only settles. */
  function settler() {
    const w = t.client.work() as ClientDuplexStream<WorkRequest, WorkResponse>;
    const answers: WorkResponse_Settled[] = [];
    const waiting: (() => void)[] = [];
    w.on('data', (m: WorkResponse) => {
      if (m.kind?.$case === 'settled') answers.push(m.kind.value);
      if (m.kind?.$case === 'batch') answers.push(...m.kind.value.settled);
      for (const wake of waiting.splice(0)) wake();
    });
    w.on('error', () => {});
    w.write({
      requestId: 0,
      kind: {
        $case: 'subscribe',
        value: { queues: ['nothing-here'], leaseDurationMs: 0, workerId: '', batchResponses: true },
      },
    });
    return {
      w,
      /** Sends `kinds` as the settlements of one batch message, numbered from `firstRequestId`. */
      batch(firstRequestId: number, kinds: NonNullable<WorkRequest_Settlement['kind']>[]) {
        const settlements = kinds.map((kind, i) => ({ requestId: firstRequestId + i, kind }));
        w.write({
          requestId: 0,
          kind: { $case: 'batch', value: { credit: 0, settlements, stopDelivery: false } },
        });
      },
      async answers(count: number): Promise<WorkResponse_Settled[]> {
        while (answers.length < count) await new Promise<void>((r) => waiting.push(r));
        return answers.splice(0, count).sort((a, b) => a.requestId - b.requestId);
      },
    };
  }

  test('a result travels with Ack, AckBatch, a Work ack and a Work batch, and GetJob returns it', async () => {
    const [unaryJob, batchA, batchB, streamJob, streamBatchA, streamBatchB] = await lease('keep', 6);
    assert.ok(unaryJob && batchA && batchB && streamJob && streamBatchA && streamBatchB);
    const result = (text: string, contentType = 'text/plain') => ({ data: Buffer.from(text), contentType });

    await call(t.client, t.client.ack, { jobId: unaryJob.jobId, attempt: 1, result: result('unary') });
    const { results } = await call(t.client, t.client.ackBatch, {
      acks: [
        { jobId: batchA.jobId, attempt: 1, result: result('{"a":1}', 'application/json') },
        { jobId: batchB.jobId, attempt: 1 },
      ],
    });
    assert.equal(results.length, 2);

    const s = settler();
    s.w.write({
      requestId: 1,
      kind: { $case: 'ack', value: { jobId: streamJob.jobId, attempt: 1, result: result('stream', '') } },
    });
    s.batch(2, [
      { $case: 'ack', value: { jobId: streamBatchA.jobId, attempt: 1, result: result('b1') } },
      { $case: 'ack', value: { jobId: streamBatchB.jobId, attempt: 1, result: result('b2') } },
    ]);
    const answers = await s.answers(3);
    assert.deepEqual(
      answers.map((a) => [a.requestId, a.code]),
      [
        [1, status.OK],
        [2, status.OK],
        [3, status.OK],
      ],
    );
    s.w.end();

    assert.deepEqual(await resultOf(unaryJob.jobId), { data: 'unary', contentType: 'text/plain', size: 5 });
    assert.deepEqual(await resultOf(batchA.jobId), {
      data: '{"a":1}',
      contentType: 'application/json',
      size: 7,
    });
    assert.deepEqual(await resultOf(batchB.jobId), { data: undefined, contentType: undefined, size: 0 });
    assert.deepEqual(await resultOf(streamJob.jobId), {
      data: 'stream',
      contentType: 'application/octet-stream',
      size: 6,
    });
    assert.deepEqual(await resultOf(streamBatchA.jobId), { data: 'b1', contentType: 'text/plain', size: 2 });
    assert.deepEqual(await resultOf(streamBatchB.jobId), { data: 'b2', contentType: 'text/plain', size: 2 });

    // The retention ends: the sweep deletes the job, result and all, and GetJob says NOT_FOUND.
    clock.advance(HOUR_MS + 61_000);
    await t.server.engine.runMaintenance();
    const gone = await call(t.client, t.client.getJob, { jobId: unaryJob.jobId }).catch(
      (e: ServiceError) => e,
    );
    assert.equal((gone as ServiceError).code, status.NOT_FOUND);
  });

  test('a result over max_result_bytes is INVALID_ARGUMENT on every transport and the lease stays', async () => {
    const [a, b, c] = await lease('keep', 3);
    assert.ok(a && b && c);
    const big = { data: Buffer.alloc(1001), contentType: '' };
    const unary = await call(t.client, t.client.ack, { jobId: a.jobId, attempt: 1, result: big }).catch(
      (e: ServiceError) => e,
    );
    assert.equal((unary as ServiceError).code, status.INVALID_ARGUMENT);
    assert.match(
      (unary as ServiceError).details,
      /is 1001 bytes, the limit is 1000 bytes \(limits\.max_result_bytes\)/,
    );
    const batch = await call(t.client, t.client.ackBatch, {
      acks: [{ jobId: b.jobId, attempt: 1, result: big }],
    }).catch((e: ServiceError) => e);
    assert.equal((batch as ServiceError).code, status.INVALID_ARGUMENT);
    // On the stream, only the oversized ack of a batch fails; its neighbour is acked.
    const s = settler();
    s.batch(1, [
      { $case: 'ack', value: { jobId: c.jobId, attempt: 1, result: big } },
      { $case: 'ack', value: { jobId: b.jobId, attempt: 1 } },
    ]);
    const [first, second] = await s.answers(2);
    assert.equal(first?.code, status.INVALID_ARGUMENT);
    assert.equal(second?.code, status.OK);
    s.w.end();
    for (const leased of [a, c]) {
      const { job } = await call(t.client, t.client.getJob, { jobId: leased.jobId });
      assert.equal(job?.state, JobState.LEASED);
    }
  });

  test('progress is reported with ReportProgress and on the Work stream, and GetJob shows it', async () => {
    const [a, b] = await lease('progress', 2);
    assert.ok(a && b);
    const { progress } = await call(t.client, t.client.reportProgress, {
      jobId: a.jobId,
      attempt: 1,
      percent: 0,
      hasPercent: true,
      json: '{"step":"start"}',
    });
    assert.deepEqual(progress, {
      percent: 0,
      hasPercent: true,
      json: '{"step":"start"}',
      reportedAtMs: clock.nowMs(),
    });
    const refused = await call(t.client, t.client.reportProgress, {
      jobId: a.jobId,
      attempt: 1,
      percent: 0,
      hasPercent: false,
      json: '',
    }).catch((e: ServiceError) => e);
    assert.equal((refused as ServiceError).code, status.INVALID_ARGUMENT);
    const stale = await call(t.client, t.client.reportProgress, {
      jobId: a.jobId,
      attempt: 2,
      percent: 1,
      hasPercent: true,
      json: '',
    }).catch((e: ServiceError) => e);
    assert.equal((stale as ServiceError).code, status.FAILED_PRECONDITION);

    const s = settler();
    s.w.write({
      requestId: 1,
      kind: {
        $case: 'progress',
        value: { jobId: a.jobId, attempt: 1, percent: 42, hasPercent: true, json: '' },
      },
    });
    s.batch(2, [
      {
        $case: 'progress',
        value: { jobId: b.jobId, attempt: 1, percent: 0, hasPercent: false, json: '[1,2]' },
      },
      { $case: 'progress', value: { jobId: b.jobId, attempt: 1, percent: 0, hasPercent: false, json: '{' } },
    ]);
    const [one, two, three] = await s.answers(3);
    assert.equal(one?.code, status.OK);
    assert.deepEqual(one?.result, {
      $case: 'progress',
      value: {
        progress: { percent: 42, hasPercent: true, json: '{"step":"start"}', reportedAtMs: clock.nowMs() },
      },
    });
    assert.equal(two?.code, status.OK);
    assert.equal(three?.code, status.INVALID_ARGUMENT);
    assert.match(three?.message ?? '', /not valid JSON/);
    s.w.end();

    const { job: jobA } = await call(t.client, t.client.getJob, { jobId: a.jobId });
    assert.equal(jobA?.progress?.percent, 42);
    const { job: jobB } = await call(t.client, t.client.getJob, { jobId: b.jobId });
    assert.deepEqual(jobB?.progress, {
      percent: 0,
      hasPercent: false,
      json: '[1,2]',
      reportedAtMs: clock.nowMs(),
    });
  });
});
