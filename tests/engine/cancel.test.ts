/**
 * Cancel of a running job: the request is recorded and the worker told after
 * the commit; whatever ends the attempt (ack, nack, the lease running out) ends
 * the job `cancelled`, never a retry. Bulk cancel by filter, in chunks, with
 * one audit entry; and the retention of cancelled jobs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CancelNotice } from '../../src/engine/control-types.ts';
import type { Engine } from '../../src/engine/engine.ts';
import type { JobEvent, LeasedJob } from '../../src/engine/types.ts';
import { bytes, expectCode, job, rowCount, until, withEngine, withQueues } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

const ops = { actor: 'key:ops', action: 'job.cancel', target: 'job:x' };

async function leaseOne(engine: Engine, queue = 'q'): Promise<LeasedJob> {
  const [leased] = await engine.reserve({ queues: [queue], leaseMs: 10_000, workerId: 'w1' });
  assert.ok(leased, `a job of ${queue} should be ready`);
  return leased;
}

test('a cancel of a leased job is a request: the worker is told after the commit, the job stays leased', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const notices: CancelNotice[][] = [];
    engine.onCancelRequested((n) => notices.push([...n]));
    const { jobId } = await engine.enqueue(job('q'));
    const leased = await leaseOne(engine);
    assert.deepEqual(await engine.cancel(jobId, ops), { previousState: 'leased', state: 'leased' });
    assert.deepEqual(notices, [
      [
        {
          jobId,
          queue: 'q',
          attempt: leased.attempt,
          workerId: 'w1',
          cancelledBy: 'key:ops',
          cancelledAtMs: clock.nowMs(),
        },
      ],
    ]);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'leased');
    assert.equal(info.cancelledAtMs, clock.nowMs());
    assert.equal(info.cancelledBy, 'key:ops');
    // A second cancel tells the worker again but keeps who and when.
    clock.advance(500);
    await engine.cancel(jobId, { ...ops, actor: 'alice' });
    assert.equal(notices.length, 2);
    assert.equal(notices[1]?.[0]?.cancelledBy, 'key:ops');
    assert.equal((await engine.getJob(jobId)).cancelledBy, 'key:ops');
  });
});

test('the ack of a cancelled lease ends the job cancelled and fails with job_cancelled', async () => {
  const events: JobEvent[] = [];
  await withEngine({ deps: { onEvent: (e) => events.push(e) } }, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const leased = await leaseOne(engine);
    await engine.cancel(jobId, ops);
    const error = await expectCode(engine.ack({ jobId, attempt: leased.attempt }), 'job_cancelled');
    assert.match(error.message, /was cancelled by key:ops at .*: stop working on it/);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'cancelled');
    assert.equal(info.leaseDeadlineMs, null);
    assert.deepEqual((await engine.listQueues())[0]?.counts.cancelled, 1);
    assert.ok(!events.some((e) => e.kind === 'acked'), 'a cancelled job is not counted as acked');
    assert.ok(events.some((e) => e.kind === 'cancelled'));
    // Nothing more: the job is never handed out again.
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
    await expectCode(engine.ack({ jobId, attempt: leased.attempt }), 'not_found');
  });
});

test('acks in a batch: a cancelled lease is its own outcome, the others complete', async () => {
  await withEngine({}, async ({ engine, db }) => {
    await engine.enqueueBatch([job('q'), job('q')]);
    const [a, b] = await engine.reserve({ queues: ['q'], maxJobs: 2 });
    assert.ok(a && b);
    await engine.cancel(a.id, ops);
    const outcomes = await engine.ackBatch([
      { jobId: a.id, attempt: a.attempt },
      { jobId: b.id, attempt: b.attempt },
    ]);
    assert.equal(outcomes[0]?.ok, false);
    assert.equal(outcomes[0]?.ok === false && outcomes[0].code, 'job_cancelled');
    assert.deepEqual(outcomes[1], { ok: true });
    assert.equal((await engine.getJob(a.id)).state, 'cancelled');
    assert.equal(rowCount(db, 'jobs'), 1);
  });
});

test('a nack of a cancelled lease ends the job cancelled with its error; an extend is refused', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 5 }));
    const leased = await leaseOne(engine);
    await engine.cancel(jobId, ops);
    const deadline = (await engine.getJob(jobId)).leaseDeadlineMs;
    const refused = await expectCode(engine.extend({ jobId, attempt: 1, leaseMs: 60_000 }), 'job_cancelled');
    assert.match(refused.message, /cancelled/);
    assert.equal((await engine.getJob(jobId)).leaseDeadlineMs, deadline, 'the lease is not extended');
    const result = await engine.nack({
      jobId,
      attempt: leased.attempt,
      error: 'stopped: cancelled',
      directive: { kind: 'delay', delayMs: 0 },
    });
    assert.deepEqual(result, { state: 'cancelled', runAtMs: null });
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'cancelled');
    assert.equal(info.lastError, 'stopped: cancelled');
    assert.deepEqual(
      info.errors.map((e) => e.error),
      ['stopped: cancelled'],
    );
  });
});

test('a worker that never answers: the lease running out ends the job cancelled, not retried', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { maxAttempts: 5 }));
    await leaseOne(engine);
    await engine.cancel(jobId, ops);
    clock.advance(10_000);
    await engine.runMaintenance();
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'cancelled');
    assert.equal(info.attempt, 1);
    assert.equal(info.lastError, 'lease expired after a cancel');
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
  });
});

test('cancelled jobs are kept for cancelled_retention_ms, then swept', async () => {
  const options = withQueues({ q: { cancelledRetentionMs: 60_000 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    await engine.cancel(jobId, ops);
    clock.advance(59_999);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(jobId)).state, 'cancelled');
    clock.advance(60_001);
    await engine.runMaintenance();
    await assert.rejects(async () => engine.getJob(jobId), /does not exist/);
    assert.equal((await engine.listQueues())[0]?.counts.cancelled, 0);
  });
});

test('bulk cancel: by queue, type and state, in slices, with one audit entry carrying the totals', async () => {
  await withEngine({}, async ({ engine }) => {
    const notices: CancelNotice[] = [];
    engine.onCancelRequested((n) => notices.push(...n));
    const many = Array.from({ length: 1000 }, () => job('q', { type: 'report' }));
    for (let i = 0; i < 6; i++) await engine.enqueueBatch(many);
    await engine.enqueueBatch([job('q', { type: 'email' }), job('q', { type: 'report', delayMs: 60_000 })]);
    await engine.enqueue(job('other', { type: 'report' }));
    const running = await engine.reserve({ queues: ['q'], maxJobs: 3, workerId: 'w2' });
    assert.equal(running.length, 3);

    assert.equal(await engine.countCancellable({ queue: 'q', type: 'report' }), 6001);
    assert.equal(await engine.countCancellable({ queue: 'q', type: 'report', states: ['leased'] }), 3);
    assert.equal(await engine.countCancellable({ queue: 'q', states: ['ready'] }), 5998);
    const audit = { actor: 'key:ops', action: 'jobs.cancel', target: 'queue:q' };
    const result = await engine.cancelJobs({ queue: 'q', type: 'report' }, audit);
    assert.deepEqual(result, { cancelled: 5998, cancelRequested: 3 });
    assert.deepEqual(notices.map((n) => n.jobId).sort(), running.map((j) => j.id).sort());
    const [other, q] = await engine.listQueues();
    assert.equal(q?.counts.cancelled, 5998);
    assert.equal(q?.counts.ready, 1, 'the email job is left');
    assert.equal(q?.counts.leased, 3);
    assert.equal(other?.counts.ready, 1);
    const entries = (await engine.listAudit({ action: 'jobs.cancel' })).items;
    assert.equal(entries.length, 1);
    const { operationId, ...details } = entries[0]?.details ?? {};
    assert.equal(typeof operationId, 'string');
    assert.deepEqual(details, {
      queue: 'q',
      type: 'report',
      states: ['scheduled', 'ready', 'leased'],
      matched: 6001,
      changed: 6001,
      cancelRequested: 3,
      done: true,
    });
    assert.equal(engine.getBulkOperation(String(operationId)).state, 'done');
    // Nothing left to cancel: a repeat changes nothing.
    assert.equal(await engine.countCancellable({ queue: 'q', type: 'report' }), 0);
    assert.deepEqual(await engine.cancelJobs({ queue: 'q', type: 'report' }), {
      cancelled: 0,
      cancelRequested: 0,
    });
  });
});

test('bulk cancel refuses a filter it cannot apply, naming the field', async () => {
  await withEngine({}, async ({ engine }) => {
    await expectCode(engine.cancelJobs({ queue: 'q' }), 'not_found');
    await engine.enqueue({ queue: 'q', type: 't', payload: Buffer.from('{}') });
    const dead = await expectCode(engine.cancelJobs({ queue: 'q', states: ['dead'] }), 'invalid_argument');
    assert.match(dead.message, /states: dead jobs cannot be cancelled; give any of scheduled, ready, leased/);
    await expectCode(engine.cancelJobs({ queue: 'bad queue' }), 'invalid_argument');
    await expectCode(engine.cancelJobs({ queue: 'q', type: 'bad type' }), 'invalid_argument');
    await assert.rejects(
      async () => engine.countCancellable({ queue: 'q', states: ['completed'] }),
      /cannot be cancelled/,
    );
  });
});

test('cancel of a job never leased before: no attempt was used, the payload is kept for forensics', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId } = await engine.enqueue({ queue: 'q', type: 't', payload: bytes('keep me') });
    await engine.cancel(jobId, ops);
    const info = await engine.getJob(jobId);
    assert.equal(info.attempt, 0);
    assert.equal(info.payload.toString(), 'keep me');
  });
});

test('a cancelled running job frees its max_leased and group slots at once and is a cancelled event; an expired one is dead_lettered', async () => {
  const options = withQueues({ q: { maxLeased: 1, groupMaxLeased: 1 }, ttl: {} });
  await withEngine({ options }, async ({ engine, clock }) => {
    const events = collect(engine);
    await engine.enqueueBatch([job('q', { group: 'g' }), job('q', { group: 'g' })]);
    const [running] = await engine.reserve({ queues: ['q'], maxJobs: 2 });
    assert.ok(running);
    // The limits hold the second job back: a reserve waits, throttled.
    const waiting = engine.reserve({ queues: ['q'], waitMs: 60_000 });
    await until(engine, () => engine.waitingReserves === 1);
    await engine.cancel(running.id);
    // The worker answers the cancel with a nack: the job ends cancelled, and its slots are free.
    await engine.nack({
      jobId: running.id,
      attempt: 1,
      error: 'stopped',
      directive: { kind: 'delay', delayMs: 0 },
    });
    assert.equal((await engine.getJob(running.id)).state, 'cancelled');
    const [next] = await waiting;
    assert.ok(next, 'the waiting reserve got the group’s next job');
    assert.notEqual(next.id, running.id);

    const expiring = await engine.enqueue(job('ttl', { ttlMs: 1000 }));
    clock.advance(2000);
    assert.deepEqual(await engine.reserve({ queues: ['ttl'] }), []);
    const mine = events.events.filter((e) => e.jobId === running.id || e.jobId === expiring.jobId);
    assert.deepEqual(
      mine.map((e) => [e.kind, 'previousState' in e ? e.previousState : 'reason' in e ? e.reason : '']),
      [
        ['enqueued', ''],
        ['leased', ''],
        ['cancelled', 'leased'],
        ['enqueued', ''],
        ['dead_lettered', 'expired'],
      ],
    );
  });
});
