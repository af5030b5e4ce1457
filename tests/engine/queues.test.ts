/**
 * Queue-level reads and cancel: listQueues (counts from the maintained
 * counters, oldest ready age, waiting workers, effective settings), getJob,
 * and cancel in every state.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expectCode, job, rowCount, until, withEngine, withQueues } from '../helpers/engine.ts';

test('listQueues: counts per state, from the counters, for every queue', async () => {
  const options = withQueues({ keep: { completedRetentionMs: 60_000 }, declared: {} });
  await withEngine({ options }, async ({ engine }) => {
    await engine.enqueueBatch([
      job('keep'),
      job('keep'),
      job('keep'),
      job('keep', { delayMs: 1000 }),
      job('keep', { maxAttempts: 1 }),
      job('plain'),
    ]);
    const leased = await engine.reserve({ queues: ['keep'], maxJobs: 3 });
    assert.equal(leased.length, 3);
    const [done, dies] = leased;
    assert.ok(done && dies);
    await engine.ack({ jobId: done.id, attempt: 1 });
    await engine.nack({ jobId: dies.id, attempt: 1, error: 'x', directive: { kind: 'dead_letter' } });
    const queues = await engine.listQueues();
    assert.deepEqual(
      queues.map((q) => q.name),
      ['declared', 'keep', 'plain'],
      'sorted by name; declared queues are listed before first use',
    );
    assert.deepEqual(queues[1]?.counts, {
      scheduled: 1,
      ready: 1,
      leased: 1,
      completed: 1,
      dead: 1,
      cancelled: 0,
      waiting: 0,
    });
    assert.deepEqual(queues[2]?.counts, {
      scheduled: 0,
      ready: 1,
      leased: 0,
      completed: 0,
      dead: 0,
      cancelled: 0,
      waiting: 0,
    });
    assert.deepEqual(queues[0]?.counts, {
      scheduled: 0,
      ready: 0,
      leased: 0,
      completed: 0,
      dead: 0,
      cancelled: 0,
      waiting: 0,
    });
    assert.equal(queues[1]?.settings.completedRetentionMs, 60_000);
    assert.equal(queues[2]?.settings.completedRetentionMs, 0);
    assert.equal(queues[1]?.paused, false);
  });
});

test('listQueues reads the maintained counters; counterMismatches finds drift', async () => {
  await withEngine({}, async ({ engine, db }) => {
    await engine.enqueueBatch([job('q'), job('q')]);
    assert.deepEqual(await engine.counterMismatches(), []);
    db.prepare("UPDATE queue_counts SET jobs = 99 WHERE queue = 'q' AND state = 'ready'").run();
    assert.equal((await engine.listQueues())[0]?.counts.ready, 99, 'no COUNT(*) behind listQueues');
    assert.deepEqual(await engine.counterMismatches(), ['q/ready: counter 99, rows 2']);
    db.prepare("UPDATE queue_counts SET jobs = 2 WHERE queue = 'q' AND state = 'ready'").run();
    assert.deepEqual(await engine.counterMismatches(), []);
  });
});

test('listQueues: oldest ready age across priorities, null when nothing is ready', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    await engine.pauseQueue('q', undefined, { allowMissing: true });
    const age = async () => (await engine.listQueues()).find((q) => q.name === 'q')?.oldestReadyAgeMs;
    assert.equal(await age(), null);
    const { jobId: old } = await engine.enqueue(job('q', { priority: 0 }));
    clock.advance(2000);
    await engine.enqueue(job('q', { priority: 9 }));
    await engine.enqueue(job('q', { delayMs: 100 }));
    clock.advance(3000);
    assert.equal(await age(), 5000);
    await engine.cancel(old);
    assert.equal(await age(), 3000);
    await engine.runMaintenance(); // the delayed job is now ready; it was due 2900 ms ago
    assert.equal(await age(), 3000);
    await engine.resumeQueue('q');
    await engine.reserve({ queues: ['q'], maxJobs: 10 });
    assert.equal(await age(), null);
  });
});

test('listQueues: waiting workers per queue', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    await engine.enqueue(job('a'));
    await engine.cancel((await engine.enqueue(job('b'))).jobId);
    await engine.reserve({ queues: ['a'] });
    const w1 = engine.reserve({ queues: ['a', 'b'], waitMs: 1000 });
    const w2 = engine.reserve({ queues: ['a'], waitMs: 1000 });
    await until(engine, () => engine.waitingReserves === 2);
    const waiting = async () =>
      Object.fromEntries((await engine.listQueues()).map((q) => [q.name, q.waitingWorkers]));
    assert.deepEqual(await waiting(), { a: 2, b: 1 });
    clock.advance(1000);
    assert.deepEqual([await w1, await w2], [[], []]);
    assert.deepEqual(await waiting(), { a: 0, b: 0 });
  });
});

test('getJob of an unknown id is not_found', async () => {
  await withEngine({}, async ({ engine }) => {
    const error = await expectCode(engine.getJob('01900000-0000-7000-8000-000000000000'), 'not_found');
    assert.match(error.message, /does not exist/);
  });
});

test('cancel: waiting jobs become cancelled at once, a leased one on request; dead and completed are refused', async () => {
  const options = withQueues({ keep: { completedRetentionMs: 60_000 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId: ready } = await engine.enqueue(job('q'));
    const { jobId: scheduled } = await engine.enqueue(job('q', { delayMs: 5000 }));
    const { jobId: dead } = await engine.enqueue(job('d'));
    const [toKill] = await engine.reserve({ queues: ['d'] });
    await engine.nack({
      jobId: dead,
      attempt: toKill?.attempt ?? 0,
      error: 'x',
      directive: { kind: 'dead_letter' },
    });
    const { jobId: completed } = await engine.enqueue(job('keep'));
    await engine.reserve({ queues: ['keep'] });
    await engine.ack({ jobId: completed, attempt: 1 });
    const { jobId: leased } = await engine.enqueue(job('l'));
    await engine.reserve({ queues: ['l'] });

    const by = { actor: 'ops', action: 'job.cancel', target: 'job:x' };
    assert.deepEqual(await engine.cancel(ready, by), { previousState: 'ready', state: 'cancelled' });
    assert.deepEqual(await engine.cancel(scheduled, by), { previousState: 'scheduled', state: 'cancelled' });
    assert.deepEqual(await engine.cancel(leased, by), { previousState: 'leased', state: 'leased' });
    for (const id of [ready, scheduled]) {
      const info = await engine.getJob(id);
      assert.equal(info.state, 'cancelled');
      assert.equal(info.cancelledBy, 'ops');
      assert.equal(info.cancelledAtMs, clock.nowMs());
    }
    const requested = await engine.getJob(leased);
    assert.equal(requested.state, 'leased', 'a leased job stays leased until its worker stops');
    assert.equal(requested.cancelledBy, 'ops');

    const deadError = await expectCode(engine.cancel(dead), 'failed_precondition');
    assert.match(deadError.message, /dead letter.*DeleteDeadLetters/);
    assert.match((await expectCode(engine.cancel(completed), 'failed_precondition')).message, /completed/);
    // Cancelling again changes nothing, and is no error.
    assert.deepEqual(await engine.cancel(ready), { previousState: 'cancelled', state: 'cancelled' });
    assert.equal((await engine.getJob(ready)).cancelledBy, 'ops');
    await expectCode(engine.cancel('01900000-0000-7000-8000-000000000000'), 'not_found');
    // A cancelled scheduled job is not promoted later, and counts as cancelled.
    clock.advance(10_000);
    await engine.runMaintenance();
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
    assert.equal((await engine.listQueues()).find((q) => q.name === 'q')?.counts.cancelled, 2);
  });
});

test('deleteQueue: an empty queue goes and stays gone; with jobs, declared or unknown it is refused', async () => {
  await withEngine({ options: withQueues({ declared: {} }) }, async (t) => {
    const { engine, db } = t;
    const { jobId } = await engine.enqueue(job('typo', { idempotencyKey: 'k' }));
    const refused = await expectCode(engine.deleteQueue('typo'), 'failed_precondition');
    assert.match(refused.message, /^queue typo holds 1 job \(ready 1\); only an empty queue can be deleted/);
    // Done with it: completed without retention, the job goes; its key stays for the dedup window.
    // (A cancel would keep the job as cancelled, and a cancel or purge would release the key.)
    const [leased] = await engine.reserve({ queues: ['typo'] });
    await engine.ack({ jobId, attempt: leased!.attempt });
    await engine.deleteQueue('typo', { actor: 'alice', action: 'queue.delete', target: 'queue:typo' });
    assert.deepEqual(
      (await engine.listQueues()).map((q) => q.name),
      ['declared'],
    );
    assert.equal(rowCount(db, 'queues'), 1);
    const counters = db.prepare("SELECT count(*) AS n FROM queue_counts WHERE queue = 'typo'").get() as {
      n: number;
    };
    assert.equal(counters.n, 0);
    assert.equal(rowCount(db, 'idempotency_keys'), 1, 'its idempotency keys stay for their window');
    assert.equal((await engine.listAudit({})).items[0]?.action, 'queue.delete');
    await expectCode(engine.deleteQueue('typo'), 'not_found');
    await expectCode(engine.deleteQueue('never'), 'not_found');
    await expectCode(engine.deleteQueue('declared'), 'failed_precondition');
    await expectCode(engine.deleteQueue('bad name'), 'invalid_argument');
    // A producer's retry is still recognised: the key outlived the queue (and creates nothing).
    const again = await engine.enqueue(job('typo', { idempotencyKey: 'k' }));
    assert.deepEqual([again.jobId, again.deduplicated], [jobId, true]);
    await engine.pauseQueue('emptied', undefined, { allowMissing: true });
    await engine.deleteQueue('emptied');
    const reopened = await t.reopen();
    assert.deepEqual(
      (await reopened.engine.listQueues()).map((q) => q.name),
      ['declared'],
    );
    return reopened;
  });
});

test('deleteQueue and an enqueue in the same commit: the queue ends as the later one says', async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.pauseQueue('a', undefined, { allowMissing: true });
    await engine.pauseQueue('b', undefined, { allowMissing: true });
    // Submitted in one turn, so one batch, in this order.
    const [, enqueued] = await Promise.all([engine.deleteQueue('a'), engine.enqueue(job('a'))]);
    const a = (await engine.listQueues()).find((q) => q.name === 'a');
    assert.equal(a?.paused, false, 'created anew, not the deleted paused queue');
    assert.equal(a?.counts.ready, 1);
    assert.equal((await engine.getJob(enqueued.jobId)).queue, 'a');
    const [added, deleted] = await Promise.allSettled([engine.enqueue(job('b')), engine.deleteQueue('b')]);
    assert.equal(added.status, 'fulfilled');
    assert.equal(deleted.status, 'rejected');
    assert.equal((await engine.listQueues()).find((q) => q.name === 'b')?.counts.ready, 1);
    // Workers are served from the re-created queue.
    assert.equal((await engine.reserve({ queues: ['a', 'b'], maxJobs: 5 })).length, 1, 'b is still paused');
  });
});
