/**
 * Ack, nack and extend: attempt fencing, per-item batch outcomes, backoff,
 * explicit delays, dead-lettering, error history and truncation.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { type BackoffSettings, defaultEngineLimits } from '../../src/engine/settings.ts';
import type { LeasedJob } from '../../src/engine/types.ts';
import { expectCode, helperRandom, job, rowCount, withEngine, withQueues } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

async function leaseOne(engine: Engine, queue = 'q', leaseMs?: number): Promise<LeasedJob> {
  const [leased] = await engine.reserve({ queues: [queue], ...(leaseMs === undefined ? {} : { leaseMs }) });
  assert.ok(leased, `a job of ${queue} should be ready`);
  return leased;
}

test('fencing: a stale attempt gets lease_lost on ack, nack and extend', async () => {
  await withEngine({}, async ({ engine, clock, db }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const first = await leaseOne(engine, 'q', 10_000);
    clock.advance(10_000);
    await engine.runMaintenance();
    const second = await leaseOne(engine);
    assert.equal(second.id, jobId);
    assert.equal(second.attempt, 2);

    const stale = { jobId, attempt: first.attempt };
    const lost = await expectCode(engine.ack(stale), 'lease_lost');
    assert.match(lost.message, /attempt 1 no longer holds the lease/);
    await expectCode(engine.nack({ ...stale, error: 'late' }), 'lease_lost');
    await expectCode(engine.extend({ ...stale, leaseMs: 1000 }), 'lease_lost');
    await expectCode(engine.ack({ jobId, attempt: 7 }), 'lease_lost');
    // The stale calls changed nothing.
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'leased');
    assert.equal(info.attempt, 2);
    assert.equal(info.errors.length, 1, 'only the expiry is recorded');
    await engine.ack({ jobId, attempt: 2 });
    assert.equal(rowCount(db, 'jobs'), 0);
  });
});

test('fencing: a job that is not leased, or does not exist, is not_found', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    // Never leased: attempt 0, so an attempt it never had is no lease either (work.proto's
    // SettleOutcome): not_found, not lease_lost. The stream fuzzer found this one.
    await expectCode(engine.ack({ jobId, attempt: 0 }), 'not_found');
    const never = await expectCode(engine.ack({ jobId, attempt: 1 }), 'not_found');
    assert.match(never.message, /is not leased \(it is ready, on attempt 0\): attempt 1 holds no lease/);
    await expectCode(engine.extend({ jobId, attempt: 2, leaseMs: 1000 }), 'not_found');
    const leased = await leaseOne(engine);
    await engine.nack({
      jobId,
      attempt: leased.attempt,
      error: 'e',
      directive: { kind: 'delay', delayMs: 0 },
    });
    // Back to ready with the same attempt: the lease has ended.
    const ended = await expectCode(engine.ack({ jobId, attempt: 1 }), 'not_found');
    assert.match(ended.message, /is not leased \(it is ready\)/);
    await expectCode(engine.nack({ jobId, attempt: 1, error: 'again' }), 'not_found');
    await expectCode(engine.extend({ jobId, attempt: 1, leaseMs: 1000 }), 'not_found');
    // Ready again, and a stale attempt: still no lease to lose.
    await expectCode(engine.ack({ jobId, attempt: 7 }), 'not_found');

    const unknown = '01900000-0000-7000-8000-000000000000';
    await expectCode(engine.ack({ jobId: unknown, attempt: 1 }), 'not_found');
    await expectCode(engine.nack({ jobId: unknown, attempt: 1, error: 'x' }), 'not_found');
    await expectCode(engine.extend({ jobId: unknown, attempt: 1, leaseMs: 1000 }), 'not_found');

    const again = await leaseOne(engine);
    await engine.ack({ jobId, attempt: again.attempt });
    await expectCode(engine.ack({ jobId, attempt: again.attempt }), 'not_found');
  });
});

test('ackBatch: one outcome per item, in order; the good ones are acked', async () => {
  await withEngine({}, async ({ engine, clock, db }) => {
    await engine.enqueueBatch([job('q'), job('q'), job('q')]);
    const [a, b, c] = await engine.reserve({ queues: ['q'], maxJobs: 3, leaseMs: 5000 });
    assert.ok(a && b && c);
    // c's lease expires and c is leased again: its first attempt is stale.
    await engine.extend({ jobId: a.id, attempt: 1, leaseMs: 60_000 });
    await engine.extend({ jobId: b.id, attempt: 1, leaseMs: 60_000 });
    clock.advance(5000);
    await engine.runMaintenance();
    const c2 = await leaseOne(engine);
    assert.equal(c2.id, c.id);
    const outcomes = await engine.ackBatch([
      { jobId: a.id, attempt: 1 },
      { jobId: c.id, attempt: 1 },
      { jobId: 'no-such-job', attempt: 1 },
      { jobId: a.id, attempt: 1 },
      { jobId: b.id, attempt: 1 },
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.code)),
      ['ok', 'lease_lost', 'not_found', 'not_found', 'ok'],
    );
    assert.equal(rowCount(db, 'jobs'), 1);
    assert.equal((await engine.getJob(c.id)).state, 'leased');
    assert.deepEqual(await engine.ackBatch([]), []);
    const tooMany = Array.from({ length: defaultEngineLimits.maxReserveJobs + 1 }, () => ({
      jobId: a.id,
      attempt: 1,
    }));
    await expectCode(engine.ackBatch(tooMany), 'resource_exhausted');
  });
});

/** The backoff formula, written out independently of src/engine/backoff.ts. */
function expectedDelays(settings: BackoffSettings, failures: number): number[] {
  const random = helperRandom();
  const delays: number[] = [];
  for (let n = 1; n <= failures; n++) {
    const raw = Math.min(settings.capMs, settings.baseMs * settings.factor ** (n - 1));
    const jittered = raw + raw * settings.jitter * (2 * random() - 1);
    delays.push(Math.max(0, Math.round(Math.min(settings.capMs, jittered))));
  }
  return delays;
}

test('nack default backoff: exponential with jitter, capped, exact with the helper random', async () => {
  const backoff = { baseMs: 1000, factor: 2, capMs: 5000, jitter: 0.2 };
  const options = withQueues({ q: { backoff, maxAttempts: 8 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const expected = expectedDelays(backoff, 7);
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 7; attempt++) {
      const leased = await leaseOne(engine);
      assert.equal(leased.attempt, attempt);
      const result = await engine.nack({ jobId, attempt, error: `failure ${attempt}` });
      assert.equal(result.state, 'scheduled');
      assert.ok(result.runAtMs !== null);
      const delayMs = result.runAtMs - clock.nowMs();
      delays.push(delayMs);
      assert.equal((await engine.getJob(jobId)).runAtMs, result.runAtMs);
      // Not a millisecond early, and due at exactly its time.
      clock.advance(delayMs - 1);
      await engine.runMaintenance();
      assert.equal((await engine.getJob(jobId)).state, 'scheduled');
      clock.advance(1);
      await engine.runMaintenance();
      assert.equal((await engine.getJob(jobId)).state, 'ready');
    }
    assert.deepEqual(delays, expected);
    for (const d of delays) assert.ok(d <= backoff.capMs, `delay ${d} respects the cap`);
    // Without jitter the sequence is the plain doubling, capped.
    assert.deepEqual(expectedDelays({ ...backoff, jitter: 0 }, 5), [1000, 2000, 4000, 5000, 5000]);
  });
});

test('nack default backoff without jitter: base, doubling, then the cap', async () => {
  const backoff = { baseMs: 1000, factor: 2, capMs: 5000, jitter: 0 };
  await withEngine(
    { options: withQueues({ q: { backoff, maxAttempts: 10 } }) },
    async ({ engine, clock }) => {
      const { jobId } = await engine.enqueue(job('q'));
      const delays: number[] = [];
      for (let attempt = 1; attempt <= 5; attempt++) {
        await leaseOne(engine);
        const { runAtMs } = await engine.nack({ jobId, attempt, error: 'x', directive: { kind: 'backoff' } });
        delays.push((runAtMs ?? 0) - clock.nowMs());
        clock.advance(delays.at(-1)!);
        await engine.runMaintenance();
      }
      assert.deepEqual(delays, [1000, 2000, 4000, 5000, 5000]);
    },
  );
});

test('nack with the default settings waits about a second (1 s ± 20 %)', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await leaseOne(engine);
    const { runAtMs } = await engine.nack({ jobId, attempt: 1, error: 'x' });
    const delayMs = (runAtMs ?? 0) - clock.nowMs();
    // From the fake clock, which stands still between the nack and this line, and the test
    // engine's fixed random sequence: only the jitter spreads it, so no load can move it.
    assert.ok(delayMs >= 800 && delayMs <= 1200, `delay ${delayMs}`);
  });
});

test('nack with an explicit delay: 0 is ready at once, more is scheduled, bad values are refused', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await leaseOne(engine);
    const now = await engine.nack({
      jobId,
      attempt: 1,
      error: 'x',
      directive: { kind: 'delay', delayMs: 0 },
    });
    assert.deepEqual(now, { state: 'ready', runAtMs: clock.nowMs() });
    assert.equal((await engine.getJob(jobId)).state, 'ready');

    const second = await leaseOne(engine);
    assert.equal(second.attempt, 2);
    const later = await engine.nack({
      jobId,
      attempt: 2,
      error: 'x',
      directive: { kind: 'delay', delayMs: 30_000 },
    });
    assert.deepEqual(later, { state: 'scheduled', runAtMs: clock.nowMs() + 30_000 });

    clock.advance(30_000);
    await engine.runMaintenance();
    await leaseOne(engine);
    for (const delayMs of [-1, 1.5, defaultEngineLimits.maxScheduleAheadMs + 1]) {
      await expectCode(
        engine.nack({ jobId, attempt: 3, error: 'x', directive: { kind: 'delay', delayMs } }),
        'invalid_argument',
      );
    }
    assert.equal((await engine.getJob(jobId)).state, 'leased', 'a refused nack leaves the lease alone');
  });
});

test('nack dead_letter: dead at once with reason dead_lettered, whatever attempts are left', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 10 }));
    await leaseOne(engine);
    const result = await engine.nack({
      jobId,
      attempt: 1,
      error: 'poison',
      directive: { kind: 'dead_letter' },
    });
    assert.deepEqual(result, { state: 'dead', runAtMs: null });
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'dead');
    assert.equal(info.deadReason, 'dead_lettered');
    assert.equal(info.lastError, 'poison');
    assert.equal(info.failedAtMs, clock.nowMs());
    assert.equal(info.leaseDeadlineMs, null);
    assert.deepEqual(info.errors, [
      { attempt: 1, atMs: clock.nowMs(), error: 'poison', errorClass: null, stack: null },
    ]);
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
  });
});

test('attempts exhausted: dead with reason attempts_exhausted and the error of every attempt', async () => {
  await withEngine({ options: withQueues({ q: { maxAttempts: 3 } }) }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const start = clock.nowMs();
    for (let attempt = 1; attempt <= 3; attempt++) {
      const leased = await leaseOne(engine);
      assert.equal(leased.attempt, attempt);
      assert.equal(leased.maxAttempts, 3);
      assert.equal(leased.lastError, attempt === 1 ? null : `error ${attempt - 1}`);
      clock.advance(100);
      const result = await engine.nack({
        jobId,
        attempt,
        error: `error ${attempt}`,
        directive: { kind: 'delay', delayMs: 0 },
      });
      assert.equal(result.state, attempt < 3 ? 'ready' : 'dead');
    }
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'dead');
    assert.equal(info.deadReason, 'attempts_exhausted');
    assert.equal(info.lastError, 'error 3');
    assert.equal(info.attempt, 3);
    assert.deepEqual(info.errors, [
      { attempt: 1, atMs: start + 100, error: 'error 1', errorClass: null, stack: null },
      { attempt: 2, atMs: start + 200, error: 'error 2', errorClass: null, stack: null },
      { attempt: 3, atMs: start + 300, error: 'error 3', errorClass: null, stack: null },
    ]);
  });
});

test('a dead_letter directive on the last attempt is still dead_lettered', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 1 }));
    await leaseOne(engine);
    await engine.nack({ jobId, attempt: 1, error: 'x', directive: { kind: 'dead_letter' } });
    assert.equal((await engine.getJob(jobId)).deadReason, 'dead_lettered');
  });
});

test('error history keeps the newest limits.maxErrorHistory entries', async () => {
  const options = { limits: { ...defaultEngineLimits, maxErrorHistory: 3 } };
  await withEngine({ options }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 5 }));
    for (let attempt = 1; attempt <= 5; attempt++) {
      await leaseOne(engine);
      await engine.nack({ jobId, attempt, error: `e${attempt}`, directive: { kind: 'delay', delayMs: 0 } });
    }
    const info = await engine.getJob(jobId);
    assert.equal(info.deadReason, 'attempts_exhausted');
    assert.deepEqual(
      info.errors.map((e) => [e.attempt, e.error]),
      [
        [3, 'e3'],
        [4, 'e4'],
        [5, 'e5'],
      ],
    );
    assert.equal(info.lastError, 'e5');
  });
});

test('error messages longer than limits.maxErrorBytes are truncated on a character boundary', async () => {
  const options = { limits: { ...defaultEngineLimits, maxErrorBytes: 64 } };
  await withEngine({ options }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 5 }));
    const stored: string[] = [];
    for (const [attempt, error] of [
      [1, 'x'.repeat(100)],
      [2, '€'.repeat(40)],
      [3, 'y'.repeat(64)],
    ] as const) {
      await leaseOne(engine);
      await engine.nack({ jobId, attempt, error, directive: { kind: 'delay', delayMs: 0 } });
      stored.push((await engine.getJob(jobId)).lastError ?? '');
    }
    const [ascii, euro, exact] = stored;
    assert.ok(ascii && euro);
    assert.ok(Buffer.byteLength(ascii) <= 64);
    assert.ok(ascii.startsWith('xxxx') && ascii.endsWith('… [truncated]'));
    assert.ok(Buffer.byteLength(euro) <= 64);
    assert.ok(!euro.includes('\uFFFD'), 'no broken character at the cut');
    assert.match(euro, /^€+… \[truncated\]$/);
    assert.equal(exact, 'y'.repeat(64), 'a message at the limit is kept whole');
    assert.deepEqual(
      (await engine.getJob(jobId)).errors.map((e) => e.error),
      stored,
    );
  });
});

test('extend pushes the deadline forward, clamped to maxLeaseMs, so the lease does not expire', async () => {
  const options = withQueues({ q: { maxLeaseMs: 20_000 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const leased = await leaseOne(engine, 'q', 10_000);
    clock.advance(8000);
    const extended = await engine.extend({ jobId, attempt: 1, leaseMs: 10_000 });
    assert.equal(extended.leaseDeadlineMs, clock.nowMs() + 10_000);
    assert.ok(extended.leaseDeadlineMs > leased.leaseDeadlineMs);
    clock.advance(5000); // past the first deadline
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'leased');
    assert.equal((await engine.getJob(jobId)).leaseDeadlineMs, extended.leaseDeadlineMs);

    const clamped = await engine.extend({ jobId, attempt: 1, leaseMs: 3_600_000 });
    assert.equal(clamped.leaseDeadlineMs, clock.nowMs() + 20_000);
    // 0 is the queue's default lease (30 s), here clamped to its max_lease_ms too.
    const byDefault = await engine.extend({ jobId, attempt: 1, leaseMs: 0 });
    assert.equal(byDefault.leaseDeadlineMs, clock.nowMs() + 20_000);
    await expectCode(engine.extend({ jobId, attempt: 1, leaseMs: -1 }), 'invalid_argument');

    clock.advance(19_999);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'leased');
    await engine.ack({ jobId, attempt: 1 });
  });
});

test('extend may shorten a lease; the job then expires at the new deadline', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await leaseOne(engine, 'q', 60_000);
    await engine.extend({ jobId, attempt: 1, leaseMs: 1000 });
    clock.advance(1000);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'ready');
  });
});

test('undoLeases: no failure is told; a job asked to stop meanwhile ends cancelled; repeats change nothing', async () => {
  await withEngine({}, async ({ engine }) => {
    const c = collect(engine);
    const { jobId: kept } = await engine.enqueue(job('q', { maxAttempts: 1 }));
    const { jobId: stopping } = await engine.enqueue(job('q'));
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 2, workerId: 'w-1' });
    assert.equal(leased.length, 2);
    await engine.cancel(stopping);
    const keys = leased.map((j) => ({ jobId: j.id, attempt: j.attempt }));
    // Named twice: one key per job.
    assert.equal(await engine.undoLeases([...keys, ...keys]), 1);
    const back = await engine.getJob(kept);
    assert.deepEqual(
      [back.state, back.attempt, back.leasedAtMs, back.workerId, back.leaseDeadlineMs, back.errors],
      ['ready', 0, null, null, null, []],
    );
    assert.equal((await engine.getJob(stopping)).state, 'cancelled');
    assert.equal(await engine.undoLeases(keys), 0, 'undone once');
    assert.equal(await engine.undoLeases([]), 0);
    // Lifecycle events: the leases, the one undone, the cancel; nothing says an attempt failed or a job died.
    assert.deepEqual(
      c.events.map((e) => e.kind),
      ['enqueued', 'enqueued', 'leased', 'leased', 'lease_undone', 'cancelled'],
    );
    c.subscription.close();
  });
});
