/**
 * SeppClient against the real server: enqueue results and typed errors on
 * both transports (the Produce stream and unary EnqueueBatch give the same
 * answers), coalescing of enqueues into one message, and retries.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type Enqueued,
  JobRejectedError,
  SeppClient,
  SeppError,
} from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const toml = `
[queues.small]
max_payload_bytes = 8
[queues.limited]
max_depth = 2
[queues.typed]
allowed_types = ["send"]
`;

for (const transport of ['stream', 'unary'] as const) {
  describe(`SeppClient (${transport})`, () => {
    let t: TestServer;
    let client: SeppClient;
    const clock = new FakeClock(Date.UTC(2026, 3, 1));
    let engineBatches = 0;

    before(async () => {
      t = await startTestServer({ clock, toml });
      // Count what reaches the engine: one call per Produce message or EnqueueBatch call.
      const { engine } = t.server;
      const enqueueBatch = engine.enqueueBatch.bind(engine);
      engine.enqueueBatch = (jobs) => {
        engineBatches++;
        return enqueueBatch(jobs);
      };
      client = SeppClient.connect(t.address, { transport });
    });
    after(async () => {
      await client.close();
      await t.dispose();
    });

    test('enqueues made in one tick travel as one message and come back in order', async () => {
      const before = client.stats();
      const engineBefore = engineBatches;
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => client.enqueueJson('coalesce', 'n', { i })),
      );
      const after = client.stats();
      assert.equal(after.batches - before.batches, 1, 'one batch for 200 enqueues');
      assert.equal(after.enqueuedJobs - before.enqueuedJobs, 200);
      assert.equal(engineBatches - engineBefore, 1, 'the engine saw one batch');
      if (transport === 'stream') assert.equal(after.produceMessages - before.produceMessages, 1);
      else assert.equal(after.produceMessages, 0);
      assert.equal(new Set(results.map((r) => r.id)).size, 200);
      // Ids are time-ordered, so their order is the order of the calls.
      assert.deepEqual(
        results.map((r) => r.id),
        [...results.map((r) => r.id)].sort(),
      );
      const jobs = await client.reserve({ queues: ['coalesce'], maxJobs: 200 });
      assert.deepEqual(
        jobs.map((j) => j.json<{ i: number }>().i),
        Array.from({ length: 200 }, (_, i) => i),
      );
    });

    test('batches above max_batch_jobs are split', async () => {
      const before = client.stats();
      await Promise.all(Array.from({ length: 2500 }, () => client.enqueue('split', 't')));
      assert.equal(client.stats().batches - before.batches, 3);
    });

    test('enqueue options reach the job', async () => {
      const runAt = new Date(clock.nowMs() + 60_000);
      const { id, deduplicated } = await client.enqueue('opts', 'send', Buffer.from([0, 1, 2]), {
        contentType: 'application/x-bytes',
        priority: 7,
        runAt,
        maxAttempts: 3,
        idempotencyKey: 'key-1',
        metadata: { tenant: 'acme' },
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      });
      assert.equal(deduplicated, false);
      const job = await client.getJob(id);
      assert.equal(job.state, 'scheduled');
      assert.equal(job.queue, 'opts');
      assert.equal(job.type, 'send');
      assert.deepEqual(job.payload, Buffer.from([0, 1, 2]));
      assert.equal(job.contentType, 'application/x-bytes');
      assert.equal(job.priority, 7);
      assert.equal(job.runAt.getTime(), runAt.getTime());
      assert.equal(job.maxAttempts, 3);
      assert.equal(job.idempotencyKey, 'key-1');
      assert.deepEqual(job.metadata, { tenant: 'acme' });
      assert.equal(job.traceparent, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');

      const again = await client.enqueue('opts', 'send', 'other', { idempotencyKey: 'key-1' });
      assert.deepEqual(again, { id, deduplicated: true, debounced: false });

      const delayed = await client.enqueue('opts', 'send', 'text', { delayMs: 5000 });
      const d = await client.getJob(delayed.id);
      assert.equal(d.runAt.getTime(), clock.nowMs() + 5000);
      assert.equal(d.contentType, 'text/plain; charset=utf-8');
      assert.equal(d.text(), 'text');
      await assert.rejects(
        client.enqueue('opts', 'send', 'x', { runAt: 1, delayMs: 1 }),
        (e) => e instanceof SeppError && e.code === 'invalid_argument',
      );
    });

    test('a refused job throws JobRejectedError with the reason and the status', async () => {
      const cases: [Promise<Enqueued>, string, number][] = [
        [client.enqueue('small', 't', 'more than eight bytes'), 'payload_too_large', 3],
        [client.enqueue('typed', 'other'), 'job_type_not_allowed', 9],
        [client.enqueue('bad name!', 't'), 'invalid_name', 3],
        [client.enqueue('q', 't', '', { priority: 12 }), 'invalid_job', 3],
      ];
      for (const [promise, reason, grpcCode] of cases) {
        await assert.rejects(promise, (e) => {
          assert.ok(e instanceof JobRejectedError, String(e));
          assert.equal(e.reason, reason);
          assert.equal(e.grpcCode, grpcCode);
          assert.equal(e.rejections.length, 1);
          return true;
        });
      }
      await client.enqueue('limited', 't');
      await client.enqueue('limited', 't');
      await assert.rejects(client.enqueue('limited', 't'), (e) => {
        assert.ok(e instanceof JobRejectedError);
        assert.equal(e.reason, 'queue_full');
        assert.equal(e.code, 'resource_exhausted');
        assert.match(e.message, /max_depth/);
        return true;
      });
    });

    test('enqueueBatch answers each job on its own; enqueueAtomic all or nothing', async () => {
      const outcomes = await client.enqueueBatch([
        { queue: 'batch', type: 't', json: { a: 1 } },
        { queue: 'small', type: 't', payload: 'far too large' },
        { queue: 'batch', type: 't', payload: 'ok' },
      ]);
      assert.equal(outcomes.length, 3);
      assert.equal(outcomes[0]?.ok, true);
      assert.deepEqual(outcomes[1] && !outcomes[1].ok && outcomes[1].reason, 'payload_too_large');
      assert.equal(outcomes[2]?.ok, true);

      const ids = await client.enqueueAtomic([
        { queue: 'atomic', type: 't' },
        { queue: 'atomic', type: 't', json: [1] },
      ]);
      assert.equal(ids.length, 2);
      await assert.rejects(
        client.enqueueAtomic([
          { queue: 'atomic', type: 't' },
          { queue: 'small', type: 't', payload: 'far too large' },
          { queue: 'bad name', type: 't' },
        ]),
        (e) => {
          assert.ok(e instanceof JobRejectedError);
          assert.deepEqual(
            e.rejections.map((r) => [r.index, r.reason]),
            [
              [1, 'payload_too_large'],
              [2, 'invalid_name'],
            ],
          );
          return true;
        },
      );
      const atomic = (await client.listQueues()).find((q) => q.name === 'atomic');
      assert.equal(atomic?.counts.ready, 2, 'nothing of the refused batch was stored');
    });

    test('queues, pause and resume, dead letters and server info', async () => {
      const { id } = await client.enqueue('ops', 't', 'x', { maxAttempts: 1 });
      await client.pauseQueue('ops');
      assert.deepEqual(await client.reserve({ queues: ['ops'] }), []);
      assert.equal((await client.listQueues()).find((q) => q.name === 'ops')?.paused, true);
      await client.resumeQueue('ops');
      const [job] = await client.reserve({ queues: ['ops'] });
      assert.equal(job?.id, id);
      const nack = await client.nack(job!, { error: new Error('broken') });
      assert.deepEqual(nack, { state: 'dead', runAt: null });
      const page = await client.listDeadLetters('ops');
      assert.deepEqual(
        page.jobs.map((j) => [j.id, j.deadReason, j.lastError]),
        [[id, 'attempts_exhausted', 'broken']],
      );
      assert.equal(page.nextPageToken, null);
      assert.equal(await client.requeueDeadLetters('ops', [id]), 1);
      assert.equal((await client.getJob(id)).state, 'ready');
      assert.deepEqual(await client.cancelJob(id), { previousState: 'ready', state: 'cancelled' });
      const cancelled = await client.getJob(id);
      assert.equal(cancelled.state, 'cancelled');
      assert.equal(cancelled.cancelledBy, 'anonymous');
      assert.ok(cancelled.cancelledAt instanceof Date);
      await assert.rejects(
        client.getJob('0190a4c2-0000-7000-8000-000000000000'),
        (e) => e instanceof SeppError && e.code === 'not_found' && e.grpcCode === 5,
      );

      const info = await client.getServerInfo();
      assert.equal(info.durability, 'full');
      assert.equal(info.limits.maxBatchJobs, 1000);
      assert.equal(info.limits.maxResultBytes, 64 * 1024);
      assert.equal(info.limits.eventBacklogEvents, 50_000);
      assert.deepEqual(
        [info.limits.maxConnections, info.limits.maxStreamsPerConnection],
        [4096, 1000],
        "the gRPC port's connection limits",
      );
      assert.deepEqual([info.limits.handshakeTimeoutMs, info.limits.idleTimeoutMs], [10_000, 300_000]);
      assert.equal(info.serverTime.getTime(), clock.nowMs());
      assert.equal(info.queueDefaults.maxAttempts, 5);
      // The PostgreSQL store's bounds (tests/store/postgres-serve.test.ts) are 0 for SQLite.
      const { store } = info;
      assert.deepEqual(
        [
          store.kind,
          store.poolSize,
          store.maxWaitingReads,
          store.maxWaitingReadsPerKey,
          store.statementTimeoutMs,
        ],
        ['sqlite', 0, 0, 0, 0],
      );
    });
  });
}

describe('SeppClient failures and retries', () => {
  test("with retry, a keyless enqueue gets the SDK's key and is retried after UNAVAILABLE; without, sent once", async () => {
    const t = await startTestServer();
    const address = t.address;
    await t.dispose(); // Nothing listens there now: every call fails with UNAVAILABLE.
    for (const transport of ['stream', 'unary'] as const) {
      const once = SeppClient.connect(address, { transport });
      await assert.rejects(once.enqueue('q', 't'), (e) => e instanceof SeppError && e.code === 'unavailable');
      assert.equal(once.stats().batches, 1, `${transport}: without retry, an enqueue went out once`);
      await once.close();
      const client = SeppClient.connect(address, {
        transport,
        retry: { unavailable: true, maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 2 },
      });
      await assert.rejects(
        client.enqueue('q', 't'),
        (e) => e instanceof SeppError && e.code === 'unavailable',
      );
      assert.equal(client.stats().batches, 4, `${transport}: a keyless enqueue was tried maxAttempts times`);
      await assert.rejects(
        client.enqueue('q', 't', 'x', { idempotencyKey: 'k' }),
        (e) => e instanceof SeppError && e.code === 'unavailable',
      );
      assert.equal(
        client.stats().batches,
        4 + 4,
        `${transport}: a keyed enqueue was tried maxAttempts times`,
      );
      await client.close();
    }
  });

  test('without retry, connection failures surface as UNAVAILABLE', async () => {
    const t = await startTestServer();
    const address = t.address;
    await t.dispose();
    const client = SeppClient.connect(address);
    await assert.rejects(client.listQueues(), (e) => e instanceof SeppError && e.code === 'unavailable');
    await assert.rejects(client.ready(200), /cannot reach sepp/);
    await client.close();
    await assert.rejects(client.enqueue('q', 't'), /closed/);
  });

  test('without retry, enqueues in flight when the server goes away fail with UNAVAILABLE and are not resent', async () => {
    const t = await startTestServer();
    const client = SeppClient.connect(t.address);
    await client.enqueue('q', 't'); // The Produce stream is open.
    const inFlight = client.enqueue('q', 't');
    const stopping = t.server.shutdown();
    await assert.rejects(inFlight, (e) => e instanceof SeppError && e.code === 'unavailable');
    await stopping;
    assert.equal(client.stats().enqueuedJobs, 2, 'the keyless enqueue was not sent again');
    await client.close();
    await t.dispose();
  });

  test('API keys travel with every call, including the streams', async () => {
    const t = await startTestServer({
      toml: `
[[grpc.api_keys]]
name = "svc"
role = "admin"
key = "sdk-test-key-0123456789"
`,
    });
    const good = SeppClient.connect(t.address, { apiKey: 'sdk-test-key-0123456789' });
    const bad = SeppClient.connect(t.address, { apiKey: 'wrong-key-0123456789' });
    try {
      const { id } = await good.enqueue('auth', 't');
      assert.equal((await good.getJob(id)).id, id);
      await assert.rejects(
        bad.enqueue('auth', 't'),
        (e) => e instanceof SeppError && e.code === 'unauthenticated',
      );
      await assert.rejects(bad.listQueues(), (e) => e instanceof SeppError && e.grpcCode === 16);
    } finally {
      await good.close();
      await bad.close();
      await t.dispose();
    }
  });
});
