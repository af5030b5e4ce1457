/** The Work stream's outbox: what becomes ready in one turn leaves as one message, under the size limit. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeasedJob } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { type SentJobs, WorkOutbox } from '../../src/rpc/work-outbox.ts';

function leased(n: number, payloadBytes = 16): LeasedJob {
  return {
    jobId: `job-${n}`,
    queue: 'q',
    type: 't',
    payload: Buffer.alloc(payloadBytes),
    contentType: '',
    priority: 0,
    attempt: 1,
    maxAttempts: 3,
    leaseDeadlineMs: 0,
    enqueuedAtMs: 0,
    runAtMs: 0,
    metadata: {},
    traceparent: '',
    tracestate: '',
    idempotencyKey: '',
    lastError: '',
    group: '',
    dependencyResults: [],
    batchId: '',
    leaseToken: '',
    timeoutAtMs: 0,
    flowLimited: false,
  };
}

function recorder() {
  const written: { via: 'job' | 'answer'; message: WorkResponse; sent: SentJobs | undefined }[] = [];
  return {
    written,
    sink: {
      writeJob: (message: WorkResponse, sent: SentJobs) => written.push({ via: 'job', message, sent }),
      writeAnswer: (message: WorkResponse, sent: SentJobs | undefined) =>
        written.push({ via: 'answer', message, sent }),
    },
  };
}

const tick = () => new Promise<void>((resolve) => process.nextTick(resolve));

test('answers and jobs of one turn leave as one batch message, after the turn', async () => {
  const { written, sink } = recorder();
  const outbox = new WorkOutbox(sink, true, 4 * 1024 * 1024);
  outbox.answer({ requestId: 1, code: 0, message: '', result: undefined, errorCode: '', retry: '' });
  outbox.job(leased(1));
  outbox.answer({
    requestId: 2,
    code: 5,
    message: 'not leased',
    result: undefined,
    errorCode: '',
    retry: '',
  });
  outbox.job(leased(2));
  assert.equal(written.length, 0, 'held until the turn ends');
  await tick();
  assert.equal(written.length, 1);
  const only = written[0]!;
  assert.equal(only.via, 'answer', 'a message with answers goes through the read gate');
  assert.ok(only.message.kind?.$case === 'batch');
  assert.deepEqual(
    only.message.kind.value.settled.map((s) => s.requestId),
    [1, 2],
  );
  assert.deepEqual(
    only.message.kind.value.jobs.map((j) => j.jobId),
    ['job-1', 'job-2'],
  );
});

test('jobs alone are written as jobs (bounded by credit, not gated)', async () => {
  const { written, sink } = recorder();
  const outbox = new WorkOutbox(sink, true, 4 * 1024 * 1024);
  outbox.job(leased(1));
  await tick();
  assert.deepEqual(
    written.map((w) => w.via),
    ['job'],
  );
});

test('a batch is split to stay under half the message size limit, in order', async () => {
  const { written, sink } = recorder();
  const limitBytes = 64 * 1024;
  const outbox = new WorkOutbox(sink, true, limitBytes);
  for (let i = 0; i < 10; i++) outbox.job(leased(i, 10 * 1024));
  await tick();
  assert.ok(written.length >= 4, `10 jobs of 10 KiB under a 32 KiB budget: ${written.length} messages`);
  const order: string[] = [];
  for (const { message } of written) {
    assert.ok(message.kind?.$case === 'batch');
    const bytes = message.kind.value.jobs.reduce((sum, j) => sum + j.payload.length, 0);
    assert.ok(bytes <= limitBytes / 2, `a message carries ${bytes} payload bytes`);
    order.push(...message.kind.value.jobs.map((j) => j.jobId));
  }
  assert.deepEqual(
    order,
    Array.from({ length: 10 }, (_, i) => `job-${i}`),
  );
});

test('a job larger than the budget still goes, alone', async () => {
  const { written, sink } = recorder();
  const outbox = new WorkOutbox(sink, true, 64 * 1024);
  outbox.job(leased(1));
  outbox.job(leased(2, 40 * 1024));
  await tick();
  assert.deepEqual(
    written.map((w) => (w.message.kind?.$case === 'batch' ? w.message.kind.value.jobs.length : -1)),
    [1, 1],
  );
});

test('without batch_responses every job and answer is its own message, at once', () => {
  const { written, sink } = recorder();
  const outbox = new WorkOutbox(sink, false, 4 * 1024 * 1024);
  outbox.job(leased(1));
  outbox.answer({ requestId: 1, code: 0, message: '', result: undefined, errorCode: '', retry: '' });
  assert.deepEqual(
    written.map((w) => [w.via, w.message.kind?.$case]),
    [
      ['job', 'job'],
      ['answer', 'settled'],
    ],
  );
});

test('flush writes what is held at once; discard drops it and returns its jobs', async () => {
  const { written, sink } = recorder();
  const outbox = new WorkOutbox(sink, true, 4 * 1024 * 1024);
  outbox.job(leased(1));
  outbox.flush();
  assert.equal(written.length, 1);
  outbox.job(leased(2));
  assert.deepEqual(
    outbox.discard().map((j) => j.jobId),
    ['job-2'],
  );
  await tick();
  assert.equal(written.length, 1);
});

test('each message tells the bytes its jobs took room for, and only a message with jobs', async () => {
  const { written, sink } = recorder();
  const outbox = new WorkOutbox(sink, true, 4 * 1024 * 1024);
  outbox.job(leased(1), 1000);
  outbox.answer({ requestId: 1, code: 0, message: '', result: undefined, errorCode: '', retry: '' });
  outbox.job(leased(2), 2000);
  await tick();
  outbox.answer({ requestId: 2, code: 0, message: '', result: undefined, errorCode: '', retry: '' });
  await tick();
  assert.deepEqual(
    written.map((w) => [w.via, w.sent?.jobs.map((j) => j.jobId), w.sent?.bytes]),
    [
      ['answer', ['job-1', 'job-2'], 3000],
      ['answer', undefined, undefined],
    ],
  );
  const single = recorder();
  new WorkOutbox(single.sink, false, 4 * 1024 * 1024).job(leased(3), 500);
  assert.deepEqual(
    single.written.map((w) => [w.via, w.sent?.jobs.length, w.sent?.bytes]),
    [['job', 1, 500]],
  );
});
