/**
 * The admin API's bulk operations (src/admin/routes/bulk-routes.ts): act on
 * everything the jobs list's filter matches, in one queue or every queue —
 * counted first (exact, or "at least"), then one server-side operation whose
 * progress is polled by id and that is audited once; roles per action; dead
 * letters listed and changed by error text.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { enc, loggedIn, openTestAdmin, type TestAdmin, type TestClient } from '../helpers/admin.ts';

let admin: TestAdmin;
let op: TestClient;

beforeEach(async () => {
  admin = await openTestAdmin();
  op = await loggedIn(admin, 'operator');
});
afterEach(() => admin.dispose());

/** `n` jobs of `queue` nacked straight to the dead letters with `error`. */
async function deadLetters(queue: string, n: number, error: string): Promise<void> {
  const engine = admin.t.engine;
  for (let i = 0; i < n; i++) await engine.enqueue({ queue, type: 'mail', payload: enc('x') });
  for (const j of await engine.reserve({ queues: [queue], maxJobs: n })) {
    await engine.nack({ jobId: j.id, attempt: j.attempt, error, directive: { kind: 'dead_letter' } });
  }
}

async function untilDone(id: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const reply = await op.get(`/api/v1/bulk-operations/${id}`);
    assert.equal(reply.status, 200);
    if (reply.body.state !== 'running') return reply.body;
    await admin.t.engine.ackBatch([]);
  }
  throw new Error(`operation ${id} did not end`);
}

test('requeue all N matching across queues: counted before, one operation, polled to its end, one audit entry', async () => {
  await deadLetters('a', 3, 'SMTP timeout');
  await deadLetters('b', 2, 'smtp timeout');
  await deadLetters('b', 1, 'mailbox full');
  const filter = { state: 'dead', error: 'SMTP' };
  const count = await op.post('/api/v1/bulk/requeue', { ...filter, dryRun: true });
  assert.deepEqual(count.body, { matched: 5, exact: true, examined: 6 });
  const audits = (await admin.t.engine.listAudit({})).items.length;
  const started = await op.post('/api/v1/bulk/requeue', filter);
  assert.equal(started.status, 200);
  assert.equal(started.body.action, 'requeue');
  assert.equal(started.body.matched, 5);
  const done = await untilDone(String(started.body.id));
  assert.deepEqual([done.state, done.changed], ['done', 5]);
  const entries = (await admin.t.engine.listAudit({})).items;
  assert.equal(entries.length, audits + 1, 'one entry for the whole operation');
  assert.deepEqual(
    [entries[0]?.action, entries[0]?.target, entries[0]?.details.errorText, entries[0]?.details.changed],
    ['jobs.requeue', 'queue:*', 'SMTP', 5],
  );
  const listed = await op.get('/api/v1/bulk-operations');
  assert.ok((listed.body.items as { id: string }[]).some((o) => o.id === started.body.id));
});

test('the count says "at least" only when it stopped early; run now and cancel take the list filter', async () => {
  const engine = admin.t.engine;
  for (let i = 0; i < 4; i++) {
    await engine.enqueue({
      queue: 'q',
      type: 'report.daily',
      payload: enc('x'),
      delayMs: 60_000,
      metadata: { t: 'acme' },
    });
  }
  await engine.enqueue({ queue: 'q', type: 'email', payload: enc('x'), delayMs: 60_000 });
  const dry = await op.post('/api/v1/bulk/update', {
    queue: 'q',
    type: 'report.',
    meta: 't=acme',
    runNow: true,
    dryRun: true,
  });
  assert.deepEqual(dry.body, { matched: 4, exact: true, examined: 4 });
  const started = await op.post('/api/v1/bulk/update', { queue: 'q', type: 'report.', runNow: true });
  assert.equal((await untilDone(String(started.body.id))).changed, 4);
  const cancel = await op.post('/api/v1/bulk/cancel', { queue: 'q', state: 'scheduled' });
  assert.equal((await untilDone(String(cancel.body.id))).changed, 1);
  assert.equal((await op.post('/api/v1/bulk/cancel', { state: 'dead' })).status, 400);
  assert.equal((await op.post('/api/v1/bulk/cancel', { meta: 'no-equals' })).status, 400);
  assert.equal((await op.get('/api/v1/bulk-operations/unknown')).status, 404);
  // A filtered list's total: the counters cannot know it, the bounded count does.
  const listed = await op.get('/api/v1/jobs-count?queue=q&meta=t%3Dacme');
  assert.deepEqual(listed.body, { matched: 4, exact: true, examined: 5 });
});

test("delete all matching is the admin role's; an operator may stop an operation", async () => {
  await admin.t.engine.enqueue({ queue: 'q', type: 't', payload: enc('x') });
  assert.equal((await op.post('/api/v1/bulk/delete', { queue: 'q', dryRun: true })).status, 403);
  const boss = await loggedIn(admin, 'admin');
  const started = await boss.post('/api/v1/bulk/delete', { queue: 'q' });
  assert.equal(started.status, 200);
  const stopped = await op.post(`/api/v1/bulk-operations/${started.body.id}/cancel`, {});
  assert.equal(stopped.status, 200);
  assert.ok(['done', 'cancelled'].includes(String(stopped.body.state)));
  const viewer = await loggedIn(admin, 'viewer');
  assert.equal((await viewer.post('/api/v1/bulk/requeue', { dryRun: true })).status, 403);
  assert.equal((await viewer.get(`/api/v1/bulk-operations/${started.body.id}`)).status, 200);
});

test('top errors: dead letters grouped by class and first line; a group requeued by its key', async () => {
  const engine = admin.t.engine;
  for (let i = 0; i < 4; i++) await engine.enqueue({ queue: 'q', type: 'mail', payload: enc('x') });
  for (const [i, j] of (await engine.reserve({ queues: ['q'], maxJobs: 4 })).entries()) {
    await engine.nack({
      jobId: j.id,
      attempt: j.attempt,
      error: i < 3 ? `bad address\nmailbox ${i}` : '',
      ...(i < 3 ? { errorClass: 'SmtpError', stack: 'SmtpError: bad address' } : {}),
      directive: { kind: 'dead_letter' },
    });
  }
  const top = await op.get('/api/v1/queues/q/top-errors?limit=5');
  assert.equal(top.status, 200);
  const groups = top.body.groups as { errorClass: string; firstLine: string; jobs: number }[];
  assert.deepEqual(
    groups.map((g) => [g.errorClass, g.firstLine, g.jobs]),
    [
      ['SmtpError', 'bad address', 3],
      ['', '', 1],
    ],
  );
  assert.deepEqual([top.body.deadTotal, top.body.complete], [4, true]);
  assert.equal((await op.get('/api/v1/queues/q/top-errors?limit=500')).status, 400);
  assert.equal((await op.get('/api/v1/queues/nope/top-errors')).status, 404);
  // The empty group is its own: no class, no message — not every dead letter.
  const empty = { queue: 'q', state: 'dead', errorClass: '', errorLine: '' };
  assert.equal((await op.post('/api/v1/bulk/requeue', { ...empty, dryRun: true })).body.matched, 1);
  assert.equal((await op.post('/api/v1/bulk/requeue', { queue: 'q', errorClass: 'X' })).status, 400);
  const group = { queue: 'q', state: 'dead', errorClass: 'SmtpError', errorLine: 'bad address' };
  assert.equal((await op.post('/api/v1/bulk/requeue', { ...group, dryRun: true })).body.matched, 3);
  const started = await op.post('/api/v1/bulk/requeue', group);
  assert.equal(started.status, 200);
  assert.equal((await untilDone(started.body.id as string)).changed, 3);
  const [entry] = (await engine.listAudit({ action: 'jobs.requeue' })).items;
  assert.deepEqual(entry?.details.errorGroup, { errorClass: 'SmtpError', firstLine: 'bad address' });
  const q = (await engine.listQueues())[0];
  assert.deepEqual([q?.counts.ready, q?.counts.dead], [3, 1]);
});

test('dead letters: listed, requeued and deleted by error text', async () => {
  await deadLetters('q', 2, 'timeout talking to smtp');
  await deadLetters('q', 3, 'bad address');
  // A reason's page says how many there are in all, beyond the page: "Requeue all 5".
  const byReason = await op.get('/api/v1/queues/q/dead-letters?reason=dead_lettered&limit=1');
  assert.deepEqual([(byReason.body.items as unknown[]).length, byReason.body.total], [1, 5]);
  assert.equal((await op.get('/api/v1/queues/q/dead-letters?reason=lease_expired')).body.total, 0);
  const page = await op.get('/api/v1/queues/q/dead-letters?error=TIMEOUT');
  assert.equal(page.status, 200);
  assert.equal((page.body.items as unknown[]).length, 2);
  assert.equal(
    (await op.post('/api/v1/queues/q/dead-letters/requeue-all', { error: 'timeout' })).body.changed,
    2,
  );
  const boss = await loggedIn(admin, 'admin');
  const deleted = await boss.post('/api/v1/queues/q/dead-letters/delete-all', {
    confirm: 'q',
    error: 'ADDRESS',
  });
  assert.equal(deleted.body.changed, 3);
  const q = (await admin.t.engine.listQueues())[0];
  assert.deepEqual([q?.counts.ready, q?.counts.dead], [2, 0]);
});

test('selected jobs: N chosen ids are one call and one audit entry with the count; other states skipped', async () => {
  const engine = admin.t.engine;
  await deadLetters('a', 3, 'boom');
  await deadLetters('b', 2, 'boom');
  const dead = (await engine.browseJobs({ state: 'dead' })).items.map((j) => j.id);
  assert.equal(dead.length, 5);
  const waiting = await engine.enqueue({ queue: 'a', type: 'mail', payload: enc('x'), delayMs: 60_000 });
  const before = (await engine.listAudit({})).items.length;
  const requeued = await op.post('/api/v1/bulk/selected/requeue', {
    jobIds: [...dead.slice(0, 4).map((id) => id.toUpperCase()), waiting.jobId],
  });
  assert.equal(requeued.status, 200);
  assert.deepEqual(requeued.body, { changed: 4, skipped: 1 });
  let entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, before + 1, 'one entry for the selection');
  assert.deepEqual(
    [
      entries[0]?.action,
      entries[0]?.details.selected,
      entries[0]?.details.changed,
      entries[0]?.details.skipped,
    ],
    ['jobs.requeue', 5, 4, 1],
  );
  assert.equal((await engine.getJob(dead[0] as string)).state, 'ready');

  const cancelled = await op.post('/api/v1/bulk/selected/cancel', {
    jobIds: [...dead.slice(0, 4), waiting.jobId],
  });
  assert.deepEqual(cancelled.body, { changed: 5, skipped: 0 });
  assert.equal((await engine.getJob(waiting.jobId)).state, 'cancelled');

  const deleted = await op.post('/api/v1/bulk/selected/delete', { jobIds: [dead[4], waiting.jobId] });
  assert.deepEqual(deleted.body, { changed: 1, skipped: 1 });
  entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, before + 3);
  assert.deepEqual([entries[0]?.action, entries[0]?.details.changed], ['dead_letters.delete', 1]);
  await assert.rejects(engine.getJob(dead[4] as string));

  const viewer = await loggedIn(admin, 'viewer');
  const afterLogin = (await engine.listAudit({})).items.length;
  assert.equal((await viewer.post('/api/v1/bulk/selected/requeue', { jobIds: dead })).status, 403);
  const tooMany = Array.from({ length: engine.limits.maxBatchJobs + 1 }, (_, i) => `id-${i}`);
  // Over a per-call bound: 413 without Retry-After, in the HTTP API's and the engine's words.
  for (const path of ['/api/v1/bulk/selected/requeue', '/api/v1/queues/emails/dead-letters/delete']) {
    const over = await op.post(path, { jobIds: tooMany });
    assert.equal(over.status, 413, path);
    assert.equal(over.headers.get('retry-after'), null, path);
    assert.deepEqual(over.body, {
      error: {
        code: 'resource_exhausted',
        message: `jobIds: ${tooMany.length} ids, at most ${tooMany.length - 1} per call (limits.max_batch_jobs); split them into several calls`,
      },
    });
  }
  assert.equal((await op.post('/api/v1/bulk/selected/requeue', { jobIds: [] })).status, 400);
  assert.equal((await engine.listAudit({})).items.length, afterLogin, 'refused calls write no entry');
});

test('an age filter (enqueuedBeforeMs): the list, its count and "all N matching" take it and agree', async () => {
  const { engine, clock } = admin.t;
  await deadLetters('a', 2, 'old failure');
  await deadLetters('b', 1, 'old failure');
  clock.advance(60_000); // less than a session's idle timeout
  const cut = clock.nowMs();
  await deadLetters('a', 2, 'new failure');
  const older = `state=dead&enqueuedBeforeMs=${cut}`;
  const list = await op.get(`/api/v1/jobs?${older}`);
  assert.equal(list.status, 200);
  const listed = (list.body.items as { id: string; enqueuedAtMs: number }[]).map((j) => j.enqueuedAtMs);
  assert.equal(listed.length, 3);
  assert.ok(listed.every((ms) => ms < cut));
  assert.equal(list.body.total, null, 'age is not counted by the counters');
  assert.deepEqual((await op.get(`/api/v1/jobs-count?${older}`)).body, {
    matched: 3,
    exact: true,
    examined: 5,
  });
  const filter = { state: 'dead', enqueuedBeforeMs: cut };
  assert.equal((await op.post('/api/v1/bulk/requeue', { ...filter, dryRun: true })).body.matched, 3);
  const started = await op.post('/api/v1/bulk/requeue', filter);
  assert.equal((await untilDone(String(started.body.id))).changed, 3);
  const [entry] = (await engine.listAudit({ action: 'jobs.requeue' })).items;
  assert.deepEqual([entry?.details.enqueuedBeforeMs, entry?.details.changed], [cut, 3]);
  assert.equal((await op.get('/api/v1/jobs?state=dead')).body.total, 2, 'the newer two stay dead');
  // 0 is any time, as in the protocol; a negative or non-numeric time is refused.
  assert.equal(((await op.get('/api/v1/jobs?enqueuedBeforeMs=0')).body.items as unknown[]).length, 5);
  assert.equal((await op.get('/api/v1/jobs?enqueuedBeforeMs=-1')).status, 400);
  assert.equal((await op.get('/api/v1/jobs-count?enqueuedBeforeMs=soon')).status, 400);
});

test('a schedule\'s jobs (schedule=NAME): the list, its count and "all N matching" take it and agree', async () => {
  const { engine, clock } = admin.t;
  const template = { queue: 'mail', type: 'digest', payload: enc('{}') };
  for (const name of ['nightly', 'nightly:eu']) {
    await engine.putSchedule({ name, intervalMs: 60_000, template }, 'create');
  }
  clock.advance(60_000);
  await engine.runMaintenance();
  const manual = await engine.triggerSchedule('nightly');
  // Same queue and type, not nightly's: another schedule's (its name starts with "nightly:") and a producer's.
  await engine.enqueue(template);
  const made = (await engine.scheduleRuns('nightly')).map((r) => r.jobId).filter((id) => id !== null);
  assert.ok(made.includes(manual.jobId));
  assert.equal(made.length, 2, 'a tick and the manual run');
  const list = await op.get('/api/v1/jobs?schedule=nightly');
  assert.equal(list.status, 200);
  assert.deepEqual((list.body.items as { id: string }[]).map((j) => j.id).sort(), [...made].sort());
  assert.equal(list.body.total, null, 'counters do not know a schedule');
  assert.deepEqual((await op.get('/api/v1/jobs-count?schedule=nightly')).body, {
    matched: 2,
    exact: true,
    examined: 4,
  });
  const filter = { schedule: 'nightly', state: 'ready' };
  assert.equal((await op.post('/api/v1/bulk/cancel', { ...filter, dryRun: true })).body.matched, 2);
  const started = await op.post('/api/v1/bulk/cancel', filter);
  assert.equal((await untilDone(String(started.body.id))).changed, 2);
  const [entry] = (await engine.listAudit({ action: 'jobs.cancel' })).items;
  assert.deepEqual([entry?.details.schedule, entry?.details.changed], ['nightly', 2]);
  assert.equal(
    (await op.get('/api/v1/jobs?queue=mail&state=ready')).body.total,
    2,
    "the others' jobs wait on",
  );
  for (const bad of ['a b', '%', 'x'.repeat(300)]) {
    assert.equal((await op.get(`/api/v1/jobs?schedule=${encodeURIComponent(bad)}`)).status, 400, bad);
    assert.equal((await op.get(`/api/v1/jobs-count?schedule=${encodeURIComponent(bad)}`)).status, 400, bad);
  }
});

test('dead letters by age, and by reason with error text: listed, counted, requeued all', async () => {
  const { clock } = admin.t;
  await deadLetters('q', 2, 'smtp timeout');
  clock.advance(60_000);
  const cut = clock.nowMs();
  await deadLetters('q', 3, 'smtp timeout');
  const page = await op.get(`/api/v1/queues/q/dead-letters?enqueuedBeforeMs=${cut}`);
  assert.equal(page.status, 200);
  assert.deepEqual([(page.body.items as unknown[]).length, page.body.total], [2, null]);
  // Reason and error text together (they were one or the other before).
  const both = await op.get(
    `/api/v1/queues/q/dead-letters?reason=dead_lettered&error=SMTP&enqueuedBeforeMs=${cut}`,
  );
  assert.equal((both.body.items as unknown[]).length, 2);
  const none = await op.get('/api/v1/queues/q/dead-letters?reason=lease_expired&error=smtp');
  assert.equal((none.body.items as unknown[]).length, 0);
  const counted = await op.get(
    `/api/v1/jobs-count?queue=q&state=dead&reason=dead_lettered&enqueuedBeforeMs=${cut}`,
  );
  assert.deepEqual(counted.body, { matched: 2, exact: true, examined: 5 });
  const requeued = await op.post('/api/v1/queues/q/dead-letters/requeue-all', { enqueuedBeforeMs: cut });
  assert.deepEqual(requeued.body, { changed: 2 });
  const q = (await admin.t.engine.listQueues())[0];
  assert.deepEqual([q?.counts.ready, q?.counts.dead], [2, 3]);
});

test('selected jobs: dead-letter of N chosen ids is one call and one jobs.dead_letter audit entry', async () => {
  const engine = admin.t.engine;
  const ids: string[] = [];
  for (const queue of ['a', 'b', 'a']) {
    ids.push((await engine.enqueue({ queue, type: 'mail', payload: enc('x') })).jobId);
  }
  ids.push((await engine.enqueue({ queue: 'b', type: 'mail', payload: enc('x'), delayMs: 60_000 })).jobId);
  const [leased] = await engine.reserve({ queues: ['a'], maxJobs: 1 });
  assert.equal(leased?.id, ids[0]);
  const before = (await engine.listAudit({})).items.length;
  const reply = await op.post('/api/v1/bulk/selected/dead-letter', {
    jobIds: [...ids.map((id) => id.toUpperCase()), 'no-such-job'],
  });
  assert.equal(reply.status, 200);
  assert.deepEqual(reply.body, { changed: 3, skipped: 2 }, 'the leased job and the unknown id are skipped');
  const entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, before + 1, 'one entry for the selection');
  assert.deepEqual(
    [entries[0]?.action, entries[0]?.target, entries[0]?.details.selected, entries[0]?.details.changed],
    ['jobs.dead_letter', 'queue:*', 5, 3],
  );
  const states = await Promise.all(ids.map(async (id) => (await engine.getJob(id)).state));
  assert.deepEqual(states, ['leased', 'dead', 'dead', 'dead']);
  const dead = await engine.getJob(ids[3] as string);
  assert.equal(dead.deadReason, 'dead_lettered');
  // The audit log's action filter finds it.
  const filtered = await op.get('/api/v1/audit?action=jobs.dead_letter');
  assert.equal(filtered.status, 200);
  assert.equal((filtered.body.items as unknown[]).length, 1);
  const viewer = await loggedIn(admin, 'viewer');
  assert.equal((await viewer.post('/api/v1/bulk/selected/dead-letter', { jobIds: ids })).status, 403);
});

test('requestKey: a repeat answers with the first operation, one audit entry; another request under it is a 400', async () => {
  await deadLetters('k', 2, 'boom');
  const audits = (await admin.t.engine.listAudit({})).items.length;
  const body = { queue: 'k', state: 'dead', requestKey: 'ui-7f3a' };
  const first = await op.post('/api/v1/bulk/requeue', body);
  const again = await op.post('/api/v1/bulk/requeue', body);
  assert.deepEqual([first.status, again.status], [200, 200]);
  assert.equal(again.body.id, first.body.id);
  assert.deepEqual([(await untilDone(String(first.body.id))).changed], [2]);
  assert.equal((await admin.t.engine.listAudit({})).items.length, audits + 1);
  const other = await op.post('/api/v1/bulk/requeue', { ...body, state: 'completed' });
  assert.equal(other.status, 400);
  assert.match(String((other.body.error as { message?: string })?.message), /another request/);
  const bad = await op.post('/api/v1/bulk/requeue', { ...body, requestKey: 'x'.repeat(129) });
  assert.equal(bad.status, 400);
  assert.match(String((bad.body.error as { message?: string })?.message), /requestKey/);
  assert.equal((await admin.t.engine.listAudit({})).items.length, audits + 1);
});

test("requestKey on dead letters' requeue-all / delete-all and purge: a repeat answers with what the first changed, one audit entry each", async () => {
  const engine = admin.t.engine;
  const boss = await loggedIn(admin, 'admin');
  const counts = async () => {
    const q = (await engine.listQueues()).find((queue) => queue.name === 'k');
    return [q?.counts.ready, q?.counts.dead];
  };
  await deadLetters('k', 2, 'boom');
  const audits = (await engine.listAudit({})).items.length;

  const requeue = { requestKey: 'ui-requeue' };
  assert.equal((await op.post('/api/v1/queues/k/dead-letters/requeue-all', requeue)).body.changed, 2);
  // A dead letter that arrives before the repeat stays: the repeat starts no second operation.
  await deadLetters('k', 1, 'boom');
  const again = await op.post('/api/v1/queues/k/dead-letters/requeue-all', requeue);
  assert.deepEqual([again.status, again.body.changed], [200, 2]);
  assert.deepEqual(await counts(), [2, 1]);

  const remove = { confirm: 'k', requestKey: 'ui-delete' };
  assert.equal((await boss.post('/api/v1/queues/k/dead-letters/delete-all', remove)).body.changed, 1);
  await deadLetters('k', 1, 'boom');
  assert.equal((await boss.post('/api/v1/queues/k/dead-letters/delete-all', remove)).body.changed, 1);
  assert.deepEqual(await counts(), [2, 1]);

  const purge = { confirm: 'k', requestKey: 'ui-purge' };
  assert.equal((await boss.post('/api/v1/queues/k/purge', purge)).body.deleted, 2);
  await engine.enqueue({ queue: 'k', type: 'mail', payload: enc('x') });
  assert.equal((await boss.post('/api/v1/queues/k/purge', purge)).body.deleted, 2);
  assert.deepEqual(await counts(), [1, 1]);
  assert.equal((await engine.listAudit({})).items.length, audits + 3, 'one entry per operation');

  // The bulk route's rules: the key with another request, or a key no key can be, is a 400.
  const other = await op.post('/api/v1/queues/k/dead-letters/requeue-all', {
    ...requeue,
    reason: 'lease_expired',
  });
  assert.equal(other.status, 400);
  assert.match(String((other.body.error as { message?: string })?.message), /another request/);
  const bad = await boss.post('/api/v1/queues/k/purge', { confirm: 'k', requestKey: 'x'.repeat(129) });
  assert.equal(bad.status, 400);
  assert.match(String((bad.body.error as { message?: string })?.message), /requestKey/);
  assert.deepEqual(await counts(), [1, 1]);
  assert.equal((await engine.listAudit({})).items.length, audits + 3);
});
