/**
 * What schedules do when things are not on time, on the engine's fake clock:
 * misfire policies (the server down, or asleep, across ticks), overlap,
 * pause and resume, trigger-now, jitter, the template's lease, and the
 * events and audit entries they leave.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import type { ScheduleEvent } from '../../src/engine/schedules/types.ts';
import { withEngine } from '../helpers/engine.ts';
import { iso, jump, runFor, spec, tickJobs } from '../helpers/schedules.ts';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const start = Date.UTC(2026, 0, 1, 10, 0, 30);
const at = (h: number, m: number) => iso(Date.UTC(2026, 0, 1, h, m));

test('misfire run_latest (the default): after a long sleep, the latest missed tick runs once', async () => {
  const events: ScheduleEvent[] = [];
  const deps = { onScheduleEvent: (e: ScheduleEvent) => events.push(e) };
  await withEngine({ clock: new FakeClock(start), deps }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('m'), 'create');
    await jump(engine, clock, 5 * MINUTE_MS); // 10:05:30: ticks 10:01 … 10:05 are due at once
    assert.deepEqual(
      tickJobs(db).map((j) => j.tick),
      [at(10, 5)],
    );
    const info = await engine.getSchedule('m');
    assert.equal(info.lastOutcome, 'enqueued');
    assert.equal(info.ticksEnqueued, 1);
    assert.equal(info.ticksSkipped, 4);
    assert.match(info.lastDetail ?? '', /4 missed ticks skipped \(misfire run_latest\)/);
    assert.equal(info.nextTickMs, Date.UTC(2026, 0, 1, 10, 6));
    assert.deepEqual(
      events.map((e) => [e.kind, e.count, e.kind === 'tick_skipped' ? e.reason : e.queue]),
      [
        ['tick_enqueued', 1, 'q'],
        ['tick_skipped', 4, 'misfire'],
      ],
    );
  });
});

test('misfire across a restart: ticks due while the server was down follow the policy when it opens', async () => {
  await withEngine({ clock: new FakeClock(start) }, async (t) => {
    await t.engine.putSchedule(spec('latest'), 'create');
    await t.engine.putSchedule(spec('catch-up', { misfire: 'catch_up', catchUpMax: 3 }), 'create');
    await t.engine.putSchedule(spec('skip', { cron: '0 * * * *', misfire: 'skip' }), 'create');
    t.engine.close();
    t.clock.advance(2 * HOUR_MS + 10 * MINUTE_MS); // down until 12:10:30
    const reopened = await t.reopen();
    await jump(reopened.engine, reopened.clock, 0);
    assert.deepEqual(
      tickJobs(reopened.db, 'latest').map((j) => j.tick),
      [at(12, 10)],
    );
    // The 3 most recent missed ticks, oldest first, each with its own job; older ones skipped.
    assert.deepEqual(
      tickJobs(reopened.db, 'catch-up').map((j) => j.tick),
      [at(12, 8), at(12, 9), at(12, 10)],
    );
    assert.equal((await reopened.engine.getSchedule('catch-up')).ticksSkipped, 130 - 3);
    // 11:00 and 12:00 were missed, and 12:00 is 10 minutes late: skip runs neither.
    assert.deepEqual(tickJobs(reopened.db, 'skip'), []);
    const skipped = await reopened.engine.getSchedule('skip');
    assert.equal(skipped.lastOutcome, 'skipped_misfire');
    assert.equal(skipped.ticksSkipped, 2);
    assert.equal(skipped.nextTickMs, Date.UTC(2026, 0, 1, 13));
    return reopened;
  });
});

test('misfire skip still runs a tick that is only a little late (within the minute of grace)', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('s', { misfire: 'skip' }), 'create');
    await jump(engine, clock, 3 * MINUTE_MS); // 10:03:30: 10:03 is 30 s late, 10:01 and 10:02 missed
    assert.deepEqual(
      tickJobs(db).map((j) => j.tick),
      [at(10, 3)],
    );
    assert.equal((await engine.getSchedule('s')).ticksSkipped, 2);
  });
});

test('overlap skip: no new job while the last one is ready or leased; the next tick after it finishes runs', async () => {
  const events: ScheduleEvent[] = [];
  const deps = { onScheduleEvent: (e: ScheduleEvent) => events.push(e) };
  await withEngine({ clock: new FakeClock(start), deps }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('o', { overlap: 'skip' }), 'create');
    await engine.putSchedule(
      spec('a', { template: { queue: 'other', type: 't', payload: new Uint8Array() } }),
      'create',
    );
    await runFor(engine, clock, MINUTE_MS); // 10:01: a job
    assert.equal(tickJobs(db, 'o').length, 1);
    await runFor(engine, clock, MINUTE_MS); // 10:02: the 10:01 job is still ready
    assert.equal(tickJobs(db, 'o').length, 1);
    const skipped = await engine.getSchedule('o');
    assert.equal(skipped.lastOutcome, 'skipped_overlap');
    assert.match(skipped.lastDetail ?? '', /still ready/);
    const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 10 * MINUTE_MS });
    assert.ok(leased);
    await runFor(engine, clock, MINUTE_MS); // 10:03: leased now
    assert.equal(tickJobs(db, 'o').length, 1);
    await engine.ack({ jobId: leased.id, attempt: leased.attempt });
    await runFor(engine, clock, MINUTE_MS); // 10:04: done, so a new job
    // The acked 10:01 job is gone; 10:04 has the new one.
    assert.deepEqual(
      tickJobs(db, 'o').map((j) => j.tick),
      [at(10, 4)],
    );
    assert.equal((await engine.getSchedule('o')).ticksSkipped, 2);
    assert.equal((await engine.getSchedule('o')).ticksEnqueued, 2);
    // overlap allow (the default) enqueues every tick whatever the last job does.
    assert.equal(tickJobs(db, 'a').length, 4);
    assert.deepEqual(
      events.filter((e) => e.kind === 'tick_skipped').map((e) => e.kind === 'tick_skipped' && e.reason),
      ['overlap', 'overlap'],
    );
  });
});

test('pause and resume: no ticks while paused; on resume the missed ones follow the misfire policy', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('p', { misfire: 'catch_up', catchUpMax: 2 }), 'create');
    const paused = await engine.pauseSchedule('p');
    assert.equal(paused.paused, true);
    await runFor(engine, clock, 4 * MINUTE_MS, 10_000);
    assert.deepEqual(tickJobs(db), []);
    const resumed = await engine.resumeSchedule('p');
    assert.equal(resumed.paused, false);
    await jump(engine, clock, 0); // the resume pulled the maintenance timer forward
    assert.deepEqual(
      tickJobs(db).map((j) => j.tick),
      [at(10, 3), at(10, 4)],
    );
    await runFor(engine, clock, MINUTE_MS, 10_000);
    assert.deepEqual(
      tickJobs(db).map((j) => j.tick),
      [at(10, 3), at(10, 4), at(10, 5)],
    );
    assert.equal((await engine.getSchedule('p')).ticksSkipped, 2);
  });
});

test('trigger enqueues the template now, paused or not, without moving the cursor', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('t', { overlap: 'skip' }), 'create');
    await engine.pauseSchedule('t');
    const accepted = await engine.triggerSchedule('t', {
      actor: 'alice',
      action: 'schedule.trigger',
      target: 'schedule:t',
    });
    assert.equal(accepted.deduplicated, false);
    const [job] = tickJobs(db);
    assert.equal(job?.id, accepted.jobId);
    assert.equal(job?.key, `schedule:t:manual:${iso(start)}`);
    assert.equal(job?.runAtMs, start);
    const info = await engine.getSchedule('t');
    assert.equal(info.lastOutcome, 'triggered');
    assert.equal(info.lastDetail, 'by alice');
    assert.equal(info.lastJobId, accepted.jobId);
    assert.equal(info.nextTickMs, Date.UTC(2026, 0, 1, 10, 1));
    assert.equal(info.ticksEnqueued, 0, 'a trigger is not a tick');
    // The triggered job counts for overlap: the next tick finds it ready.
    await engine.resumeSchedule('t');
    await runFor(engine, clock, MINUTE_MS);
    assert.equal(tickJobs(db).length, 1);
    assert.equal((await engine.getSchedule('t')).lastOutcome, 'skipped_overlap');
    const [audit] = (await engine.listAudit({ action: 'schedule.trigger' })).items;
    assert.deepEqual(audit?.details, { jobId: accepted.jobId, deduplicated: false });
  });
});

test('a tick whose job enqueue refuses (a full queue) is skipped as rejected, and the schedule goes on', async () => {
  await withEngine(
    { clock: new FakeClock(start), options: { queues: { q: { maxDepth: 1 } } } },
    async ({ engine, clock, db }) => {
      await engine.putSchedule(spec('full'), 'create');
      await runFor(engine, clock, 2 * MINUTE_MS);
      assert.equal(tickJobs(db).length, 1);
      const info = await engine.getSchedule('full');
      assert.equal(info.lastOutcome, 'rejected');
      assert.match(info.lastDetail ?? '', /^queue_full: queue q holds 1 unfinished jobs/);
      assert.equal(info.nextTickMs, Date.UTC(2026, 0, 1, 10, 3));
    },
  );
});

test('jitter delays each job by up to jitter_ms after its tick; the template lease and fields reach the job', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    await engine.putSchedule(
      spec('j', {
        jitterMs: 20_000,
        template: {
          queue: 'q',
          type: 'report',
          payload: Buffer.from('{"n":1}'),
          contentType: 'application/json',
          priority: 7,
          metadata: { team: 'ops' },
          maxAttempts: 2,
          leaseMs: 600_000,
          timeoutMs: 900_000,
        },
      }),
      'create',
    );
    assert.equal((await engine.getSchedule('j')).template.timeoutMs, 900_000);
    await runFor(engine, clock, 5 * MINUTE_MS);
    const jobs = tickJobs(db);
    assert.equal(jobs.length, 5);
    const delays = jobs.map((j) => j.runAtMs - Date.parse(j.tick));
    assert.ok(
      delays.every((d) => d >= 0 && d <= 20_000),
      `delays ${delays}`,
    );
    assert.ok(new Set(delays).size > 1, `the delays differ: ${delays}`);
    const info = await engine.getJob(jobs[0]?.id ?? '');
    assert.equal(info.type, 'report');
    assert.equal(info.priority, 7);
    assert.equal(info.maxAttempts, 2);
    assert.deepEqual(info.metadata, { team: 'ops' });
    assert.equal(info.contentType, 'application/json');
    assert.equal(info.timeoutMs, 900_000, "the template's timeout_ms reaches the job");
    assert.equal(jobs[0]?.leaseMs, 600_000);
    // The job's lease: a reserve asking for 30 s gets the template's 10 minutes.
    await jump(engine, clock, 30_000);
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 10, leaseMs: 30_000 });
    assert.ok(leased.length > 0);
    for (const l of leased) assert.equal(l.leaseDeadlineMs, clock.nowMs() + 600_000);
  });
});

test('a job lease_ms is a floor on its lease, and the queue max_lease_ms caps it', async () => {
  await withEngine(
    { options: { queues: { capped: { maxLeaseMs: 120_000 } } } },
    async ({ engine, clock }) => {
      const long = await engine.enqueue({
        queue: 'q',
        type: 't',
        payload: new Uint8Array(),
        leaseMs: 300_000,
      });
      const capped = await engine.enqueue({
        queue: 'capped',
        type: 't',
        payload: new Uint8Array(),
        leaseMs: 300_000,
      });
      await engine.enqueue({ queue: 'q', type: 'plain', payload: new Uint8Array() });
      const nowMs = clock.nowMs();
      const leased = await engine.reserve({ queues: ['q', 'capped'], maxJobs: 3, leaseMs: 10_000 });
      const deadline = (id: string) => leased.find((l) => l.id === id)?.leaseDeadlineMs;
      assert.equal(deadline(long.jobId), nowMs + 300_000);
      assert.equal(deadline(capped.jobId), nowMs + 120_000);
      assert.equal(leased.find((l) => l.type === 'plain')?.leaseDeadlineMs, nowMs + 10_000);
      // A reserve asking for more than the job's lease gets what it asked for.
      const again = await engine.enqueue({ queue: 'q', type: 't', payload: new Uint8Array(), leaseMs: 5000 });
      const [more] = await engine.reserve({ queues: ['q'], leaseMs: 60_000 });
      assert.equal(more?.id, again.jobId);
      assert.equal(more?.leaseDeadlineMs, nowMs + 60_000);
    },
  );
});
