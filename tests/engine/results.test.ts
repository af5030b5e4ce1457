/**
 * Job results and progress: an ack's result kept with the completed job for
 * the queue's retention and swept after it (injected clock), the result and
 * progress limits, progress fenced by the attempt, and what a retry, a dead
 * letter and a requeue do to them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import type { LeasedJob } from '../../src/engine/types.ts';
import { bytes, expectCode, job, rowCount, withEngine, withQueues } from '../helpers/engine.ts';

const HOUR_MS = 3_600_000;
const keep = withQueues({ keep: { completedRetentionMs: HOUR_MS } });

async function leaseOne(engine: Engine, queue: string): Promise<LeasedJob> {
  const [leased] = await engine.reserve({ queues: [queue] });
  assert.ok(leased, `a job of ${queue} should be ready`);
  return leased;
}

test('an ack result is kept with the completed job for completed_retention_ms, then swept (NOT_FOUND)', async () => {
  await withEngine({ options: keep }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('keep'));
    const leased = await leaseOne(engine, 'keep');
    await engine.ack({
      jobId,
      attempt: leased.attempt,
      result: bytes('{"sent":true}'),
      resultContentType: 'application/json',
    });
    const done = await engine.getJob(jobId);
    assert.equal(done.state, 'completed');
    assert.equal(done.result?.toString(), '{"sent":true}');
    assert.equal(done.resultContentType, 'application/json');
    assert.equal(done.attempt, 1);
    assert.equal(done.completedAtMs, clock.nowMs());

    clock.advance(HOUR_MS - 1);
    await engine.runMaintenance();
    assert.equal(
      (await engine.getJob(jobId)).result?.toString(),
      '{"sent":true}',
      'kept until the retention ends',
    );
    // The sweep runs once a minute: a minute past the retention the job is gone.
    clock.advance(61_000);
    await engine.runMaintenance();
    await expectCode(engine.getJob(jobId), 'not_found');
  });
});

test('a result without a content type is application/octet-stream; an ack without a result keeps none', async () => {
  await withEngine({ options: keep }, async ({ engine }) => {
    const a = await engine.enqueue(job('keep'));
    const b = await engine.enqueue(job('keep'));
    const c = await engine.enqueue(job('keep'));
    const [la, lb, lc] = await engine.reserve({ queues: ['keep'], maxJobs: 3 });
    assert.ok(la && lb && lc);
    await engine.ack({ jobId: a.jobId, attempt: la.attempt, result: new Uint8Array([0, 1, 2]) });
    await engine.ack({ jobId: b.jobId, attempt: lb.attempt });
    // An empty result is a result (of zero bytes), not "none".
    const [outcome] = await engine.ackBatch([
      { jobId: c.jobId, attempt: lc.attempt, result: new Uint8Array(), resultContentType: 'text/plain' },
    ]);
    assert.deepEqual(outcome, { ok: true });
    assert.deepEqual([...((await engine.getJob(a.jobId)).result ?? [])], [0, 1, 2]);
    assert.equal((await engine.getJob(a.jobId)).resultContentType, 'application/octet-stream');
    assert.equal((await engine.getJob(b.jobId)).result, null);
    assert.equal((await engine.getJob(b.jobId)).resultContentType, null);
    assert.equal((await engine.getJob(c.jobId)).result?.length, 0);
    assert.equal((await engine.getJob(c.jobId)).resultContentType, 'text/plain');
  });
});

test('without retention an acked job is deleted, result and all (only its outcome is kept a while)', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const leased = await leaseOne(engine, 'q');
    await engine.ack({ jobId, attempt: leased.attempt, result: bytes('r') });
    assert.equal(rowCount(db, 'jobs'), 0);
    // The outcome kept for limits.finished_outcome_ms (finished-outcomes.test.ts) is all GetJob finds.
    assert.equal((await engine.getJob(jobId)).outcomeOnly, true);
  });
});

test('a result over limits.max_result_bytes or with a bad content type is refused and the lease stays', async () => {
  const options = { ...keep, limits: { ...defaultEngineLimits, maxResultBytes: 8 } };
  await withEngine({ options }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('keep'));
    const leased = await leaseOne(engine, 'keep');
    const big = await expectCode(
      engine.ack({ jobId, attempt: leased.attempt, result: new Uint8Array(9) }),
      'invalid_argument',
    );
    assert.match(
      big.message,
      /result of job .* is 9 bytes, the limit is 8 bytes \(limits\.max_result_bytes\)/,
    );
    await expectCode(
      engine.ackBatch([{ jobId, attempt: leased.attempt, result: new Uint8Array(9) }]),
      'invalid_argument',
    );
    const badType = await expectCode(
      engine.ack({ jobId, attempt: leased.attempt, result: new Uint8Array(1), resultContentType: 'a\nb' }),
      'invalid_argument',
    );
    assert.match(badType.message, /result_content_type/);
    assert.equal((await engine.getJob(jobId)).state, 'leased');
    await engine.ack({ jobId, attempt: leased.attempt, result: new Uint8Array(8) });
    assert.equal((await engine.getJob(jobId)).result?.length, 8);
  });
});

test('progress: percent and JSON are stored, each replacing only its own part, and shown by getJob', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const { attempt } = await leaseOne(engine, 'q');
    assert.equal((await engine.getJob(jobId)).progress, null);
    const first = await engine.reportProgress({ jobId, attempt, percent: 10 });
    assert.deepEqual(first, { percent: 10, json: null, atMs: clock.nowMs() });
    clock.advance(500);
    const second = await engine.reportProgress({ jobId, attempt, json: '{"step":"upload"}' });
    assert.deepEqual(second, { percent: 10, json: '{"step":"upload"}', atMs: clock.nowMs() });
    await engine.reportProgress({ jobId, attempt, percent: 55.5 });
    assert.deepEqual((await engine.getJob(jobId)).progress, {
      percent: 55.5,
      json: '{"step":"upload"}',
      atMs: clock.nowMs(),
    });
  });
});

test('progress: malformed reports are refused; stale and ended leases get lease_lost and not_found', async () => {
  const options = { limits: { ...defaultEngineLimits, maxProgressBytes: 16 } };
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const { attempt } = await leaseOne(engine, 'q');
    for (const [report, pattern] of [
      [{}, /give a percent, a JSON document, or both/],
      [{ percent: 101 }, /percent is 101; it must be a number from 0 to 100/],
      [{ percent: -1 }, /percent is -1/],
      [{ percent: Number.NaN }, /percent is NaN/],
      [{ json: '{"a":' }, /progress json is not valid JSON/],
      [
        { json: JSON.stringify({ long: 'x'.repeat(20) }) },
        /limit is 16 bytes \(limits\.max_progress_bytes\)/,
      ],
    ] as const) {
      const error = await expectCode(
        engine.reportProgress({ jobId, attempt, ...report }),
        'invalid_argument',
      );
      assert.match(error.message, pattern);
    }
    assert.equal((await engine.getJob(jobId)).progress, null, 'nothing stored by refused reports');
    await expectCode(engine.reportProgress({ jobId, attempt: attempt + 1, percent: 1 }), 'lease_lost');
    await expectCode(engine.reportProgress({ jobId: '0190-nope', attempt, percent: 1 }), 'not_found');
    // The lease expires: the job is ready again, and the old attempt's report is refused.
    clock.advance(30_000);
    await engine.runMaintenance();
    await expectCode(engine.reportProgress({ jobId, attempt, percent: 1 }), 'not_found');
  });
});

test('progress: a retry starts without progress; a dead letter keeps its last report; requeue clears result and progress', async () => {
  await withEngine({ options: keep }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('keep', { maxAttempts: 2 }));
    let leased = await leaseOne(engine, 'keep');
    await engine.reportProgress({ jobId, attempt: leased.attempt, percent: 40 });
    await engine.nack({
      jobId,
      attempt: leased.attempt,
      error: 'e',
      directive: { kind: 'delay', delayMs: 0 },
    });
    assert.equal((await engine.getJob(jobId)).progress, null, 'the next attempt reports its own progress');
    leased = await leaseOne(engine, 'keep');
    await engine.reportProgress({ jobId, attempt: leased.attempt, percent: 70 });
    await engine.nack({ jobId, attempt: leased.attempt, error: 'e2' });
    const dead = await engine.getJob(jobId);
    assert.equal(dead.state, 'dead');
    assert.equal(dead.progress?.percent, 70);

    await engine.requeueJob(jobId);
    leased = await leaseOne(engine, 'keep');
    await engine.reportProgress({ jobId, attempt: leased.attempt, percent: 100 });
    await engine.ack({ jobId, attempt: leased.attempt, result: bytes('ok') });
    assert.equal(
      (await engine.getJob(jobId)).progress?.percent,
      100,
      'a completed job keeps its last report',
    );
    await engine.requeueJob(jobId);
    const again = await engine.getJob(jobId);
    assert.equal(again.state, 'ready');
    assert.equal(again.result, null);
    assert.equal(again.progress, null);
  });
});
