/**
 * Debounce by key (issue 35) end to end: the TypeScript SDK over gRPC to a real server on
 * an injected clock. Enqueues with one key while its job waits are absorbed by that job
 * (the answer says so and names it); the Worker runs it once, with the last payload, when
 * the quiet period or the cap has passed; an enqueue after the lease starts a new job.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { JobRejectedError, SeppClient, type Worker } from '@sepp-queue/client';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deferred } from './helpers.ts';

describe('debounce through the TypeScript SDK over gRPC', () => {
  let t: TestServer;
  let client: SeppClient;
  const clock = new FakeClock(Date.UTC(2026, 3, 1));
  const workers: Worker[] = [];

  before(async () => {
    t = await startTestServer({ clock });
    client = SeppClient.connect(t.address);
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
    await client.close();
    await t.dispose();
  });

  test('a burst becomes one job, run once with the last payload; after its lease a new job starts', async () => {
    const queue = 'debounce-e2e';
    const options = { debounceKey: 'doc-7', debounceMs: 2000, debounceMaxMs: 5000 };
    const first = await client.enqueueJson(queue, 'reindex', { v: 1 }, options);
    assert.deepEqual(first, { id: first.id, deduplicated: false, debounced: false });
    const t0 = clock.nowMs();
    for (const v of [2, 3]) {
      clock.advance(1000);
      const next = await client.enqueueJson(queue, 'reindex', { v }, options);
      assert.deepEqual(next, { id: first.id, deduplicated: false, debounced: true });
    }
    const waiting = await client.getJob(first.id);
    assert.equal(waiting.state, 'scheduled');
    assert.equal(waiting.runAt.getTime(), t0 + 4000);
    assert.equal(waiting.debounceKey, 'doc-7');
    assert.equal(waiting.debounceUntil?.getTime(), t0 + 5000);

    const ran: unknown[] = [];
    const done = deferred();
    const worker = client.worker({
      clock,
      queues: [queue],
      handlers: {
        reindex: async (job) => {
          ran.push(job.json());
          done.resolve();
        },
      },
    });
    workers.push(worker);
    worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
    clock.advance(2000);
    await done.promise;
    assert.deepEqual(ran, [{ v: 3 }], 'once, with the last update');
    const after = await client.enqueueJson(queue, 'reindex', { v: 4 }, options);
    assert.notEqual(after.id, first.id);
    assert.equal(after.debounced, false);
    // The batch answer says the same per job.
    const batch = await client.enqueueBatch([
      { queue, type: 'reindex', json: { v: 5 }, ...options },
      { queue, type: 'reindex', json: { v: 6 } },
    ]);
    assert.deepEqual(
      batch.map((r) => (r.ok ? [r.id === after.id, r.debounced] : r.reason)),
      [
        [true, true],
        [false, false],
      ],
    );
  });

  test('a debounce key with an idempotency key is refused (invalid_job), naming both', async () => {
    await assert.rejects(
      client.enqueue('debounce-e2e', 't', 'x', { debounceKey: 'k', idempotencyKey: 'i' }),
      (error: unknown) => {
        assert.ok(error instanceof JobRejectedError);
        assert.equal(error.rejections[0]?.reason, 'invalid_job');
        assert.match(error.message, /debounce_key cannot have an idempotency_key/);
        return true;
      },
    );
  });
});
