/**
 * What an idempotency key means (src/engine/idempotency.ts): taken for the
 * dedup window and for as long as its job is unfinished; released at once by
 * a cancel, a deleted dead letter, a purge or a deleting expiry; kept for the
 * window by a completed job (a repeat reports it) and by a kept dead letter.
 * With uniqueWhileActive: taken exactly while a job holding it is unfinished.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import type { EnqueueRequest } from '../../src/engine/types.ts';
import { barrier, expectCode, job, withEngine, withQueues } from '../helpers/engine.ts';

const DAY_MS = 86_400_000;
const ops = { actor: 'key:ops', action: 'x', target: 'x' };

const keyed = (key: string, extra: Partial<EnqueueRequest> = {}) =>
  job('q', { idempotencyKey: key, ...extra });

async function enqueue(engine: Engine, request: EnqueueRequest): Promise<{ id: string; dup: boolean }> {
  const { jobId, deduplicated } = await engine.enqueue(request);
  return { id: jobId, dup: deduplicated };
}

test('a key stays taken beyond the window while its job has not finished (scheduled far ahead)', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const first = await enqueue(engine, keyed('invoice-9', { delayMs: 3 * DAY_MS }));
    clock.advance(2 * DAY_MS);
    assert.deepEqual(await enqueue(engine, keyed('invoice-9')), { id: first.id, dup: true });
    // Once it ran, the window (long over) no longer holds it.
    clock.advance(DAY_MS);
    await barrier(engine);
    const [leased] = await engine.reserve({ queues: ['q'] });
    await engine.ack({ jobId: first.id, attempt: leased?.attempt ?? 0 });
    assert.equal((await enqueue(engine, keyed('invoice-9'))).dup, false);
  });
});

test('a completed job keeps its key for the window, and a repeat reports the completed job', async () => {
  const options = withQueues({ q: { completedRetentionMs: DAY_MS } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const first = await enqueue(engine, keyed('k'));
    const [leased] = await engine.reserve({ queues: ['q'] });
    await engine.ack({ jobId: first.id, attempt: leased?.attempt ?? 0 });
    const repeat = await enqueue(engine, keyed('k'));
    assert.deepEqual(repeat, { id: first.id, dup: true });
    assert.equal((await engine.getJob(repeat.id)).state, 'completed');
    clock.advance(DAY_MS);
    assert.equal((await enqueue(engine, keyed('k'))).dup, false);
  });
});

test('a cancel releases the key at once: the same work can be enqueued again', async () => {
  await withEngine({}, async ({ engine }) => {
    const waiting = await enqueue(engine, keyed('a'));
    await engine.cancel(waiting.id, ops);
    const again = await enqueue(engine, keyed('a'));
    assert.equal(again.dup, false);
    assert.notEqual(again.id, waiting.id);

    // A running job's key is released with the cancel request, not when its worker stops.
    await engine.reserve({ queues: ['q'] });
    await engine.cancel(again.id, ops);
    assert.equal((await engine.getJob(again.id)).state, 'leased');
    assert.equal((await enqueue(engine, keyed('a'))).dup, false);
  });
});

test('a deleted dead letter releases its key; a kept one keeps it for the window', async () => {
  await withEngine({}, async ({ engine }) => {
    const kept = await enqueue(engine, keyed('kept', { maxAttempts: 1 }));
    const deleted = await enqueue(engine, keyed('deleted', { maxAttempts: 1 }));
    for (const leased of await engine.reserve({ queues: ['q'], maxJobs: 2 })) {
      await engine.nack({ jobId: leased.id, attempt: leased.attempt, error: 'boom' });
    }
    assert.equal((await engine.getJob(kept.id)).state, 'dead');
    assert.equal(await engine.deleteDeadLetters({ queue: 'q', jobIds: [deleted.id] }), 1);
    assert.deepEqual(await enqueue(engine, keyed('kept')), { id: kept.id, dup: true });
    assert.equal((await enqueue(engine, keyed('deleted'))).dup, false);
  });
});

test('a purge releases the keys of the jobs it deletes', async () => {
  await withEngine({}, async ({ engine }) => {
    await enqueue(engine, keyed('p1'));
    await enqueue(engine, keyed('p2', { delayMs: 60_000 }));
    assert.deepEqual(await engine.purgeQueue('q'), { deleted: 2 });
    assert.equal((await enqueue(engine, keyed('p1'))).dup, false);
    assert.equal((await enqueue(engine, keyed('p2'))).dup, false);
  });
});

test('uniqueWhileActive: a duplicate exactly while a job with the key is unfinished, whatever the window', async () => {
  const options = withQueues({ q: { dedupWindowMs: 1000, maxAttempts: 1 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const unique = (extra: Partial<EnqueueRequest> = {}) =>
      keyed('sync-42', { uniqueWhileActive: true, ...extra });
    const first = await enqueue(engine, unique({ delayMs: 10_000 }));
    clock.advance(5000); // far beyond the 1 s window
    assert.deepEqual(await enqueue(engine, unique()), { id: first.id, dup: true });
    clock.advance(5000);
    await barrier(engine);
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.deepEqual(await enqueue(engine, unique()), { id: first.id, dup: true }, 'leased is active');
    await engine.ack({ jobId: first.id, attempt: leased?.attempt ?? 0 });
    // Finished: free at once, although a window-mode key would still be taken (the window began at the last new job).
    const second = await enqueue(engine, unique());
    assert.equal(second.dup, false);
    // Dead: free again.
    const [l2] = await engine.reserve({ queues: ['q'] });
    await engine.nack({ jobId: second.id, attempt: l2?.attempt ?? 0, error: 'x' });
    assert.equal((await engine.getJob(second.id)).state, 'dead');
    const third = await enqueue(engine, unique());
    assert.equal(third.dup, false);
    // Cancelled: free again.
    await engine.cancel(third.id, ops);
    assert.equal((await enqueue(engine, unique())).dup, false);
  });
});

test('uniqueWhileActive in one batch: the second job with the key is a duplicate of the first', async () => {
  const options = withQueues({ q: { dedupWindowMs: 0 } });
  await withEngine({ options }, async ({ engine }) => {
    const request = keyed('b', { uniqueWhileActive: true });
    const results = await engine.enqueueBatch([request, request]);
    assert.ok(results[0]?.ok && results[1]?.ok);
    assert.equal(results[1].jobId, results[0].jobId);
    assert.equal(results[1].deduplicated, true);
    const atomic = await engine.enqueueAtomic([
      keyed('c', { uniqueWhileActive: true }),
      keyed('c', { uniqueWhileActive: true }),
    ]);
    assert.ok(atomic.committed);
    assert.deepEqual(
      atomic.results.map((r) => r.deduplicated),
      [false, true],
    );
  });
});

test('uniqueWhileActive needs a key', async () => {
  await withEngine({}, async ({ engine }) => {
    const error = await expectCode(engine.enqueue(job('q', { uniqueWhileActive: true })), 'invalid_argument');
    assert.match(error.message, /unique_while_active needs an idempotency_key/);
  });
});
