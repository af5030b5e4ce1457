/**
 * Schedules and workers in depth (issue 36, item 5), on the engine's fake clock: a
 * schedule's run history (the latest 20 runs, a trigger among them, gone with the
 * schedule, kept across a restart) and each worker id's attempts completed and failed
 * over the last 15 minutes (bounded in memory).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { WorkerActivity } from '../../src/engine/operators/index.ts';
import { job, withEngine } from '../helpers/engine.ts';
import { jump, spec } from '../helpers/schedules.ts';

const minute = 60_000;

test("a schedule's runs: each tick and trigger with its outcome and job, the latest 20, across a restart", async () => {
  await withEngine({ clock: new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30)) }, async (t) => {
    const { engine, clock } = t;
    await engine.putSchedule(spec('m'), 'create');
    for (let i = 0; i < 3; i++) await jump(engine, clock, minute);
    await engine.triggerSchedule('m', { actor: 'alice', action: 'schedule.trigger', target: 'schedule:m' });
    let runs = await engine.scheduleRuns('m');
    assert.deepEqual(
      runs.map((r) => [r.outcome, r.tickMs === null ? null : new Date(r.tickMs).toISOString().slice(11, 16)]),
      [
        ['triggered', null],
        ['enqueued', '10:03'],
        ['enqueued', '10:02'],
        ['enqueued', '10:01'],
      ],
    );
    assert.match(runs[0]!.detail ?? '', /by alice/);
    for (const run of runs) assert.equal((await engine.getJob(run.jobId!)).queue, 'q');
    // Bounded: 25 more ticks, the latest 20 runs are kept.
    for (let i = 0; i < 25; i++) await jump(engine, clock, minute);
    runs = await engine.scheduleRuns('m');
    assert.equal(runs.length, 20);
    assert.equal(runs[0]!.tickMs, Date.UTC(2026, 0, 1, 10, 28));
    assert.equal(t.db.prepare('SELECT count(*) FROM schedule_runs').pluck().get(), 20);
    // A restart keeps them; deleting the schedule takes them along.
    const after = await t.reopen();
    assert.equal((await after.engine.scheduleRuns('m')).length, 20);
    await after.engine.deleteSchedule('m');
    assert.equal(after.db.prepare('SELECT count(*) FROM schedule_runs').pluck().get(), 0);
    await assert.rejects(after.engine.scheduleRuns('m'), /does not exist|not found/i);
    return after;
  });
});

test("a worker's attempts completed and failed over the last 15 minutes", async () => {
  await withEngine({}, async ({ engine, clock }) => {
    engine.workers.touch({ workerId: 'w1', address: '10.0.0.1:1', queues: ['q'] });
    engine.workers.touch({ workerId: 'w2', address: '10.0.0.2:1', queues: ['q'] });
    for (let i = 0; i < 4; i++) await engine.enqueue(job('q', { maxAttempts: 3 }));
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 3, workerId: 'w1' });
    assert.equal(leased.length, 3);
    await engine.ack({ jobId: leased[0]!.id, attempt: 1 });
    await engine.ackBatch([{ jobId: leased[1]!.id, attempt: 1 }]);
    await engine.nack({ jobId: leased[2]!.id, attempt: 1, error: 'boom' });
    const [other] = await engine.reserve({ queues: ['q'], workerId: 'w2' });
    await engine.ack({ jobId: other!.id, attempt: other!.attempt });
    const byId = async () =>
      new Map((await engine.listWorkers()).map((w) => [w.workerId, [w.completedRecent, w.failedRecent]]));
    assert.deepEqual(
      await byId(),
      new Map([
        ['w1', [2, 1]],
        ['w2', [1, 0]],
      ]),
    );
    assert.equal((await engine.listWorkers())[0]!.recentWindowMs, 15 * minute);
    clock.advance(10 * minute);
    engine.workers.touch({ workerId: 'w1', address: '10.0.0.1:1', queues: ['q'] });
    engine.workers.touch({ workerId: 'w2', address: '10.0.0.2:1', queues: ['q'] });
    assert.deepEqual((await byId()).get('w1'), [2, 1], 'still within 15 minutes');
    clock.advance(6 * minute);
    engine.workers.touch({ workerId: 'w1', address: '10.0.0.1:1', queues: ['q'] });
    assert.deepEqual((await byId()).get('w1'), [0, 0], 'out of the window');
  });
});

test('worker activity is bounded: past maxWorkers the id whose last active minute is oldest is forgotten', () => {
  const clock = new FakeClock();
  const activity = new WorkerActivity(clock, 2);
  activity.record('a', 'completed');
  activity.record('b', 'completed');
  // Order is kept by minute of activity (moved once a minute, not at every ack).
  clock.advance(minute);
  activity.record('a', 'failed');
  activity.record('c', 'completed');
  assert.equal(activity.recent('b').completedRecent, 0, 'b was the least recently active');
  assert.deepEqual(activity.recent('a'), {
    completedRecent: 1,
    failedRecent: 1,
    recentWindowMs: 15 * minute,
  });
  assert.equal(activity.recent('c').completedRecent, 1);
});
