/**
 * The outcomes of jobs deleted as they finished (limits.finishedOutcomeMs):
 * GetJob answers with the outcome only once the row is gone — after an ack on
 * a queue that keeps no completed jobs (alone and in a multi-row batch), a
 * dead letter or a cancel swept at retention 0, an expiry that deletes — and
 * NOT_FOUND once the time has passed, when the limit is 0, and after a
 * restart. The table's bounds evict the oldest.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { type FinishedOutcome, FinishedOutcomes, outcomeBytes } from '../../src/engine/finished-outcomes.ts';
import { defaultEngineLimits, defaultQueueSettings } from '../../src/engine/settings.ts';
import type { LeasedJob } from '../../src/engine/types.ts';
import { bytes, expectCode, job, rowCount, withEngine, withQueues } from '../helpers/engine.ts';

const MINUTE_MS = 60_000;

async function leaseOne(engine: Engine, queue: string): Promise<LeasedJob> {
  const [leased] = await engine.reserve({ queues: [queue] });
  assert.ok(leased, `a job of ${queue} should be ready`);
  return leased;
}

test('an ack that deletes the job: GetJob answers its outcome only, for limits.finished_outcome_ms', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(
      job('q', { payload: bytes('the input'), metadata: { tenant: 'a' }, idempotencyKey: 'k' }),
    );
    const leased = await leaseOne(engine, 'q');
    const result = bytes('{"sum":3}');
    await engine.ack({ jobId, attempt: leased.attempt, result, resultContentType: 'application/json' });
    result.fill(0); // the caller's buffer may be reused: the outcome kept its own copy
    const ackedAtMs = clock.nowMs();
    const info = await engine.getJob(jobId);
    assert.equal(info.outcomeOnly, true);
    assert.deepEqual(
      [info.id, info.queue, info.type, info.state, info.attempt, info.completedAtMs],
      [jobId, 'q', 'test', 'completed', 1, ackedAtMs],
    );
    assert.equal(Buffer.from(info.result!).toString(), '{"sum":3}');
    assert.equal(info.resultContentType, 'application/json');
    assert.deepEqual([info.payload.byteLength, info.metadata, info.idempotencyKey], [0, {}, null]);

    clock.advance(defaultEngineLimits.finishedOutcomeMs);
    assert.equal((await engine.getJob(jobId)).outcomeOnly, true, 'kept for the whole window');
    clock.advance(1);
    const gone = await expectCode(engine.getJob(jobId), 'not_found');
    assert.match(gone.message, /limits\.finished_outcome_ms, 5 minutes/);
  });
});

test('a batch of acks (the multi-row delete) keeps every outcome; a refused ack keeps none', async () => {
  await withEngine({}, async ({ engine }) => {
    for (let i = 0; i < 12; i++) await engine.enqueue(job('q'));
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 12 });
    assert.equal(leased.length, 12);
    const outcomes = await engine.ackBatch([
      ...leased.map((l, i) => ({ jobId: l.id, attempt: l.attempt, result: bytes(`r${i}`) })),
      { jobId: leased[0]!.id, attempt: leased[0]!.attempt + 1 },
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [...leased.map(() => true), false],
    );
    for (const [i, l] of leased.entries()) {
      const info = await engine.getJob(l.id);
      assert.deepEqual(
        [info.outcomeOnly, info.state, Buffer.from(info.result!).toString()],
        [true, 'completed', `r${i}`],
      );
    }
    // An ack refused before its job ever ended keeps nothing.
    await expectCode(engine.ack({ jobId: '01890f6e-7c3a-7000-8000-000000000000', attempt: 1 }), 'not_found');
    await expectCode(engine.getJob('01890f6e-7c3a-7000-8000-000000000000'), 'not_found');
  });
});

test('a queue that keeps completed jobs answers from the row, not the outcome', async () => {
  await withEngine(
    { options: withQueues({ kept: { completedRetentionMs: 60 * MINUTE_MS } }) },
    async ({ engine }) => {
      const { jobId } = await engine.enqueue(job('kept', { payload: bytes('in') }));
      const leased = await leaseOne(engine, 'kept');
      await engine.ack({ jobId, attempt: leased.attempt });
      const info = await engine.getJob(jobId);
      assert.deepEqual(
        [info.outcomeOnly, info.state, Buffer.from(info.payload).toString()],
        [false, 'completed', 'in'],
      );
    },
  );
});

test('dead and cancelled jobs swept at retention 0 leave their outcome; expiry that deletes too', async () => {
  const options = withQueues({
    zero: { deadRetentionMs: 0, cancelledRetentionMs: 0 },
    gone: { expiredAction: 'delete' },
  });
  await withEngine({ options }, async ({ engine, clock, db }) => {
    const failed = await engine.enqueue(job('zero', { maxAttempts: 1 }));
    const lost = await engine.enqueue(job('zero', { maxAttempts: 1 }));
    const waiting = await engine.enqueue(job('zero', { delayMs: 60 * MINUTE_MS }));
    const stopped = await engine.enqueue(job('zero'));
    const expiring = await engine.enqueue(job('gone', { ttlMs: 1000 }));

    const [first, second, third] = await engine.reserve({ queues: ['zero'], maxJobs: 3 });
    assert.ok(first && second && third);
    const byId = new Map([first, second, third].map((l) => [l.id, l]));
    await engine.nack({ jobId: failed.jobId, attempt: byId.get(failed.jobId)!.attempt, error: 'boom' });
    await engine.cancel(waiting.jobId, {
      actor: 'alice',
      action: 'job.cancel',
      target: `job:${waiting.jobId}`,
    });
    await engine.cancel(stopped.jobId);
    await engine.nack({
      jobId: stopped.jobId,
      attempt: byId.get(stopped.jobId)!.attempt,
      error: 'told to stop',
    });
    // `lost` runs out of lease time and `expiring` passes its expiry while waiting; the sweep
    // (once a minute) deletes the dead and cancelled rows.
    clock.advance(defaultQueueSettings.defaultLeaseMs);
    await engine.runMaintenance();
    clock.advance(61_000);
    await engine.runMaintenance();
    assert.equal(rowCount(db, 'jobs'), 0, 'every row is gone');

    const dead = await engine.getJob(failed.jobId);
    assert.deepEqual(
      [dead.outcomeOnly, dead.state, dead.deadReason, dead.lastError, dead.attempt],
      [true, 'dead', 'attempts_exhausted', 'boom', 1],
    );
    const expired = await engine.getJob(lost.jobId);
    assert.deepEqual(
      [expired.outcomeOnly, expired.state, expired.deadReason],
      [true, 'dead', 'lease_expired'],
    );
    const cancelled = await engine.getJob(waiting.jobId);
    assert.deepEqual(
      [cancelled.outcomeOnly, cancelled.state, cancelled.cancelledBy, cancelled.attempt],
      [true, 'cancelled', 'alice', 0],
    );
    const ended = await engine.getJob(stopped.jobId);
    assert.deepEqual([ended.outcomeOnly, ended.state, ended.lastError], [true, 'cancelled', 'told to stop']);
    const deleted = await engine.getJob(expiring.jobId);
    assert.deepEqual([deleted.outcomeOnly, deleted.state, deleted.deadReason], [true, 'dead', 'expired']);
  });
});

test('limits.finished_outcome_ms = 0 keeps nothing; a restart forgets what was kept', async () => {
  const limits = { ...defaultEngineLimits, finishedOutcomeMs: 0 };
  await withEngine({ options: { limits } }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await engine.ack({ jobId, attempt: (await leaseOne(engine, 'q')).attempt });
    const gone = await expectCode(engine.getJob(jobId), 'not_found');
    assert.match(gone.message, /finished_outcome_ms, off/);
  });
  await withEngine({}, async (t) => {
    const { jobId } = await t.engine.enqueue(job('q'));
    await t.engine.ack({ jobId, attempt: (await leaseOne(t.engine, 'q')).attempt });
    assert.equal((await t.engine.getJob(jobId)).outcomeOnly, true);
    const restarted = await t.reopen();
    await expectCode(restarted.engine.getJob(jobId), 'not_found');
    return restarted;
  });
});

function outcome(id: string, endedAtMs: number, resultBytes = 0): FinishedOutcome {
  return {
    id,
    queue: 'q',
    type: 't',
    state: 'completed',
    attempt: 1,
    endedAtMs,
    result: resultBytes === 0 ? null : new Uint8Array(resultBytes),
    resultContentType: resultBytes === 0 ? null : 'application/octet-stream',
    lastError: null,
    deadReason: null,
    cancelledBy: null,
  };
}

test('the table forgets the oldest past its count, its bytes and its time', () => {
  const small = outcomeBytes(outcome('x', 0));
  const table = new FinishedOutcomes(() => 1000, { maxOutcomes: 3, maxBytes: 3 * small + 100 });
  for (const id of ['a', 'b', 'c', 'd']) table.add(outcome(id, 0), 0);
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((id) => table.get(id, 0) !== undefined),
    [false, true, true, true],
    'a count of 3',
  );
  table.add(outcome('e', 10, 150), 10);
  assert.deepEqual(
    ['b', 'c', 'd', 'e'].map((id) => table.get(id, 10) !== undefined),
    [false, false, true, true],
    'bytes: a result of 150 pushes out two',
  );
  assert.equal(table.bytes, 2 * small + 150);
  // The same job again (a dead letter requeued and finished): the newer outcome answers.
  table.add({ ...outcome('d', 20), state: 'dead' }, 20);
  assert.equal(table.get('d', 20)?.state, 'dead');
  assert.equal(table.get('e', 1010)?.id, 'e', 'kept for 1000 ms');
  assert.equal(table.get('e', 1011), undefined, 'older than 1000 ms');
  table.prune(1021);
  assert.deepEqual([table.size, table.bytes], [0, 0]);
  assert.equal(new FinishedOutcomes(() => 0).enabled, false);
});

test('the table answers each outcome as it was added, also once its oldest slots were compacted', () => {
  const table = new FinishedOutcomes(() => MINUTE_MS, { maxOutcomes: 1500, maxBytes: 64 * 1024 * 1024 });
  const kinds = (i: number): FinishedOutcome => {
    const base = { ...outcome(`j${i}`, i), queue: `q${i % 2}`, type: `t${i % 3}`, attempt: i % 7 };
    if (i % 4 === 1) return { ...base, startedAtMs: i - 1 };
    if (i % 4 === 2)
      return { ...base, startedAtMs: null, result: Uint8Array.of(i % 256), resultContentType: 'x/y' };
    if (i % 4 === 3)
      return { ...base, state: 'dead', lastError: `e${i}`, deadReason: 'expired', cancelledBy: `by${i}` };
    return base;
  };
  // 3,000 outcomes past a bound of 1,500: the oldest go, and the columns are cut (compactAfter) on the way.
  for (let i = 0; i < 3000; i++) table.add(kinds(i), i);
  assert.equal(table.size, 1500);
  assert.equal(table.get('j1499', 3000), undefined, 'past the count');
  for (const i of [1500, 1501, 1502, 1503, 2999])
    assert.deepEqual(table.get(`j${i}`, 3000), kinds(i), `j${i}`);
});
