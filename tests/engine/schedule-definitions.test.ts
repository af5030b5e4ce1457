/**
 * Schedule definitions: validation when a schedule is created (never at tick
 * time), create/update/upsert, the config's schedules reconciled when the
 * engine opens (added, updated, removed, adopted), the config's schedules
 * closed to API changes, the audit trail, and the schedule limit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import type { ReconcileReport, ScheduleSpec } from '../../src/engine/schedules/types.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import { bytes, expectCode, openTestEngine, rowCount, withEngine } from '../helpers/engine.ts';
import { runFor, spec, tickJobs } from '../helpers/schedules.ts';

const start = Date.UTC(2026, 0, 1, 10, 0, 30);
const tpl = (extra: Partial<ScheduleSpec['template']> = {}) => ({
  queue: 'q',
  type: 'tick',
  payload: bytes('x'),
  ...extra,
});

test('a definition is checked when created, each problem naming its field; nothing is stored', async () => {
  await withEngine(
    {
      clock: new FakeClock(start),
      options: {
        strictQueues: true,
        queues: { q: { allowedTypes: ['tick'], maxPayloadBytes: 8 } },
      },
    },
    async ({ engine, db }) => {
      const cases: [Partial<ScheduleSpec>, RegExp][] = [
        [{ name: 'bad name!' }, /^name: "bad name!" may use only/],
        [
          { cron: '61 * * * *' },
          /^cron: "61 \* \* \* \*" is not a cron expression sepp reads: Invalid value for minute: 61/,
        ],
        [{ cron: '* * * *' }, /^cron: .*exactly five, six, or seven/],
        [{ cron: '* * * * * * *' }, /^cron: .*5 or 6 parts/],
        [{ cron: '0 0 31 2 *' }, /^cron: "0 0 31 2 \*" never matches a date/],
        [{ cron: undefined }, /^cron: give a cron expression/],
        [{ cron: '* * * * *', intervalMs: 60_000 }, /^cron: give cron or interval_ms, not both/],
        [{ cron: undefined, intervalMs: 500 }, /^interval_ms: is 500; it must be an integer from 1000/],
        [{ timezone: 'Mars/Olympus' }, /^timezone: "Mars\/Olympus" is not an IANA timezone/],
        [
          { misfire: 'sometimes' as 'skip' },
          /^misfire: is "sometimes"; use one of run_latest, skip, catch_up/,
        ],
        [{ catchUpMax: 5 }, /^catch_up_max: applies only with misfire = catch_up/],
        [{ misfire: 'catch_up', catchUpMax: 5000 }, /^catch_up_max: is 5000/],
        [{ overlap: 'never' as 'skip' }, /^overlap: /],
        [{ jitterMs: -1 }, /^jitter_ms: /],
        [{ endAtMs: start - 1 }, /^end_at_ms: is in the past/],
        [{ startAtMs: start + 10, endAtMs: start + 5 }, /^end_at_ms: must be after start_at_ms/],
        [
          { template: tpl({ queue: 'undeclared' }) },
          /^template\.queue: queue undeclared is not declared and strict_queues is on/,
        ],
        [{ template: tpl({ queue: 'bad queue' }) }, /^template\.queue: queue "bad queue" may use only/],
        [{ template: tpl({ type: 'other' }) }, /^template: job type other is not allowed on queue q/],
        [
          { template: tpl({ payload: bytes('123456789') }) },
          /^template\.payload: payload is 9 bytes, the limit for queue q is 8 bytes/,
        ],
        [{ template: tpl({ priority: 10 }) }, /^template\.priority: priority is 10/],
        [{ template: tpl({ maxAttempts: 5000 }) }, /^template\.max_attempts: /],
        [{ template: tpl({ leaseMs: 10 }) }, /^template\.lease_ms: is 10/],
        [{ template: tpl({ timeoutMs: -1 }) }, /^template\.timeout_ms: timeout_ms is -1/],
        [
          { template: tpl({ metadata: { '': 'x' } }) },
          /^template\.metadata: metadata keys must not be empty/,
        ],
        [{ name: 'n'.repeat(129) }, /^name: is 129 characters long, the limit is 128/],
        // Past what a date can hold (8.64e15 ms), or past year 9999: refused, never shown as NaN.
        [
          { startAtMs: 9_000_000_000_000_000 },
          /^start_at_ms: is 9000000000000000, after 9999-12-31T23:59:59\.999Z, the latest time a schedule may name/,
        ],
        [{ startAtMs: 253_402_300_800_000 }, /^start_at_ms: is 253402300800000, after 9999-12-31/],
        [{ endAtMs: Number.MAX_SAFE_INTEGER }, /^end_at_ms: is 9007199254740991, after 9999-12-31/],
      ];
      for (const [extra, message] of cases) {
        const refused = await engine.putSchedule(spec('s', extra), 'create').then(
          () => assert.fail(`accepted: ${JSON.stringify(extra)}`),
          (error: unknown) => error,
        );
        const error = await expectCode(Promise.reject(refused), 'invalid_argument');
        assert.match(error.message, message, JSON.stringify(extra));
      }
      assert.equal(db.prepare<[], number>('SELECT count(*) FROM schedules').pluck().get(), 0);
      assert.deepEqual(await engine.listSchedules(), []);
      assert.equal(rowCount(db, 'jobs'), 0);
    },
  );
});

test('a name so long that the tick keys would pass max_idempotency_key_bytes is refused at creation', async () => {
  await withEngine(
    { options: { limits: { ...defaultEngineLimits, maxIdempotencyKeyBytes: 48 } } },
    async ({ engine }) => {
      const error = await expectCode(
        engine.putSchedule(spec('a-rather-long-schedule-name'), 'create'),
        'invalid_argument',
      );
      assert.match(error.message, /^template: the schedule's name makes its jobs' idempotency keys too long/);
      await engine.putSchedule(spec('short'), 'create');
    },
  );
});

test('create, update, upsert: existing and missing names, the cursor kept or restarted, pause kept', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine, clock }) => {
    await engine.putSchedule(spec('s', { cron: '0 * * * *' }), 'create');
    const exists = await expectCode(engine.putSchedule(spec('s'), 'create'), 'already_exists');
    assert.match(exists.message, /schedule s already exists; update it/);
    await expectCode(engine.putSchedule(spec('missing'), 'update'), 'not_found');
    await engine.pauseSchedule('s');
    clock.advance(30 * 60_000);
    // Only the template changes: the cursor stays at 11:00.
    const same = await engine.putSchedule(
      spec('s', { cron: '0 * * * *', template: tpl({ priority: 3 }) }),
      'update',
    );
    assert.equal(same.created, false);
    assert.equal(same.schedule.nextTickMs, Date.UTC(2026, 0, 1, 11));
    assert.equal(same.schedule.template.priority, 3);
    assert.equal(same.schedule.paused, true, 'an update does not resume');
    // A new timing starts again from now (10:30:30).
    const changed = await engine.putSchedule(spec('s', { cron: '*/15 * * * *' }), 'upsert');
    assert.equal(changed.schedule.nextTickMs, Date.UTC(2026, 0, 1, 10, 45));
    const created = await engine.putSchedule(spec('new'), 'upsert');
    assert.equal(created.created, true);
    assert.deepEqual(
      (await engine.listSchedules()).map((s) => [
        s.name,
        s.source,
        s.template.payload,
        s.template.payloadBytes,
      ]),
      [
        ['new', 'api', null, 2],
        ['s', 'api', null, 2],
      ],
    );
    await engine.deleteSchedule('new');
    await expectCode(engine.deleteSchedule('new'), 'not_found');
    assert.deepEqual(
      (await engine.listSchedules()).map((s) => s.name),
      ['s'],
    );
    await assert.rejects(
      async () => engine.getSchedule('s', 101),
      /next_runs is 101; it must be an integer from 0 to 100/,
    );
  });
});

test('every change over the API is audited in its own transaction', async () => {
  await withEngine({ clock: new FakeClock(start) }, async ({ engine }) => {
    const audit = (action: string) => ({ actor: 'ops-key', action, target: 'schedule:s' });
    await engine.putSchedule(spec('s'), 'create', audit('schedule.create'));
    await engine.pauseSchedule('s', audit('schedule.pause'));
    await engine.resumeSchedule('s', audit('schedule.resume'));
    await engine.putSchedule(spec('s', { cron: '0 * * * *' }), 'update', audit('schedule.update'));
    await engine.deleteSchedule('s', audit('schedule.delete'));
    // A refused change leaves no entry.
    await expectCode(
      engine.putSchedule(spec('s', { cron: 'nope' }), 'create', audit('schedule.create')),
      'invalid_argument',
    );
    const entries = (await engine.listAudit({ target: 'schedule:s' })).items.reverse();
    assert.deepEqual(
      entries.map((e) => [e.actor, e.action]),
      ['create', 'pause', 'resume', 'update', 'delete'].map((a) => ['ops-key', `schedule.${a}`]),
    );
    assert.equal(entries[0]?.details.created, true);
    assert.equal(entries[0]?.details.cron, '* * * * *');
    assert.equal(entries[1]?.details.wasPaused, false);
  });
});

test('config schedules are reconciled at every start: added, updated, removed, adopted, and logged as a report', async () => {
  const reports: ReconcileReport[] = [];
  const clock = new FakeClock(start);
  const deps = { onSchedulesReconciled: (r: ReconcileReport) => reports.push(r) };
  const first = [spec('nightly', { cron: '0 3 * * *' }), spec('minutely')];
  await withEngine({ clock, deps, options: { schedules: first } }, async (t) => {
    assert.deepEqual(reports.at(-1), {
      added: ['nightly', 'minutely'],
      updated: [],
      removed: [],
      adopted: [],
    });
    assert.deepEqual(
      (await t.engine.listSchedules()).map((s) => [s.name, s.source]),
      [
        ['minutely', 'config'],
        ['nightly', 'config'],
      ],
    );
    await runFor(t.engine, t.clock, 2 * 60_000);
    assert.equal(tickJobs(t.db, 'minutely').length, 2);
    await t.engine.pauseSchedule('minutely');
    await t.engine.putSchedule(spec('api-made', { cron: '0 * * * *' }), 'create');

    // The same config again: nothing changes, the cursor and the pause survive the restart.
    let t2 = await t.reopen();
    assert.deepEqual(reports.at(-1), { added: [], updated: [], removed: [], adopted: [] });
    assert.equal((await t2.engine.getSchedule('minutely')).paused, true);
    assert.equal((await t2.engine.getSchedule('minutely')).ticksEnqueued, 2);

    // nightly changes its time, minutely is gone, api-made is now declared, hourly is new.
    const second = [
      spec('nightly', { cron: '0 4 * * *' }),
      spec('api-made', { cron: '0 * * * *' }),
      spec('hourly', { cron: '30 * * * *' }),
    ];
    t2.engine.close();
    t2 = await openTestEngine({ clock, deps, dataDir: t.dataDir, options: { schedules: second } });
    assert.deepEqual(reports.at(-1), {
      added: ['hourly'],
      updated: ['nightly'],
      removed: ['minutely'],
      adopted: ['api-made'],
    });
    assert.equal((await t2.engine.getSchedule('nightly')).nextTickMs, Date.UTC(2026, 0, 2, 4));
    assert.equal((await t2.engine.getSchedule('api-made')).source, 'config');
    // The jobs minutely enqueued stay.
    assert.equal(tickJobs(t2.db, 'minutely').length, 2);
    const actions = (await t2.engine.listAudit({ actor: 'config' })).items
      .map((e) => `${e.action} ${e.target}`)
      .reverse();
    assert.deepEqual(actions, [
      'schedule.create schedule:nightly',
      'schedule.create schedule:minutely',
      'schedule.update schedule:nightly',
      'schedule.update schedule:api-made',
      'schedule.create schedule:hourly',
      'schedule.delete schedule:minutely',
    ]);
    return t2;
  });
});

test('a config schedule whose end has passed is kept with no next tick, and the engine still opens', async () => {
  const ended = spec('ended', { startAtMs: start - 3_600_000, endAtMs: start - 60_000 });
  await withEngine({ clock: new FakeClock(start), options: { schedules: [ended] } }, async ({ engine }) => {
    const info = await engine.getSchedule('ended');
    assert.equal(info.nextTickMs, null);
    assert.deepEqual(info.nextRunsMs, []);
    // Over the API the same end is a mistake.
    const error = await expectCode(
      engine.putSchedule({ ...ended, name: 'api-ended' }, 'create'),
      'invalid_argument',
    );
    assert.match(error.message, /^end_at_ms: is in the past/);
  });
});

test('a config schedule cannot be changed or deleted over the API (FAILED_PRECONDITION says why); pause, resume and trigger work', async () => {
  await withEngine(
    { clock: new FakeClock(start), options: { schedules: [spec('from-config')] } },
    async ({ engine }) => {
      for (const attempt of [
        engine.putSchedule(spec('from-config', { cron: '0 * * * *' }), 'update'),
        engine.putSchedule(spec('from-config'), 'upsert'),
        engine.putSchedule(spec('from-config'), 'create'),
        engine.deleteSchedule('from-config'),
      ]) {
        const error = await expectCode(attempt, 'failed_precondition');
        assert.match(error.message, /declared in the config file \(\[\[schedules\]\] in sepp\.toml\)/);
      }
      assert.equal((await engine.pauseSchedule('from-config')).paused, true);
      assert.equal((await engine.resumeSchedule('from-config')).paused, false);
      await engine.triggerSchedule('from-config');
    },
  );
});

test('limits.max_schedules bounds how many schedules the server keeps', async () => {
  await withEngine(
    { clock: new FakeClock(start), options: { limits: { ...defaultEngineLimits, maxSchedules: 2 } } },
    async ({ engine }) => {
      await engine.putSchedule(spec('a'), 'create');
      await engine.putSchedule(spec('b'), 'create');
      const error = await expectCode(engine.putSchedule(spec('c'), 'create'), 'resource_exhausted');
      assert.match(error.message, /keeps 2 schedules, its limit \(limits\.max_schedules\)/);
      await engine.putSchedule(spec('a', { cron: '0 * * * *' }), 'update');
    },
  );
  // The config's schedules are stored at start even when API schedules fill the limit.
  await withEngine(
    { clock: new FakeClock(start), options: { limits: { ...defaultEngineLimits, maxSchedules: 1 } } },
    async (t) => {
      await t.engine.putSchedule(spec('api-made'), 'create');
      t.engine.close();
      const reopened = await openTestEngine({
        clock: t.clock,
        dataDir: t.dataDir,
        options: { limits: { ...defaultEngineLimits, maxSchedules: 1 }, schedules: [spec('from-config')] },
      });
      assert.deepEqual(
        (await reopened.engine.listSchedules()).map((s) => s.name),
        ['api-made', 'from-config'],
      );
      await expectCode(reopened.engine.putSchedule(spec('another'), 'create'), 'resource_exhausted');
      return reopened;
    },
  );
});
