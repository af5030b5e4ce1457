/**
 * Debounce by key, with a maximum wait (issue 35): an enqueue with a debounce key is
 * absorbed by the queue's job with that key that still waits and was never leased — it
 * takes the new payload and metadata, and its run time moves to now + debounce_ms, never
 * past its first enqueue + debounce_max_ms. Once leased, the next enqueue starts a new job.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JobEvent } from '../../src/engine/types.ts';
import { barrier, bytes, job, rowCount, withEngine, withQueues } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

const text = (payload: Uint8Array) => Buffer.from(payload).toString();

test('debounce: a later enqueue replaces the waiting job and pushes its run time back', async () => {
  const events: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (e) => events.push(e) } }, async ({ engine, clock, db }) => {
    const first = await engine.enqueue(
      job('q', { payload: bytes('v1'), debounceKey: 'doc-7', debounceMs: 1000, metadata: { n: '1' } }),
    );
    assert.equal(first.debounced, undefined, 'a new job');
    const t0 = clock.nowMs();
    let info = await engine.getJob(first.jobId);
    assert.equal(info.state, 'scheduled');
    assert.equal(info.runAtMs, t0 + 1000);
    assert.equal(info.debounceKey, 'doc-7');
    assert.equal(info.debounceUntilMs, null, 'no cap');

    clock.advance(600);
    const second = await engine.enqueue(
      job('q', {
        payload: bytes('v2'),
        contentType: 'text/plain',
        debounceKey: 'doc-7',
        debounceMs: 1000,
        metadata: { n: '2' },
      }),
    );
    assert.deepEqual(second, { ok: true, jobId: first.jobId, deduplicated: false, debounced: true });
    info = await engine.getJob(first.jobId);
    assert.equal(text(info.payload), 'v2');
    assert.equal(info.contentType, 'text/plain');
    assert.deepEqual(info.metadata, { n: '2' });
    assert.equal(info.runAtMs, t0 + 1600, 'now + debounce_ms');
    assert.equal(rowCount(db, 'jobs'), 1);

    // Not due at the first run time any more.
    clock.advance(500);
    await barrier(engine);
    assert.deepEqual(await engine.reserve({ queues: ['q'], leaseMs: 30_000 }), []);
    clock.advance(500);
    await barrier(engine);
    const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
    assert.equal(leased?.id, first.jobId);
    assert.equal(text(leased!.payload), 'v2');
    assert.ok(events.some((e) => e.kind === 'debounced' && e.queue === 'q' && e.count === 1));
    assert.ok(events.some((e) => e.kind === 'enqueued' && e.queue === 'q' && e.count === 1));
  });
});

test('debounce: debounce_max_ms caps how far a steady stream can push the job', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const options = { debounceKey: 'k', debounceMs: 1000, debounceMaxMs: 3000 };
    const { jobId } = await engine.enqueue(job('q', { payload: bytes('0'), ...options }));
    const t0 = clock.nowMs();
    assert.equal((await engine.getJob(jobId)).debounceUntilMs, t0 + 3000);
    // An update every 500 ms: without the cap the job would never be due.
    for (let i = 1; i <= 8; i++) {
      clock.advance(500);
      const answer = await engine.enqueue(job('q', { payload: bytes(String(i)), ...options }));
      if (clock.nowMs() < t0 + 3000) {
        assert.equal(answer.jobId, jobId, `update ${i} is absorbed`);
        const info = await engine.getJob(jobId);
        assert.equal(info.runAtMs, Math.min(clock.nowMs() + 1000, t0 + 3000));
      }
      await barrier(engine);
      const leased = await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
      if (leased.length > 0) {
        assert.equal(clock.nowMs(), t0 + 3000, 'due exactly at the cap');
        assert.equal(leased[0]!.id, jobId);
        assert.equal(text(leased[0]!.payload), '6', 'with the last update before it was leased');
        break;
      }
    }
    assert.equal((await engine.getJob(jobId)).state, 'leased');
  });
});

test('debounce: an update after the cap passed keeps the job ready (absorbed, not pushed)', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const options = { debounceKey: 'k', debounceMs: 1000, debounceMaxMs: 1000 };
    const { jobId } = await engine.enqueue(job('q', { payload: bytes('a'), ...options }));
    clock.advance(5000);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'ready');
    const answer = await engine.enqueue(job('q', { payload: bytes('b'), ...options }));
    assert.equal(answer.jobId, jobId);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'ready');
    assert.equal(text(info.payload), 'b');
    const stats = (await engine.listQueues()).find((q) => q.name === 'q');
    assert.equal(stats?.counts.ready, 1);
  });
});

test('debounce: a ready job that is pushed back becomes scheduled again (counts follow)', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { debounceKey: 'k', debounceMs: 100 }));
    clock.advance(200);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'ready');
    await engine.enqueue(job('q', { debounceKey: 'k', debounceMs: 100 }));
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'scheduled');
    assert.equal(info.runAtMs, clock.nowMs() + 100);
    // withEngine checks the counters against the rows at the end.
  });
});

test('debounce: once leased, the next enqueue starts a new debounced job (also after a retry)', async () => {
  await withEngine(
    { options: withQueues({ q: { backoff: { baseMs: 0, factor: 1, capMs: 0, jitter: 0 } } }) },
    async ({ engine, clock }) => {
      const options = { debounceKey: 'k', debounceMs: 0 };
      const { jobId: firstId } = await engine.enqueue(job('q', options));
      const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 30_000 });
      assert.equal(leased?.id, firstId);
      const second = await engine.enqueue(job('q', { payload: bytes('new'), ...options }));
      assert.notEqual(second.jobId, firstId);
      assert.equal(second.debounced, undefined);
      // The first job fails and waits for its retry: it never absorbs again.
      await engine.nack({ jobId: firstId, attempt: 1, error: 'boom' });
      assert.equal((await engine.getJob(firstId)).state, 'ready');
      clock.advance(10);
      const third = await engine.enqueue(job('q', { payload: bytes('newer'), ...options }));
      assert.equal(third.jobId, second.jobId, 'the never-leased job absorbs it');
      assert.equal(text((await engine.getJob(firstId)).payload), 'x', 'the retried job keeps its payload');
    },
  );
});

test('debounce: keys are per queue, jobs without a key are never absorbed, and one batch debounces in order', async () => {
  await withEngine({}, async ({ engine }) => {
    const results = await engine.enqueueBatch([
      job('a', { payload: bytes('1'), debounceKey: 'k', debounceMs: 50 }),
      job('b', { payload: bytes('2'), debounceKey: 'k', debounceMs: 50 }),
      job('a', { payload: bytes('3'), debounceKey: 'k', debounceMs: 50 }),
      job('a', { payload: bytes('4') }),
    ]);
    const ids = results.map((r) => (r.ok ? r.jobId : r.reason));
    assert.equal(ids[2], ids[0], 'absorbed by the first job of this batch');
    assert.notEqual(ids[1], ids[0], 'another queue');
    assert.notEqual(ids[3], ids[0], 'no key');
    assert.equal(text((await engine.getJob(ids[0]!)).payload), '3');
  });
});

test('debounce: a cancelled job absorbs nothing', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q', { debounceKey: 'k', debounceMs: 1000 }));
    await engine.cancel(jobId);
    const next = await engine.enqueue(job('q', { debounceKey: 'k', debounceMs: 1000 }));
    assert.notEqual(next.jobId, jobId);
  });
});

test('debounce: invalid combinations and values are refused with invalid_job', async () => {
  await withEngine({}, async ({ engine }) => {
    const cases: [Parameters<typeof job>[1], RegExp][] = [
      [{ debounceMs: 10 }, /need a debounce_key/],
      [{ debounceKey: 'k', debounceMs: -1 }, /debounce_ms is -1/],
      [{ debounceKey: 'k', debounceMs: 100, debounceMaxMs: 50 }, /debounce_max_ms is 50/],
      [{ debounceKey: 'k', delayMs: 5 }, /cannot have run_at_ms or delay_ms/],
      [{ debounceKey: 'k', ttlMs: 5000 }, /cannot have expires_at_ms or ttl_ms/],
      [{ debounceKey: 'k', idempotencyKey: 'i' }, /cannot have an idempotency_key/],
      [{ debounceKey: 'x'.repeat(300) }, /debounce_key is 300 bytes/],
    ];
    const results = await engine.enqueueBatch(cases.map(([extra]) => job('q', extra)));
    for (const [i, result] of results.entries()) {
      assert.equal(result.ok, false, `case ${i}`);
      if (!result.ok) {
        assert.equal(result.reason, 'invalid_job');
        assert.match(result.message, cases[i]![1]);
      }
    }
    const atomic = await engine.enqueueAtomic([job('q', { debounceKey: 'k' })]);
    assert.equal(atomic.committed, false);
    if (!atomic.committed)
      assert.match(atomic.rejections[0]!.message, /not accepted in an all-or-nothing batch/);
  });
});

test('debounce: an absorbed enqueue publishes no lifecycle event (protocol.md, Events)', async () => {
  await withEngine({}, async ({ engine }) => {
    const events = collect(engine);
    const fields = { debounceKey: 'doc-7', debounceMs: 1000 };
    const first = await engine.enqueue(job('q', { payload: bytes('v1'), ...fields }));
    const second = await engine.enqueue(job('q', { payload: bytes('v2'), ...fields }));
    assert.equal(second.debounced, true);
    await barrier(engine);
    assert.deepEqual(events.summary(), [`enqueued:${first.jobId}`]);
  });
});
