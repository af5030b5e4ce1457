/** Reserve long-polls over real sockets: wake-up across connections, timeout, cancellation, shutdown. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type { ReserveResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';
import { FakeClock } from '../../src/engine/clock.ts';
import { call, startTestServer, type TestServer, testJob, waitersReach } from '../helpers/server.ts';

const job = (queue: string) => testJob(queue);

describe('long-poll Reserve', () => {
  let t: TestServer;
  const clock = new FakeClock();
  before(async () => {
    t = await startTestServer({ clock });
  });
  after(() => t.dispose());

  test('a worker already waiting on one connection gets a job enqueued on another', async () => {
    const worker = t.connect();
    const producer = t.connect();
    const waiting = call(worker, worker.reserve, {
      maxResponseBytes: 0,
      queues: ['lp'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 30_000,
      workerId: 'w',
    });
    await waitersReach(t, 1);
    const { jobId } = await call(producer, producer.enqueue, { job: job('lp') });
    const { jobs } = await waiting;
    assert.equal(jobs[0]?.jobId, jobId);
    assert.equal(t.server.engine.waitingReserves, 0);
  });

  test('the wait ends with an empty list when its time passes, clamped to the maximum', async () => {
    const waiting = call(t.client, t.client.reserve, {
      maxResponseBytes: 0,
      queues: ['empty'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 10 * 60_000,
      workerId: '',
    });
    await waitersReach(t, 1);
    clock.advance(60_000); // max_wait_ms: the ten minutes asked for are clamped to 60 s.
    const { jobs } = await waiting;
    assert.deepEqual(jobs, []);
  });

  test('a client that cancels frees its waiter at once and is handed no job', async () => {
    const worker = t.connect();
    const pending = worker.reserve(
      {
        maxResponseBytes: 0,
        queues: ['cancelled'],
        maxJobs: 1,
        leaseDurationMs: 0,
        waitTimeoutMs: 30_000,
        workerId: '',
      },
      new Metadata(),
      {},
      () => {},
    );
    await waitersReach(t, 1);
    pending.cancel();
    await waitersReach(t, 0);
    await call(t.client, t.client.enqueue, { job: job('cancelled') });
    const counts = (await t.server.engine.listQueues()).find((q) => q.name === 'cancelled')?.counts;
    assert.equal(counts?.ready, 1);
    assert.equal(counts?.leased, 0);
  });

  test('a deadline shorter than the wait cancels the call and frees the waiter', async () => {
    const error = await call(
      t.client,
      t.client.reserve,
      {
        maxResponseBytes: 0,
        queues: ['deadline'],
        maxJobs: 1,
        leaseDurationMs: 0,
        waitTimeoutMs: 30_000,
        workerId: '',
      },
      new Metadata(),
      { deadline: Date.now() + 200 },
    ).then(
      () => assert.fail('expected DEADLINE_EXCEEDED'),
      (e: ServiceError) => e,
    );
    assert.equal(error.code, status.DEADLINE_EXCEEDED);
    await waitersReach(t, 0);
  });

  test('shutdown answers waiting long-polls with an empty list, then refuses calls', async () => {
    const own = await startTestServer({ clock });
    const waiting = call(own.client, own.client.reserve, {
      maxResponseBytes: 0,
      queues: ['bye'],
      maxJobs: 1,
      leaseDurationMs: 0,
      waitTimeoutMs: 30_000,
      workerId: '',
    });
    await waitersReach(own, 1);
    const stopping = own.server.shutdown();
    const result: ReserveResponse = await waiting;
    assert.deepEqual(result.jobs, []);
    await stopping;
    await own.dispose();
  });
});
