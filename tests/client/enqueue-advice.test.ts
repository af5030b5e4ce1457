/**
 * Enqueues the server takes, and the server's advice acted on (docs/protocol.md, "Whether to
 * repeat a call"): the SDK cuts a batch by the UTF-8 bytes of what it sends, not by characters;
 * a refusal for a full queue (`queue_full`, RESOURCE_EXHAUSTED) carries `retry: 'later'`, and
 * with retries on it is repeated until the queue has room. The Python SDK's tests of the same
 * are in clients/python/tests/test_enqueue_advice.py.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { JobRejectedError, SeppClient } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from './helpers.ts';

// A message size the server takes for 4 KiB payloads and results and 16 KiB of metadata.
const toml = `
[queue_defaults]
max_payload_bytes = "4KiB"
[limits]
max_result_bytes = "4KiB"
[grpc]
max_message_bytes = "96KiB"
[queues.full]
max_depth = 1
`;
const retry = { unavailable: true, maxAttempts: 1000, baseDelayMs: 5, maxDelayMs: 20 };

let t: TestServer;
before(async () => {
  t = await startTestServer({ toml });
});
after(() => t.dispose());

test('a batch of multi-byte text is cut by its UTF-8 bytes, and every job is stored', async () => {
  const client = SeppClient.connect(t.address);
  try {
    // 15,000 bytes of metadata in 5,000 characters each: the ten jobs are about 51,000 characters,
    // under the 96 KiB message, and about 151,000 bytes, over it. A payload of 中 too.
    const note = '中'.repeat(5000);
    const jobs = Array.from({ length: 10 }, (_, i) => ({
      queue: 'wide',
      type: 't',
      payload: `é${i}🙂`,
      metadata: { note },
    }));
    const outcomes = await client.enqueueBatch(jobs);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.message)),
      jobs.map(() => 'ok'),
    );
    assert.equal(client.stats().batches, 2, 'two messages of at most six jobs, not one');
    const first = outcomes[0];
    assert.ok(first?.ok);
    const job = await client.getJob(first.id);
    assert.equal(job.metadata.note, note);

    // Enqueues of one turn are coalesced by the same count.
    const each = await Promise.all(jobs.map((j) => client.enqueue(j.queue, j.type, j.payload, j)));
    assert.equal(each.length, 10);
    assert.equal(client.stats().batches, 4);
  } finally {
    await client.close();
  }
});

test('a full queue: retry later at once with retries off; with them on, stored once the queue drains', async () => {
  const once = SeppClient.connect(t.address);
  const retried = SeppClient.connect(t.address, { retry });
  const unary = SeppClient.connect(t.address, { retry, transport: 'unary' });
  try {
    const { id } = await once.enqueue('full', 't', 'first');
    const error = await once.enqueue('full', 't', 'second').then(
      () => assert.fail('enqueued past max_depth'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof JobRejectedError);
    assert.equal(error.reason, 'queue_full');
    assert.equal(error.grpcCode, status.RESOURCE_EXHAUSTED);
    assert.equal(error.retry, 'later', "what the server's sepp-retry trailer says of it");
    assert.equal(once.stats().batches, 2, 'sent once');
    const atomic = await once.enqueueAtomic([{ queue: 'full', type: 't' }]).then(
      () => assert.fail('enqueued past max_depth'),
      (e: unknown) => e,
    );
    assert.ok(atomic instanceof JobRejectedError);
    assert.equal(atomic.retry, 'later');
    assert.equal(once.stats().batches, 3, 'sent once');

    // Retries on: refused and sent again until a worker takes the queue's job off it (on the
    // Produce stream, then as EnqueueBatch calls).
    let queued = id;
    for (const client of [retried, unary]) {
      const next = client.enqueue('full', 't', 'next');
      await until(() => client.stats().batches >= 3, 'the enqueue refused and sent again');
      const [lease] = await once.reserve({ queues: ['full'] });
      assert.equal(lease?.id, queued);
      await once.ack(lease);
      const stored = await next;
      assert.equal((await once.getJob(stored.id)).state, 'ready');
      queued = stored.id;
    }
    const [last] = await once.reserve({ queues: ['full'] });
    assert.ok(last);
    await once.ack(last);
  } finally {
    await once.close();
    await retried.close();
    await unary.close();
  }
});
