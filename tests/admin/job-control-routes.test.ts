/** The admin API's job control: change a waiting job, cancel or run now every job a filter matches; all audited. */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { AuditEntry } from '../../src/engine/admin-types.ts';
import { enc, loggedIn, openTestAdmin, type TestAdmin, type TestClient } from '../helpers/admin.ts';

let admin: TestAdmin;
let op: TestClient;

beforeEach(async () => {
  admin = await openTestAdmin();
  op = await loggedIn(admin, 'operator');
});
afterEach(() => admin.dispose());

const lastAudit = async (): Promise<AuditEntry> =>
  (await admin.t.engine.listAudit({ pageSize: 1 })).items[0]!;

test('update one job: priority and run now; a leased job is 409, a bad value 400', async () => {
  const { jobId } = await admin.t.engine.enqueue({
    queue: 'q',
    type: 't',
    payload: enc('x'),
    delayMs: 60_000,
  });
  const reply = await op.post(`/api/v1/jobs/${jobId}/update`, { priority: 6, runNow: true });
  assert.equal(reply.status, 200);
  assert.equal(reply.body.state, 'ready');
  assert.equal(reply.body.priority, 6);
  assert.deepEqual([(await lastAudit()).action, (await lastAudit()).target], ['job.update', `job:${jobId}`]);
  assert.equal((await lastAudit()).details.via, 'admin');
  assert.equal((await op.post(`/api/v1/jobs/${jobId}/update`, { priority: 12 })).status, 400);
  assert.equal((await op.post(`/api/v1/jobs/${jobId}/update`, {})).status, 400);
  await admin.t.engine.reserve({ queues: ['q'] });
  const leased = await op.post(`/api/v1/jobs/${jobId}/update`, { priority: 1 });
  assert.equal(leased.status, 409);
  assert.match(leased.body.error?.message ?? '', /running job cannot be changed/);
});

test('cancel all matching: a dry run counts, the cancel reports what it did, one audit entry', async () => {
  const engine = admin.t.engine;
  for (let i = 0; i < 5; i++)
    await engine.enqueue({ queue: 'q', type: i < 3 ? 'report' : 'email', payload: enc('x') });
  await engine.reserve({ queues: ['q'], maxJobs: 1 }); // a report job is running
  const auditsBefore = (await engine.listAudit({})).items.length;
  const dry = await op.post('/api/v1/queues/q/jobs/cancel', { type: 'report', dryRun: true });
  assert.deepEqual(dry.body, { cancelled: 0, cancelRequested: 0, matched: 3 });
  assert.equal(
    (await engine.listAudit({})).items.length,
    auditsBefore,
    'a dry run changes nothing and is not audited',
  );
  const done = await op.post('/api/v1/queues/q/jobs/cancel', { type: 'report', states: ['ready', 'leased'] });
  assert.deepEqual(done.body, { cancelled: 2, cancelRequested: 1, matched: 0 });
  assert.equal((await lastAudit()).action, 'jobs.cancel');
  assert.equal((await lastAudit()).target, 'queue:q');
  assert.equal((await lastAudit()).details.changed, 3);
  assert.equal((await lastAudit()).details.cancelRequested, 1);
  const q = (await engine.listQueues())[0];
  assert.equal(q?.counts.cancelled, 2);
  assert.equal(q?.counts.ready, 2);
  assert.equal((await op.post('/api/v1/queues/q/jobs/cancel', { states: ['dead'] })).status, 400);
  assert.equal((await op.post('/api/v1/queues/bad%20name/jobs/cancel', {})).status, 400);
});

test('run all now: every scheduled job of a type becomes ready', async () => {
  const engine = admin.t.engine;
  for (let i = 0; i < 3; i++) {
    await engine.enqueue({
      queue: 'q',
      type: i < 2 ? 'report' : 'email',
      payload: enc('x'),
      delayMs: 3_600_000,
    });
  }
  // Issue 36: a dry run counts first, for the confirmation, and changes nothing.
  const counted = await op.post('/api/v1/queues/q/jobs/update', {
    type: 'report',
    states: ['scheduled'],
    runNow: true,
    dryRun: true,
  });
  assert.deepEqual(counted.body, { updated: 0, matched: 2 });
  assert.equal((await engine.listQueues())[0]?.counts.ready, 0);
  const reply = await op.post('/api/v1/queues/q/jobs/update', { type: 'report', runNow: true });
  assert.deepEqual(reply.body, { updated: 2 });
  assert.equal((await lastAudit()).action, 'jobs.update');
  assert.equal((await engine.listQueues())[0]?.counts.ready, 2);
  assert.equal((await op.post('/api/v1/queues/q/jobs/update', { delayMs: 5 })).status, 400);
});

test('a viewer may not change jobs', async () => {
  const viewer = await loggedIn(admin, 'viewer');
  const { jobId } = await admin.t.engine.enqueue({ queue: 'q', type: 't', payload: enc('x') });
  assert.equal((await viewer.post(`/api/v1/jobs/${jobId}/update`, { priority: 1 })).status, 403);
  assert.equal((await viewer.post('/api/v1/queues/q/jobs/cancel', { dryRun: true })).status, 403);
});

test('groups: a waiting job changes group ("" or null: none); bulk cancel and run now take a group filter', async () => {
  const engine = admin.t.engine;
  const job = (group: string | undefined, delayMs = 0) =>
    engine.enqueue({ queue: 'q', type: 't', payload: enc('x'), delayMs, ...(group ? { group } : {}) });
  const { jobId } = await job('acme');
  const moved = await op.post(`/api/v1/jobs/${jobId}/update`, { group: 'globex' });
  assert.equal(moved.status, 200);
  assert.equal(moved.body.group, 'globex');
  assert.deepEqual(
    [(await lastAudit()).details.group, (await lastAudit()).details.previousGroup],
    ['globex', 'acme'],
  );
  assert.equal((await op.post(`/api/v1/jobs/${jobId}/update`, { group: null })).body.group, null);
  assert.equal((await op.post(`/api/v1/jobs/${jobId}/update`, { group: 'a b' })).status, 400);

  for (const group of ['acme', 'acme', 'globex']) await job(group, 3_600_000);
  const ran = await op.post('/api/v1/queues/q/jobs/update', { group: 'acme', runNow: true });
  assert.deepEqual(ran.body, { updated: 2 });
  assert.equal((await lastAudit()).details.group, 'acme');
  const dry = await op.post('/api/v1/queues/q/jobs/cancel', { group: 'globex', dryRun: true });
  assert.equal(dry.body.matched, 1);
  const cancelled = await op.post('/api/v1/queues/q/jobs/cancel', { group: 'globex' });
  assert.deepEqual(cancelled.body, { cancelled: 1, cancelRequested: 0, matched: 0 });
  assert.equal((await lastAudit()).details.group, 'globex');
  const counts = (await engine.listQueues())[0]?.counts;
  assert.deepEqual([counts?.ready, counts?.scheduled, counts?.cancelled], [3, 0, 1]);
});
