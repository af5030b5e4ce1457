/**
 * When schedules tick, on the engine's fake clock with the maintenance timer
 * doing the work (no runMaintenance): minutely, hourly, 6-field seconds,
 * fixed intervals, start and end, and daylight saving time in Europe/Berlin
 * (March's spring forward and October's fall back), each tick enqueued once
 * with its idempotency key and run-at.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { withEngine } from '../helpers/engine.ts';
import { iso, jump, runFor, spec, tickJobs } from '../helpers/schedules.ts';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
const start = Date.UTC(2026, 0, 1, 10, 0, 30);

test('a minutely cron schedule enqueues one job per minute, at the minute, keyed by its tick', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    const { schedule, created } = await engine.putSchedule(spec('every-minute'), 'create');
    assert.equal(created, true);
    assert.equal(schedule.nextTickMs, Date.UTC(2026, 0, 1, 10, 1));
    assert.deepEqual((await engine.getSchedule('every-minute', 3)).nextRunsMs, [
      Date.UTC(2026, 0, 1, 10, 1),
      Date.UTC(2026, 0, 1, 10, 2),
      Date.UTC(2026, 0, 1, 10, 3),
    ]);
    await runFor(engine, clock, 3 * MINUTE_MS);
    const jobs = tickJobs(db);
    assert.deepEqual(
      jobs.map((j) => j.key),
      [1, 2, 3].map((m) => `schedule:every-minute:${iso(Date.UTC(2026, 0, 1, 10, m))}`),
    );
    for (const j of jobs) {
      // The timer woke at the tick itself: enqueued and due at the tick, not a poll later.
      assert.equal(j.enqueuedAtMs, Date.parse(j.tick));
      assert.equal(j.runAtMs, Date.parse(j.tick));
      assert.equal(j.state, 'ready');
    }
    const info = await engine.getSchedule('every-minute');
    assert.equal(info.ticksEnqueued, 3);
    assert.equal(info.ticksSkipped, 0);
    assert.equal(info.lastOutcome, 'enqueued');
    assert.equal(info.lastJobId, jobs[2]?.id);
    assert.equal(info.lastTickMs, Date.UTC(2026, 0, 1, 10, 3));
    assert.equal(info.nextTickMs, Date.UTC(2026, 0, 1, 10, 4));
    assert.equal((await engine.findJobByIdempotencyKey('q', jobs[0]?.key ?? ''))?.jobId, jobs[0]?.id);
  });
});

test('an hourly schedule sleeps until its tick: the timer wakes at the hour, not before', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('hourly', { cron: '0 * * * *' }), 'create');
    await jump(engine, clock, Date.UTC(2026, 0, 1, 10, 59, 59, 999) - start);
    assert.equal(tickJobs(db).length, 0);
    await jump(engine, clock, 1);
    assert.deepEqual(
      tickJobs(db).map((j) => [j.tick, j.enqueuedAtMs]),
      [[iso(Date.UTC(2026, 0, 1, 11)), Date.UTC(2026, 0, 1, 11)]],
    );
    await runFor(engine, clock, 2 * HOUR_MS, MINUTE_MS);
    assert.deepEqual(
      tickJobs(db).map((j) => j.tick),
      [11, 12, 13].map((h) => iso(Date.UTC(2026, 0, 1, h))),
    );
  });
});

test('a 6-field expression ticks on seconds', async () => {
  await withEngine(
    { clock: new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 0)) },
    async ({ engine, clock, db }) => {
      await engine.putSchedule(spec('ten-seconds', { cron: '*/10 * * * * *' }), 'create');
      await runFor(engine, clock, 45_000);
      assert.deepEqual(
        tickJobs(db).map((j) => j.tick),
        [10, 20, 30, 40].map((s) => iso(Date.UTC(2026, 0, 1, 10, 0, s))),
      );
    },
  );
});

test('an interval schedule ticks every interval from its creation, or on start + k × interval', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    await engine.putSchedule(spec('every-90s', { cron: undefined, intervalMs: 90_000 }), 'create');
    const startAtMs = start + 10 * MINUTE_MS;
    await engine.putSchedule(
      spec('from-start', {
        cron: undefined,
        intervalMs: 5 * MINUTE_MS,
        startAtMs,
        endAtMs: startAtMs + 12 * MINUTE_MS,
      }),
      'create',
    );
    await runFor(engine, clock, 30 * MINUTE_MS, 10_000);
    assert.deepEqual(
      tickJobs(db, 'every-90s').map((j) => j.enqueuedAtMs),
      Array.from({ length: 20 }, (_, k) => start + (k + 1) * 90_000),
    );
    // start, +5 and +10 minutes; +15 is past the end.
    assert.deepEqual(
      tickJobs(db, 'from-start').map((j) => j.enqueuedAtMs),
      [0, 5, 10].map((m) => startAtMs + m * MINUTE_MS),
    );
    const ended = await engine.getSchedule('from-start');
    assert.equal(ended.nextTickMs, null, 'no tick comes after the end');
    assert.deepEqual(ended.nextRunsMs, []);
  });
});

test('a cron schedule with a start and an end ticks only between them', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock, db }) => {
    const startAtMs = Date.UTC(2026, 0, 1, 10, 5);
    await engine.putSchedule(spec('window', { startAtMs, endAtMs: Date.UTC(2026, 0, 1, 10, 8) }), 'create');
    assert.equal(
      (await engine.getSchedule('window')).nextTickMs,
      startAtMs,
      'a tick exactly at the start counts',
    );
    await runFor(engine, clock, 15 * MINUTE_MS, 10_000);
    assert.deepEqual(
      tickJobs(db).map((j) => j.tick),
      [5, 6, 7].map((m) => iso(Date.UTC(2026, 0, 1, 10, m))),
    );
  });
});

test('Europe/Berlin, spring forward (29 March 2026): 02:30 runs at 03:00, hourly ticks skip the missing hour', async () => {
  const clock = new FakeClock(Date.UTC(2026, 2, 28, 22, 0)); // 23:00 CET on the 28th
  await withEngine({ clock }, async ({ engine, db }) => {
    await engine.putSchedule(spec('nightly', { cron: '30 2 * * *', timezone: 'Europe/Berlin' }), 'create');
    await engine.putSchedule(spec('hourly', { cron: '0 * * * *', timezone: 'Europe/Berlin' }), 'create');
    assert.deepEqual((await engine.getSchedule('nightly', 3)).nextRunsMs.map(iso), [
      '2026-03-29T01:00:00.000Z', // 03:00 CEST: 02:30 does not exist that night
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
    await runFor(engine, clock, 6 * HOUR_MS, MINUTE_MS);
    assert.deepEqual(
      tickJobs(db, 'hourly').map((j) => j.tick),
      // 00:00 and 01:00 CET, then 03:00, 04:00 … CEST: one hour apart, 02:00 never happened.
      ['28T23', '29T00', '29T01', '29T02', '29T03', '29T04'].map((t) => `2026-03-${t}:00:00.000Z`),
    );
    assert.deepEqual(
      tickJobs(db, 'nightly').map((j) => j.tick),
      ['2026-03-29T01:00:00.000Z'],
    );
  });
});

test('Europe/Berlin, fall back (25 October 2026): 02:30 runs once, hourly ticks run on both 02:00s', async () => {
  const clock = new FakeClock(Date.UTC(2026, 9, 24, 22, 30)); // 00:30 CEST on the 25th
  await withEngine({ clock }, async ({ engine, db }) => {
    await engine.putSchedule(spec('nightly', { cron: '30 2 * * *', timezone: 'Europe/Berlin' }), 'create');
    await engine.putSchedule(spec('hourly', { cron: '0 * * * *', timezone: 'Europe/Berlin' }), 'create');
    await runFor(engine, clock, 5 * HOUR_MS, MINUTE_MS);
    assert.deepEqual(
      tickJobs(db, 'hourly').map((j) => j.tick),
      // 01:00 CEST, 02:00 CEST, 02:00 CET (the repeated hour), 03:00 CET, 04:00 CET.
      [
        '2026-10-24T23:00',
        '2026-10-25T00:00',
        '2026-10-25T01:00',
        '2026-10-25T02:00',
        '2026-10-25T03:00',
      ].map((t) => `${t}:00.000Z`),
    );
    assert.deepEqual(
      tickJobs(db, 'nightly').map((j) => j.tick),
      ['2026-10-25T00:30:00.000Z'],
    );
    assert.equal(
      (await engine.getSchedule('nightly')).nextTickMs,
      Date.UTC(2026, 9, 26, 1, 30),
      '02:30 CET next day',
    );
  });
});

test('a cron expression without a timezone is read in UTC', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine }) => {
    const { schedule } = await engine.putSchedule(spec('daily', { cron: '0 3 * * *' }), 'create');
    assert.equal(schedule.timezone, 'UTC');
    assert.equal(schedule.nextTickMs, Date.UTC(2026, 0, 2, 3));
    assert.deepEqual((await engine.getSchedule('daily', 2)).nextRunsMs, [
      Date.UTC(2026, 0, 2, 3),
      Date.UTC(2026, 0, 3, 3),
    ]);
  });
});
