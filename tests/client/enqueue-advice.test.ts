/**
 * Enqueues the server takes, and the server's advice acted on (docs/protocol.md, "Whether to
 * repeat a call"): the SDK cuts a batch by the UTF-8 bytes of what it sends, not by characters;
 * a refusal for a full queue (`queue_full`, RESOURCE_EXHAUSTED) carries `retry: 'later'`, and
 * with retries on it is repeated until the queue has room — a single job, a best-effort batch's
 * refused jobs, a flow; a batch refused as over `limits.max_batch_jobs` after a reload lowered it
 * is cut again by the new bound and sent once more; a Worker's settlements are cut by the UTF-8
 * bytes of a result's content type. The Python SDK's tests of the same are in
 * clients/python/tests/test_enqueue_advice.py.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import {
  Flow,
  JobRejectedError,
  JobResult,
  SeppClient,
  SeppError,
} from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deferred, until } from './helpers.ts';

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
[queues.few]
max_depth = 2
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

/** Takes a job of `queue` off it (reserve and ack), so that a full queue has room for one more. */
async function drainOne(client: SeppClient, queue: string): Promise<string> {
  const [lease] = await client.reserve({ queues: [queue] });
  assert.ok(lease, `a job on ${queue}`);
  await client.ack(lease);
  return lease.id;
}

test("a batch's jobs refused queue_full, and a refused flow, are sent again until the queue has room", async () => {
  const once = SeppClient.connect(t.address);
  const retried = SeppClient.connect(t.address, { retry });
  try {
    const jobs = ['a', 'b', 'c'].map((type) => ({ queue: 'few', type }));
    const plain = await once.enqueueBatch(jobs);
    assert.deepEqual(
      plain.map((o) => (o.ok ? 'ok' : o.reason)),
      ['ok', 'ok', 'queue_full'],
      'retries off: the refusal is an outcome',
    );
    await drainOne(once, 'few');
    await drainOne(once, 'few');

    // Retries on: `c` alone is sent again until a job leaves the queue; its outcome takes its place.
    const outcomes = retried.enqueueBatch(jobs);
    await until(() => retried.stats().batches >= 2, 'the refused job sent again');
    // Each retry sends `c` alone while the queue stays full, and one may have gone again by now:
    // whatever their number, never `a` or `b` again.
    const sent = retried.stats();
    assert.equal(sent.enqueuedJobs, 3 + (sent.batches - 1), 'the stored jobs are not sent again');
    await drainOne(once, 'few');
    const stored = await outcomes;
    const types = [];
    for (const outcome of stored) {
      assert.ok(outcome.ok, 'every job stored');
      types.push((await once.getJob(outcome.id)).type);
    }
    assert.deepEqual(types, ['a', 'b', 'c'], 'one outcome per job, in the order given');
    await drainOne(once, 'few');
    await drainOne(once, 'few');

    // A flow refused for a full queue alone stored nothing: sent again the same way.
    const first = await once.enqueue('full', 't');
    const refused = await once.enqueueFlow(new Flow().add('only', { queue: 'full', type: 't' })).then(
      () => assert.fail('enqueued past max_depth'),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof JobRejectedError);
    assert.deepEqual([refused.reason, refused.retry], ['queue_full', 'later']);
    const flow = retried.enqueueFlow(new Flow().add('only', { queue: 'full', type: 't' }));
    await until(() => retried.stats().produceMessages >= 4, 'the refused flow sent again');
    assert.equal(await drainOne(once, 'full'), first.id);
    const { only } = await flow;
    assert.ok(only);
    assert.equal((await once.getJob(only.id)).state, 'ready');
    await drainOne(once, 'full');
  } finally {
    await once.close();
    await retried.close();
  }
});

test("a Worker's settlements are cut by the UTF-8 bytes of a result's content type", async () => {
  // 130 acks whose content type is 255 characters of 中 (765 bytes; the server refuses it, as it
  // refuses any content type but printable ASCII): counted as characters they fit half a 96 KiB
  // message, and in bytes they are more than the whole, which would end the Work stream.
  const client = SeppClient.connect(t.address, { maxMessageBytes: 96 * 1024 });
  const count = 130;
  try {
    await client.enqueueBatch(
      Array.from({ length: count }, () => ({ queue: 'typed', type: 't', maxAttempts: 1 })),
    );
    const allStarted = deferred();
    let started = 0;
    const quiet = () => {};
    const worker = client.worker({
      queues: ['typed'],
      logger: { info: quiet, warn: quiet, error: quiet },
      concurrency: count,
      handlers: {
        t: async () => {
          if (++started === count) allStarted.resolve();
          await allStarted.promise;
          return new JobResult(Buffer.alloc(0), '中'.repeat(255));
        },
      },
    });
    const errors: SeppError[] = [];
    worker.on('error', (error: SeppError) => errors.push(error));
    const failed: string[] = [];
    worker.on('failed', (_job, error: Error) => {
      failed.push(error.message);
    });
    await until(() => failed.length === count, 'every attempt failed for its content type');
    assert.match(failed[0] ?? '', /result_content_type must be 1–255 printable ASCII characters/);
    await worker.close();
    await worker.wait();
    assert.deepEqual(errors, [], 'the Work stream was not refused');
  } finally {
    await client.close();
  }
});

test('a batch refused over limits.max_batch_jobs lowered by a reload is cut by the new bound, once', async () => {
  const clients = [SeppClient.connect(t.address), SeppClient.connect(t.address, { transport: 'unary' })];
  try {
    for (const client of clients) await client.enqueue('bounds', 't'); // Each learns the bound: 1000.
    t.writeConfig(toml.replace('[limits]\n', '[limits]\nmax_batch_jobs = 4\n'));
    const report = await clients[0]!.reloadConfig();
    assert.deepEqual([report.applied, report.problems], [true, []]);
    const jobs = Array.from({ length: 10 }, (_, i) => ({ queue: 'bounds', type: 't', payload: `${i}` }));
    for (const client of clients) {
      const before = client.stats().batches;
      // A batch cut at 1000 (one message of 10), refused, asked again and sent as 4 + 4 + 2.
      const outcomes = await client.enqueueBatch(jobs);
      assert.deepEqual(
        outcomes.map((o) => (o.ok ? 'ok' : o.message)),
        jobs.map(() => 'ok'),
      );
      assert.equal(client.stats().batches, before + 4, 'refused once, then three batches');
      const payloads = await Promise.all(
        outcomes.map(async (o) => (o.ok ? (await client.getJob(o.id)).payload.toString() : '')),
      );
      assert.deepEqual(
        payloads,
        jobs.map((j) => j.payload),
      );
      // Enqueues of one turn are cut by the new bound from the start.
      await Promise.all(jobs.map((j) => client.enqueue(j.queue, j.type, j.payload)));
      assert.equal(client.stats().batches, before + 7);
      // Never twice: an atomic batch over the bound is refused once, and the refusal is the answer.
      const atomic = await client.enqueueAtomic(jobs).then(
        () => assert.fail('an atomic batch over max_batch_jobs stored'),
        (e: unknown) => e,
      );
      assert.ok(atomic instanceof SeppError);
      assert.deepEqual([atomic.grpcCode, atomic.retry], [status.RESOURCE_EXHAUSTED, 'never']);
      assert.match(atomic.message, /the limit is 4 \(limits\.max_batch_jobs\)/);
      assert.equal(client.stats().batches, before + 8, 'sent once');
    }
  } finally {
    for (const client of clients) await client.close();
  }
});
