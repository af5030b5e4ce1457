/**
 * Enqueue: single, best-effort batch and atomic batch, with every typed
 * rejection, the batch limits, and what a stored job looks like.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import type { RejectionReason, SeppErrorCode } from '../../src/engine/errors.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import type { EnqueueRequest, EnqueueResult } from '../../src/engine/types.ts';
import { bytes, expectCode, job, rowCount, withEngine, withQueues } from '../helpers/engine.ts';

const DAY_MS = 86_400_000;

/** Declared queues for the rejection tests, with strict_queues on. */
const strict = withQueues(
  {
    known: { maxPayloadBytes: 16 },
    typed: { allowedTypes: ['resize', 'crop'] },
    small: { maxDepth: 2 },
  },
  { strictQueues: true },
);

function metadataOf(entries: number, valueBytes = 1): Record<string, string> {
  return Object.fromEntries(Array.from({ length: entries }, (_, i) => [`k${i}`, 'v'.repeat(valueBytes)]));
}

test('best-effort batch: every rejection reason is reported per job, the valid jobs are stored', async () => {
  await withEngine({ options: strict }, async ({ engine, clock, db }) => {
    const now = clock.nowMs();
    const cases: [EnqueueRequest, RejectionReason | 'ok'][] = [
      [job('known'), 'ok'],
      [job('undeclared'), 'unknown_queue'],
      [job('known', { payload: new Uint8Array(17) }), 'payload_too_large'],
      [job('bad name'), 'invalid_name'],
      [job('known', { type: 'ü' }), 'invalid_name'],
      [job('known', { type: 't'.repeat(129) }), 'invalid_name'],
      [job('known', { type: '' }), 'invalid_name'],
      [job(''), 'invalid_name'],
      [job('known', { metadata: metadataOf(65) }), 'metadata_too_large'],
      [job('known', { metadata: { big: 'x'.repeat(16 * 1024) } }), 'metadata_too_large'],
      [job('known', { delayMs: 366 * DAY_MS }), 'scheduled_too_far'],
      [job('known', { runAtMs: now + 366 * DAY_MS }), 'scheduled_too_far'],
      [job('typed', { type: 'rotate' }), 'job_type_not_allowed'],
      [job('known', { priority: 10 }), 'invalid_job'],
      [job('known', { priority: -1 }), 'invalid_job'],
      [job('known', { priority: 1.5 }), 'invalid_job'],
      [job('known', { runAtMs: now + 1000, delayMs: 1000 }), 'invalid_job'],
      [job('known', { delayMs: -1 }), 'invalid_job'],
      [job('known', { maxAttempts: 0 }), 'invalid_job'],
      [job('known', { maxAttempts: 1001 }), 'invalid_job'],
      [job('known', { maxAttempts: 2.5 }), 'invalid_job'],
      [job('known', { idempotencyKey: 'k'.repeat(257) }), 'invalid_job'],
      [job('known', { contentType: 'bad\ntype' }), 'invalid_job'],
      [job('typed', { type: 'crop' }), 'ok'],
    ];
    const results = await engine.enqueueBatch(cases.map(([request]) => request));
    assert.equal(results.length, cases.length);
    results.forEach((result, i) => {
      const expected = cases[i]![1];
      if (expected === 'ok') {
        assert.ok(result.ok, `job ${i} should be accepted: ${JSON.stringify(result)}`);
      } else {
        assert.ok(!result.ok, `job ${i} should be rejected with ${expected}`);
        assert.equal(result.reason, expected, `job ${i}: ${result.message}`);
        assert.ok(result.message.length > 10, 'the message tells the user what is wrong');
      }
    });
    assert.equal(rowCount(db, 'jobs'), 2);
  });
});

test('limits are inclusive: a job exactly at every limit is accepted', async () => {
  await withEngine({ options: strict }, async ({ engine, clock }) => {
    const results = await engine.enqueueBatch([
      job('known', { payload: new Uint8Array(16) }),
      job('known', { type: 't'.repeat(128) }),
      job('known', { metadata: metadataOf(64) }),
      job('known', { metadata: { k: 'x'.repeat(16 * 1024 - 1) } }),
      job('known', { delayMs: 365 * DAY_MS }),
      job('known', { runAtMs: clock.nowMs() + 365 * DAY_MS }),
      job('known', { idempotencyKey: 'k'.repeat(256) }),
      job('known', { priority: 9, maxAttempts: 1000 }),
      job('known', { priority: 0, maxAttempts: 1 }),
      job('known', { type: 'A-z_0.9:x' }),
    ]);
    for (const [i, result] of results.entries()) assert.ok(result.ok, `job ${i}: ${JSON.stringify(result)}`);
  });
});

test('metadata size counts UTF-8 bytes of keys and values', async () => {
  await withEngine({}, async ({ engine }) => {
    // 'é' is two bytes: 8 KiB characters are 16 KiB, plus the key's byte.
    const [result] = await engine.enqueueBatch([job('q', { metadata: { k: 'é'.repeat(8 * 1024) } })]);
    assert.ok(result && !result.ok);
    assert.equal(result.reason, 'metadata_too_large');
  });
});

test('single enqueue throws the rejection with its code', async () => {
  await withEngine({ options: strict }, async ({ engine }) => {
    const cases: [EnqueueRequest, RejectionReason, SeppErrorCode][] = [
      [job('undeclared'), 'unknown_queue', 'not_found'],
      [job('known', { payload: new Uint8Array(17) }), 'payload_too_large', 'invalid_argument'],
      [job('typed', { type: 'rotate' }), 'job_type_not_allowed', 'failed_precondition'],
      [job('known', { priority: 12 }), 'invalid_job', 'invalid_argument'],
    ];
    for (const [request, reason, code] of cases) {
      const error = await expectCode(engine.enqueue(request), code);
      assert.equal(error.rejection?.reason, reason);
    }
    await engine.enqueue(job('small'));
    await engine.enqueue(job('small'));
    const full = await expectCode(engine.enqueue(job('small')), 'resource_exhausted');
    assert.equal(full.rejection?.reason, 'queue_full');
    assert.match(full.message, /max_depth is 2/);
  });
});

test('max_depth counts unfinished jobs (scheduled, ready, leased) and frees up as jobs finish', async () => {
  await withEngine({ options: strict }, async ({ engine }) => {
    const results = await engine.enqueueBatch([
      job('small'),
      job('small', { delayMs: 60_000 }),
      job('small'),
    ]);
    assert.deepEqual(
      results.map((r) => (r.ok ? 'ok' : r.reason)),
      ['ok', 'ok', 'queue_full'],
    );
    // The refusal counts the two stored before it in the same request, not the 0 committed before it.
    const refused = results[2];
    assert.ok(refused !== undefined && !refused.ok);
    assert.equal(
      refused.message,
      'queue small holds 2 unfinished jobs, 2 of them enqueued just before this one, its max_depth is 2; retry later',
    );
    const [leased] = await engine.reserve({ queues: ['small'] });
    assert.ok(leased);
    await expectCode(engine.enqueue(job('small')), 'resource_exhausted');
    await engine.ack({ jobId: leased.id, attempt: leased.attempt });
    await engine.enqueue(job('small'));
  });
});

test('atomic batch: all or nothing, every failing index reported, nothing stored', async () => {
  await withEngine({ options: strict }, async ({ engine, db }) => {
    await engine.enqueue(job('known'));
    const before = { jobs: rowCount(db, 'jobs'), keys: rowCount(db, 'idempotency_keys') };
    const result = await engine.enqueueAtomic([
      job('typed', { type: 'crop', idempotencyKey: 'order-1' }),
      job('known', { priority: 10 }),
      job('known', { idempotencyKey: 'order-2' }),
      job('known', { payload: new Uint8Array(100) }),
      job('undeclared'),
    ]);
    assert.equal(result.committed, false);
    assert.ok(!result.committed);
    assert.deepEqual(
      result.rejections.map((r) => [r.index, r.reason]),
      [
        [1, 'invalid_job'],
        [3, 'payload_too_large'],
        [4, 'unknown_queue'],
      ],
    );
    assert.equal(rowCount(db, 'jobs'), before.jobs);
    assert.equal(rowCount(db, 'idempotency_keys'), before.keys);
    // The queue `typed` was never used: the failed batch did not create it.
    assert.deepEqual(
      (await engine.listQueues()).map((q) => [q.name, q.counts.ready]),
      [
        ['known', 1],
        ['small', 0],
        ['typed', 0],
      ],
    );
    // The keys of the refused batch were not remembered.
    const again = await engine.enqueue(job('typed', { type: 'crop', idempotencyKey: 'order-1' }));
    assert.equal(again.deduplicated, false);
  });
});

test('atomic batch: committed batches store every job, in order, with duplicates resolved', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const result = await engine.enqueueAtomic([
      job('a', { idempotencyKey: 'k' }),
      job('b'),
      job('a', { idempotencyKey: 'k' }),
    ]);
    assert.ok(result.committed);
    const [first, second, third] = result.results;
    assert.ok(first && second && third);
    assert.equal(first.deduplicated, false);
    assert.equal(third.deduplicated, true);
    assert.equal(third.jobId, first.jobId);
    assert.notEqual(second.jobId, first.jobId);
    assert.equal(rowCount(db, 'jobs'), 2);
    assert.equal((await engine.getJob(second.jobId)).queue, 'b');
  });
});

test('atomic batch: max_depth is checked against the whole batch', async () => {
  await withEngine({ options: strict }, async ({ engine, db }) => {
    await engine.enqueue(job('small'));
    const result = await engine.enqueueAtomic([job('small'), job('known'), job('small')]);
    assert.ok(!result.committed);
    assert.deepEqual(
      result.rejections.map((r) => [r.index, r.reason]),
      [
        [0, 'queue_full'],
        [2, 'queue_full'],
      ],
    );
    assert.equal(
      result.rejections[0]?.message,
      "queue small holds 1 unfinished jobs and would hold 3 with this request's, its max_depth is 2; retry later",
    );
    assert.equal(rowCount(db, 'jobs'), 1);
    const fits = await engine.enqueueAtomic([job('small'), job('known')]);
    assert.ok(fits.committed);
  });
});

test('batch size: too many jobs is resource_exhausted, none is invalid_argument, both as rejections', async () => {
  await withEngine(
    { options: { limits: { ...defaultEngineLimits, maxBatchJobs: 3 } } },
    async ({ engine, db }) => {
      const four = [job('q'), job('q'), job('q'), job('q')];
      const tooMany = await expectCode(engine.enqueueBatch(four), 'resource_exhausted');
      assert.match(tooMany.message, /limit is 3/);
      await expectCode(engine.enqueueAtomic(four), 'resource_exhausted');
      await expectCode(engine.enqueueBatch([]), 'invalid_argument');
      await expectCode(engine.enqueueAtomic([]), 'invalid_argument');
      assert.equal(rowCount(db, 'jobs'), 0);
      assert.equal((await engine.enqueueBatch(four.slice(0, 3))).length, 3);
    },
  );
});

test('a stored job keeps what was sent, with defaults filled in', async () => {
  await withEngine({ options: withQueues({ q: { maxAttempts: 7 } }) }, async ({ engine, clock }) => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { jobId } = await engine.enqueue({
      queue: 'q',
      type: 'send',
      payload: bytes('{"to":"a@b"}'),
      contentType: 'application/json',
      priority: 4,
      metadata: { tenant: 't1' },
      traceparent,
      tracestate: 'vendor=1',
      idempotencyKey: 'key-1',
    });
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'ready');
    assert.equal(info.type, 'send');
    assert.equal(info.payload.toString(), '{"to":"a@b"}');
    assert.equal(info.contentType, 'application/json');
    assert.equal(info.priority, 4);
    assert.equal(info.attempt, 0);
    assert.equal(info.maxAttempts, 7);
    assert.deepEqual(info.metadata, { tenant: 't1' });
    assert.equal(info.traceparent, traceparent);
    assert.equal(info.tracestate, 'vendor=1');
    assert.equal(info.idempotencyKey, 'key-1');
    assert.equal(info.enqueuedAtMs, clock.nowMs());
    assert.equal(info.runAtMs, clock.nowMs());

    const plain = await engine.getJob((await engine.enqueue({ ...job('q'), traceparent: 'garbage' })).jobId);
    assert.equal(plain.contentType, 'application/octet-stream');
    assert.equal(plain.priority, 0);
    assert.equal(plain.traceparent, null, 'an invalid traceparent is dropped, the job is kept');
    assert.deepEqual(plain.metadata, {});
    assert.equal(plain.idempotencyKey, null);
  });
});

test('job ids are unique and time-ordered', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const results = await engine.enqueueBatch(Array.from({ length: 50 }, () => job('q')));
      ids.push(...results.map((r) => (r.ok ? r.jobId : '')));
      clock.advance(i % 2);
    }
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), ids);
  });
});

function ids(results: EnqueueResult[]): string[] {
  return results.map((r) => (r.ok ? r.jobId : `rejected:${r.reason}`));
}

test('idempotency: a duplicate returns the original id, also after the job was acked', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const first = await engine.enqueue(job('q', { idempotencyKey: 'order-7' }));
    const dup = await engine.enqueue(job('q', { idempotencyKey: 'order-7', payload: bytes('other') }));
    assert.deepEqual(dup, { ok: true, jobId: first.jobId, deduplicated: true });
    assert.equal(rowCount(db, 'jobs'), 1);

    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.equal(leased?.id, first.jobId);
    await engine.ack({ jobId: first.jobId, attempt: 1 });
    assert.equal(rowCount(db, 'jobs'), 0);
    const afterAck = await engine.enqueue(job('q', { idempotencyKey: 'order-7' }));
    assert.deepEqual(afterAck, { ok: true, jobId: first.jobId, deduplicated: true });
    assert.equal(rowCount(db, 'jobs'), 0);

    // The same key on another queue is another job.
    const elsewhere = await engine.enqueue(job('other', { idempotencyKey: 'order-7' }));
    assert.equal(elsewhere.deduplicated, false);
  });
});

/** Leases and acks every ready job of `queue`: their keys then live by the window alone. */
async function finishAll(engine: Engine, queue: string): Promise<void> {
  for (const leased of await engine.reserve({ queues: [queue], maxJobs: 100 })) {
    await engine.ack({ jobId: leased.id, attempt: leased.attempt });
  }
}

test('idempotency: the default window is 24 h; after it the key of a finished job makes a new job', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const first = await engine.enqueue(job('q', { idempotencyKey: 'k' }));
    await finishAll(engine, 'q');
    clock.advance(DAY_MS - 1);
    assert.equal((await engine.enqueue(job('q', { idempotencyKey: 'k' }))).jobId, first.jobId);
    clock.advance(1);
    const later = await engine.enqueue(job('q', { idempotencyKey: 'k' }));
    assert.equal(later.deduplicated, false);
    assert.notEqual(later.jobId, first.jobId);
    // The new job owns the key for a new window.
    clock.advance(DAY_MS - 1);
    assert.equal((await engine.enqueue(job('q', { idempotencyKey: 'k' }))).jobId, later.jobId);
  });
});

test('idempotency: the window is per queue, and 0 turns deduplication off', async () => {
  const options = withQueues({ short: { dedupWindowMs: 1000 }, off: { dedupWindowMs: 0 } });
  await withEngine({ options }, async ({ engine, clock, db }) => {
    const short = await engine.enqueue(job('short', { idempotencyKey: 'k' }));
    const long = await engine.enqueue(job('long', { idempotencyKey: 'k' }));
    await finishAll(engine, 'short');
    await finishAll(engine, 'long');
    clock.advance(999);
    assert.equal((await engine.enqueue(job('short', { idempotencyKey: 'k' }))).jobId, short.jobId);
    clock.advance(1);
    assert.equal((await engine.enqueue(job('short', { idempotencyKey: 'k' }))).deduplicated, false);
    assert.equal((await engine.enqueue(job('long', { idempotencyKey: 'k' }))).jobId, long.jobId);

    const off1 = await engine.enqueue(job('off', { idempotencyKey: 'k' }));
    const off2 = await engine.enqueue(job('off', { idempotencyKey: 'k' }));
    assert.notEqual(off1.jobId, off2.jobId);
    assert.equal(off2.deduplicated, false);
    assert.equal(
      db.prepare<[], number>("SELECT count(*) FROM idempotency_keys WHERE queue = 'off'").pluck().get(),
      0,
    );
  });
});

test('idempotency: duplicates within one batch resolve to the first job of the batch', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const results = await engine.enqueueBatch([
      job('q', { idempotencyKey: 'a' }),
      job('q', { idempotencyKey: 'b' }),
      job('q', { idempotencyKey: 'a' }),
      job('q', { idempotencyKey: 'a', priority: 42 }),
      job('q'),
    ]);
    const [a, b, a2, bad, plain] = ids(results);
    assert.equal(a2, a);
    assert.equal(bad, 'rejected:invalid_job');
    assert.equal(new Set([a, b, plain]).size, 3);
    assert.deepEqual(
      results.map((r) => r.ok && r.deduplicated),
      [false, false, true, false, false],
    );
    assert.equal(rowCount(db, 'jobs'), 3);
  });
});

test('idempotency: a duplicate is answered with the original even when the queue is full', async () => {
  // A producer that retries an enqueue whose answer it lost must learn that its
  // job was accepted, not that the queue is full.
  await withEngine({ options: withQueues({ small: { maxDepth: 1 } }) }, async ({ engine, db }) => {
    const first = await engine.enqueue(job('small', { idempotencyKey: 'k' }));
    const retry = await engine.enqueue(job('small', { idempotencyKey: 'k' }));
    assert.deepEqual(retry, { ok: true, jobId: first.jobId, deduplicated: true });
    const [batchRetry] = await engine.enqueueBatch([job('small', { idempotencyKey: 'k' })]);
    assert.deepEqual(batchRetry, { ok: true, jobId: first.jobId, deduplicated: true });
    const atomic = await engine.enqueueAtomic([job('small', { idempotencyKey: 'k' })]);
    assert.ok(atomic.committed, 'an atomic retry of an accepted job is not refused for depth');
    assert.equal(atomic.results[0]?.jobId, first.jobId);
    await expectCode(engine.enqueue(job('small', { idempotencyKey: 'new' })), 'resource_exhausted');
    assert.equal(rowCount(db, 'jobs'), 1);
  });
});

test('events report enqueued, deduplicated and rejected jobs per queue', async () => {
  const events: string[] = [];
  await withEngine(
    {
      options: strict,
      deps: {
        onEvent: (e) => events.push(`${e.kind}:${e.queue}:${'reason' in e ? e.reason : ''}:${e.count}`),
      },
    },
    async ({ engine }) => {
      await engine.enqueueBatch([
        job('known', { idempotencyKey: 'k' }),
        job('known', { idempotencyKey: 'k' }),
        job('known'),
        job('undeclared'),
        job('known', { priority: 11 }),
        job('known', { priority: 12 }),
      ]);
      assert.deepEqual(events.sort(), [
        'deduplicated:known::1',
        'enqueued:known::2',
        'rejected:known:invalid_job:2',
        'rejected:undeclared:unknown_queue:1',
      ]);
    },
  );
});

test('a payload just over its limit says by how much: its exact size, not a rounding of it', async () => {
  await withEngine({ options: withQueues({ mib: { maxPayloadBytes: 1024 * 1024 } }) }, async ({ engine }) => {
    const [result] = await engine.enqueueBatch([job('mib', { payload: new Uint8Array(1024 * 1024 + 2) })]);
    assert.ok(result !== undefined && !result.ok);
    assert.equal(
      result.message,
      'payload is 1048578 bytes (1.0 MiB), the limit for queue mib is 1 MiB (max_payload_bytes)',
    );
  });
});
