/** GET /api/v1/history over a real engine: the answer's shape, the window asked, no data before the start, bad input. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { HistoryAnswer } from '../../src/engine/history/index.ts';
import { enc, loggedIn, openTestAdmin, type TestAdmin, type TestClient } from '../helpers/admin.ts';

let admin: TestAdmin;
let viewer: TestClient;

beforeEach(async () => {
  admin = await openTestAdmin();
  viewer = await loggedIn(admin, 'viewer');
});
afterEach(() => admin.dispose());

test('history: per queue and type, over the window asked, with no data before the start', async () => {
  const { engine, clock } = admin.t;
  await engine.enqueue({ queue: 'emails', type: 'welcome', payload: enc('{}') });
  clock.advance(250);
  const [leased] = await engine.reserve({ queues: ['emails'] });
  clock.advance(1_500);
  await engine.ack({ jobId: leased!.id, attempt: leased!.attempt });
  clock.advance(60_000);
  await engine.flushHistory();

  const { status, body } = await viewer.get<HistoryAnswer>('/api/v1/history');
  assert.equal(status, 200);
  assert.equal(body.window, '1h');
  assert.equal(body.bucketMs, 60_000);
  assert.equal(body.toMs - body.fromMs, 3_600_000);
  assert.equal(body.buckets.filter((b) => b.coveredMs === 0).length, 59, 'before the start: no data');
  assert.deepEqual(
    body.types.map((t) => [t.queue, t.type, t.completed, t.failed, t.dead]),
    [['emails', 'welcome', 1, 0, 0]],
  );
  assert.ok(Math.abs(body.types[0]!.runP50Ms! - 1_500) < 135);
  assert.ok(Math.abs(body.types[0]!.waitP50Ms! - 250) < 23);

  const week = await viewer.get<HistoryAnswer>('/api/v1/history?window=7d&queue=emails');
  assert.equal(week.status, 200);
  assert.equal(week.body.bucketMs, 3_600_000);
  assert.equal(week.body.buckets.length, 168);
  assert.equal(week.body.total.completed, 1);
  const none = await viewer.get<HistoryAnswer>('/api/v1/history?window=24h&queue=nope');
  assert.equal(none.body.total.completed, 0);

  const bad = await viewer.get('/api/v1/history?window=2h');
  assert.equal(bad.status, 400);
  assert.match(bad.body.error!.message, /window/);
});
