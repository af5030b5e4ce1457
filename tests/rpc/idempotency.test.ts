/**
 * What an idempotency key means after a job ends (issue 17), over both ways a
 * producer enqueues and a worker settles: the unary calls (EnqueueBatch,
 * Reserve, Ack, Nack) and the streams (Produce, Work). A cancel (of a waiting
 * job, or the request for a running one) and a deleted dead letter release
 * the key; a completed job and a kept dead letter keep it for the window, and
 * a repeat answers the original id; with unique_while_active the key is free
 * once its job finished. The engine's own test (tests/engine/idempotency.test.ts)
 * covers the window's edges; this one checks the protocol answers the same.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { call, startTestServer, type TestServer, testJob } from '../helpers/server.ts';
import { type Enqueued, streamTransport, type Transport, unaryTransport } from '../helpers/transports.ts';

function accepted(result: Enqueued): { jobId: string; deduplicated: boolean } {
  assert.ok('jobId' in result, `the enqueue was rejected: ${'message' in result ? result.message : ''}`);
  return result;
}

for (const name of ['unary', 'stream'] as const) {
  describe(`idempotency keys after a job ends (${name})`, () => {
    let t: TestServer;
    let transport: Transport;
    const queue = `keys-${name}`;
    const enqueue = async (key: string, extra: Parameters<typeof testJob>[1] = {}) =>
      accepted(await transport.enqueue(testJob(queue, { idempotencyKey: key, ...extra })));
    const stateOf = async (jobId: string) => (await call(t.client, t.client.getJob, { jobId })).job?.state;

    before(async () => {
      t = await startTestServer({ toml: '[queue_defaults]\ncompleted_retention_ms = "1d"\n' });
      transport = name === 'unary' ? unaryTransport(t.client) : streamTransport(t.client);
    });
    after(async () => {
      transport.close();
      await t.dispose();
    });

    test('a cancel releases the key at once, of a waiting job and of a running one', async () => {
      const waiting = await enqueue('cancel');
      await call(t.client, t.client.cancelJob, { jobId: waiting.jobId });
      const again = await enqueue('cancel');
      assert.equal(again.deduplicated, false);
      assert.notEqual(again.jobId, waiting.jobId);

      const leased = await transport.lease(queue);
      assert.equal(leased.jobId, again.jobId);
      const answer = await call(t.client, t.client.cancelJob, { jobId: again.jobId });
      assert.equal(answer.state, JobState.LEASED, 'the worker has not stopped yet');
      const third = await enqueue('cancel');
      assert.equal(third.deduplicated, false, 'released with the cancel request, not when the worker stops');
      await call(t.client, t.client.cancelJob, { jobId: third.jobId });
    });

    test('a completed job keeps its key for the window: a repeat answers the completed job', async () => {
      const first = await enqueue('done');
      await transport.ack(await transport.lease(queue));
      assert.deepEqual(await enqueue('done'), { jobId: first.jobId, deduplicated: true, debounced: false });
      assert.equal(await stateOf(first.jobId), JobState.COMPLETED);
    });

    test('a kept dead letter keeps its key; a deleted one releases it', async () => {
      const first = await enqueue('dead', { maxAttempts: 1 });
      await transport.nack(await transport.lease(queue));
      assert.equal(await stateOf(first.jobId), JobState.DEAD);
      assert.deepEqual(await enqueue('dead'), { jobId: first.jobId, deduplicated: true, debounced: false });
      await call(t.client, t.client.deleteDeadLetters, {
        requestKey: '',
        queue,
        jobIds: [first.jobId],
        all: false,
        reason: 0,
        errorText: '',
        background: false,
      });
      const again = await enqueue('dead');
      assert.equal(again.deduplicated, false);
      assert.notEqual(again.jobId, first.jobId);
      await call(t.client, t.client.cancelJob, { jobId: again.jobId });
    });

    test('unique_while_active: a duplicate while the job is unfinished, free once it completed', async () => {
      const unique = { uniqueWhileActive: true };
      const first = await enqueue('nightly', unique);
      assert.deepEqual(await enqueue('nightly', unique), {
        jobId: first.jobId,
        deduplicated: true,
        debounced: false,
      });
      const leased = await transport.lease(queue);
      assert.equal(leased.jobId, first.jobId);
      assert.deepEqual(await enqueue('nightly', unique), {
        jobId: first.jobId,
        deduplicated: true,
        debounced: false,
      });
      await transport.ack(leased);
      const next = await enqueue('nightly', unique);
      assert.equal(next.deduplicated, false);
      assert.notEqual(next.jobId, first.jobId);
    });
  });
}
