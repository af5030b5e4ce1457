/** The admin API's schedules: list and detail, and an operator's pause, resume and trigger, audited. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { enc, loggedIn, openTestAdmin, type TestAdmin } from '../helpers/admin.ts';
import { runFor } from '../helpers/schedules.ts';

let admin: TestAdmin;
const clock = new FakeClock(Date.UTC(2026, 0, 1, 10, 0, 30));

before(async () => {
  admin = await openTestAdmin({
    engine: {
      clock,
      options: {
        schedules: [
          {
            name: 'nightly',
            cron: '30 2 * * *',
            timezone: 'Europe/Berlin',
            template: {
              queue: 'reports',
              type: 'nightly',
              payload: enc('{"a":1}'),
              contentType: 'application/json',
            },
          },
          {
            name: 'minutely',
            cron: '* * * * *',
            template: { queue: 'reports', type: 'm', payload: enc('') },
          },
        ],
      },
    },
  });
  await runFor(admin.t.engine, clock, 60_000);
});
after(() => admin.dispose());

interface ScheduleBody {
  name: string;
  paused: boolean;
  nextRunsMs: number[];
  lastOutcome: string | null;
  template: { payload: { view: string; text: string } | null; payloadBytes: number };
}

test('the list shows every schedule with its next run and last outcome; the detail its payload and next runs', async () => {
  const viewer = await loggedIn(admin, 'viewer');
  const list = await viewer.request('GET', '/api/v1/schedules');
  assert.equal(list.status, 200);
  const schedules = (list.body as unknown as { schedules: ScheduleBody[] }).schedules;
  assert.deepEqual(
    schedules.map((s) => [s.name, s.nextRunsMs.length, s.lastOutcome, s.template.payload]),
    [
      ['minutely', 1, 'enqueued', null],
      ['nightly', 1, null, null],
    ],
  );
  const detail = await viewer.request('GET', '/api/v1/schedules/nightly');
  const body = detail.body as unknown as ScheduleBody;
  assert.equal(body.nextRunsMs.length, 10);
  assert.deepEqual(body.template.payload, {
    view: 'json',
    text: '{\n  "a": 1\n}',
    bytes: 7,
    truncated: false,
  });
  const missing = await viewer.request('GET', '/api/v1/schedules/none');
  assert.equal(missing.status, 404);
  assert.match(missing.body.error?.message ?? '', /schedule none does not exist/);
});

test('an operator pauses, resumes and triggers a schedule, each audited with their name', async () => {
  const operator = await loggedIn(admin, 'operator');
  const paused = await operator.request('POST', '/api/v1/schedules/minutely/pause', {});
  assert.equal(paused.status, 200);
  assert.equal((paused.body as unknown as ScheduleBody).paused, true);
  const resumed = await operator.request('POST', '/api/v1/schedules/minutely/resume', {});
  assert.equal((resumed.body as unknown as ScheduleBody).paused, false);
  const triggered = await operator.request('POST', '/api/v1/schedules/nightly/trigger', {});
  assert.equal(triggered.status, 200);
  const jobId = String(triggered.body.jobId);
  assert.equal(
    (await admin.t.engine.getJob(jobId)).idempotencyKey?.startsWith('schedule:nightly:manual:'),
    true,
  );
  const audit = (await admin.t.engine.listAudit({ actor: 'operator' })).items
    .filter((e) => e.action.startsWith('schedule.'))
    .map((e) => `${e.action} ${e.target}`);
  assert.deepEqual(audit.reverse(), [
    'schedule.pause schedule:minutely',
    'schedule.resume schedule:minutely',
    'schedule.trigger schedule:nightly',
  ]);
});
