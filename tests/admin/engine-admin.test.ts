/** The engine's operator additions: browsing, one-job actions, purge, and the audit log written with them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditInput } from '../../src/engine/admin-types.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { bytes, openTestEngine, type TestEngine } from '../helpers/engine.ts';

const who: AuditInput = { actor: 'alice', action: 'test.action', target: 'queue:q' };

async function withEngine(fn: (t: TestEngine) => Promise<void>): Promise<void> {
  const t = await openTestEngine();
  try {
    await fn(t);
  } finally {
    t.dispose();
  }
}

async function enqueueMany(t: TestEngine, queue: string, types: string[], n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { jobId } = await t.engine.enqueue({
      queue,
      type: types[i % types.length]!,
      payload: bytes(`job ${i}`),
    });
    ids.push(jobId);
  }
  return ids;
}

test('listJobs pages a state in enqueue order, merging types, both directions', async () => {
  await withEngine(async (t) => {
    const ids = await enqueueMany(t, 'q', ['a', 'b', 'c'], 23);
    await enqueueMany(t, 'other', ['a'], 5);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await t.engine.listJobs({
        queue: 'q',
        state: 'ready',
        pageSize: 5,
        ...(cursor ? { cursor } : {}),
      });
      assert.equal(page.total, 23);
      seen.push(...page.items.map((j) => j.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    assert.deepEqual(seen, ids);

    const newest = await t.engine.listJobs({
      queue: 'q',
      state: 'ready',
      order: 'newest_first',
      pageSize: 10,
    });
    assert.deepEqual(
      newest.items.map((j) => j.id),
      [...ids].reverse().slice(0, 10),
    );
    const next = await t.engine.listJobs({
      queue: 'q',
      state: 'ready',
      order: 'newest_first',
      pageSize: 10,
      cursor: newest.nextCursor!,
    });
    assert.deepEqual(
      next.items.map((j) => j.id),
      [...ids].reverse().slice(10, 20),
    );

    const onlyB = await t.engine.listJobs({ queue: 'q', state: 'ready', type: 'b', pageSize: 100 });
    assert.deepEqual(
      onlyB.items.map((j) => j.id),
      ids.filter((_, i) => i % 3 === 1),
    );
    assert.equal(onlyB.total, null);
    assert.equal(onlyB.nextCursor, null);
    const first = onlyB.items[0]!;
    assert.equal(first.payloadBytes, bytes('job 1').byteLength);
    assert.equal(first.state, 'ready');
    assert.equal((await t.engine.listJobs({ queue: 'q', state: 'dead' })).items.length, 0);
  });
});

test('listJobs refuses bad input with invalid_argument', async () => {
  await withEngine(async (t) => {
    const bad = (fn: () => Promise<unknown>) =>
      assert.rejects(fn, (e: unknown) => e instanceof SeppError && e.code === 'invalid_argument');
    await bad(async () => await t.engine.listJobs({ queue: 'q', state: 'ready', cursor: 'nonsense' }));
    await bad(async () => await t.engine.listJobs({ queue: 'bad name', state: 'ready' }));
    await bad(async () => await t.engine.listJobs({ queue: 'q', state: 'ready', pageSize: 1.5 }));
    await assert.rejects(t.engine.listJobs({ queue: 'q', state: 'ready', pageSize: 100_000 }), {
      message:
        /^page_size is 100000; it must be an integer from 1 to \d+ \(limits\.max_page_size\), or 0 for the default$/,
    });
    // 0 is the default, as gRPC's unset page_size is.
    assert.deepEqual((await t.engine.listJobs({ queue: 'q', state: 'ready', pageSize: 0 })).items, []);
    // A dead-letter cursor handed to the job list is refused, not misread.
    const page = await t.engine.listDeadLetterSummaries({ queue: 'q' });
    assert.equal(page.nextCursor, null);
    await bad(
      async () =>
        await t.engine.listJobs({
          queue: 'q',
          state: 'ready',
          cursor: Buffer.from('d1:2').toString('base64url'),
        }),
    );
  });
});

test('requeueJob and deadLetterJob move one job and write the audit entry in the same transaction', async () => {
  await withEngine(async (t) => {
    const [id] = await enqueueMany(t, 'q', ['a'], 1);
    await assert.rejects(t.engine.requeueJob(id!, who), { code: 'failed_precondition' });
    assert.deepEqual(await t.engine.deadLetterJob(id!, { ...who, action: 'job.dead_letter' }), {
      previousState: 'ready',
    });
    const dead = await t.engine.getJob(id!);
    assert.equal(dead.state, 'dead');
    assert.equal(dead.deadReason, 'dead_lettered');
    assert.equal(
      (await t.engine.listDeadLetterSummaries({ queue: 'q', reason: 'dead_lettered' })).items.length,
      1,
    );
    assert.equal(
      (await t.engine.listDeadLetterSummaries({ queue: 'q', reason: 'lease_expired' })).items.length,
      0,
    );

    assert.deepEqual(await t.engine.requeueJob(id!, { ...who, action: 'job.requeue' }), {
      previousState: 'dead',
    });
    assert.equal((await t.engine.getJob(id!)).state, 'ready');
    const [leased] = await t.engine.reserve({ queues: ['q'] });
    assert.equal(leased?.id, id);
    await assert.rejects(t.engine.deadLetterJob(id!, who), { code: 'failed_precondition' });
    await assert.rejects(t.engine.requeueJob('00000000-0000-7000-8000-000000000000', who), {
      code: 'not_found',
    });

    const audit = await t.engine.listAudit({});
    // The refused calls wrote nothing: their transactions were rolled back whole.
    assert.deepEqual(
      audit.items.map((e) => [e.action, e.details.previousState]),
      [
        ['job.requeue', 'dead'],
        ['job.dead_letter', 'ready'],
      ],
    );
    assert.deepEqual(await t.engine.counterMismatches(), []);
  });
});

test('purgeQueue deletes ready and scheduled jobs in slices, leaves leased and dead, audits once', async () => {
  await withEngine(async (t) => {
    const batch = Array.from({ length: 1000 }, (_, i) => ({
      queue: 'q',
      type: 't',
      payload: bytes(String(i)),
    }));
    for (let i = 0; i < 6; i++) await t.engine.enqueueBatch(batch);
    await t.engine.enqueue({ queue: 'q', type: 't', payload: bytes('later'), delayMs: 60_000 });
    const leased = await t.engine.reserve({ queues: ['q'], maxJobs: 2 });
    const [deadJob] = await t.engine.reserve({ queues: ['q'] });
    await t.engine.nack({
      jobId: deadJob!.id,
      attempt: 1,
      error: 'boom',
      directive: { kind: 'dead_letter' },
    });

    const { deleted } = await t.engine.purgeQueue('q', { ...who, action: 'queue.purge' });
    assert.equal(deleted, 6000 - 3 + 1);
    const [q] = await t.engine.listQueues();
    assert.deepEqual(q?.counts, {
      scheduled: 0,
      ready: 0,
      leased: 2,
      completed: 0,
      dead: 1,
      cancelled: 0,
      waiting: 0,
    });
    assert.equal(leased.length, 2);
    const entries = (await t.engine.listAudit({ action: 'queue.purge' })).items;
    assert.equal(entries.length, 1);
    const { operationId, ...details } = entries[0]?.details ?? {};
    assert.equal(typeof operationId, 'string');
    assert.deepEqual(details, {
      queue: 'q',
      states: ['scheduled', 'ready'],
      matched: 5998,
      changed: 5998,
      done: true,
    });
    assert.deepEqual(await t.engine.counterMismatches(), []);
  });
});

test('dead letters: requeue all of one reason, delete selected; audited with counts', async () => {
  await withEngine(async (t) => {
    const ids = await enqueueMany(t, 'q', ['a'], 4);
    const jobs = await t.engine.reserve({ queues: ['q'], maxJobs: 4 });
    for (const [i, job] of jobs.entries()) {
      await t.engine.nack({
        jobId: job.id,
        attempt: 1,
        error: `e${i}`,
        directive: i < 2 ? { kind: 'dead_letter' } : { kind: 'delay', delayMs: 0 },
      });
    }
    // Two were dead-lettered by their nack; the other two went back to ready: dead-letter them by hand.
    await t.engine.deadLetterJob(jobs[2]!.id);
    await t.engine.deadLetterJob(jobs[3]!.id);
    const requeued = await t.engine.requeueDeadLetters(
      { queue: 'q', all: true, reason: 'dead_lettered' },
      { ...who, action: 'dead_letters.requeue_all' },
    );
    assert.equal(requeued, 4);
    await t.engine.deadLetterJob(ids[0]!);
    const removed = await t.engine.deleteDeadLetters(
      { queue: 'q', jobIds: [ids[0]!, ids[1]!] },
      { ...who, action: 'dead_letters.delete' },
    );
    assert.equal(removed, 1);
    const [del, req] = (await t.engine.listAudit({})).items;
    assert.deepEqual(del?.details, { jobIds: [ids[0], ids[1]], changed: 1 });
    const { operationId, ...details } = req?.details ?? {};
    assert.equal(typeof operationId, 'string');
    assert.deepEqual(details, {
      queue: 'q',
      states: ['dead'],
      deadReason: 'dead_lettered',
      matched: 4,
      changed: 4,
      done: true,
    });
  });
});

test('an audit entry is written with cancel, pause and enqueue, not when they fail', async () => {
  await withEngine(async (t) => {
    const { jobId } = await t.engine.enqueue(
      { queue: 'q', type: 'a', payload: bytes('x') },
      { ...who, action: 'job.enqueue' },
    );
    await assert.rejects(
      t.engine.enqueue(
        { queue: 'q', type: 'bad type', payload: bytes('x') },
        { ...who, action: 'job.enqueue' },
      ),
    );
    await t.engine.pauseQueue('q', { ...who, action: 'queue.pause' });
    await t.engine.cancel(jobId, { ...who, action: 'job.cancel' });
    const missing = '01900000-0000-7000-8000-000000000000';
    await assert.rejects(t.engine.cancel(missing, { ...who, action: 'job.cancel' }), { code: 'not_found' });
    const entries = (await t.engine.listAudit({})).items;
    assert.deepEqual(
      entries.map((e) => [e.action, e.details]),
      [
        ['job.cancel', { jobId, queue: 'q', previousState: 'ready', state: 'cancelled' }],
        ['queue.pause', { wasPaused: false }],
        ['job.enqueue', { jobId, deduplicated: false }],
      ],
    );
    assert.equal(entries[0]?.atMs, t.clock.nowMs());
  });
});

test('listAudit filters by actor, action and target and pages newest first', async () => {
  await withEngine(async (t) => {
    for (let i = 0; i < 12; i++) {
      await t.engine.recordAudit({
        actor: i % 2 === 0 ? 'alice' : 'bob',
        action: i % 3 === 0 ? 'queue.pause' : 'job.cancel',
        target: `queue:q${i % 4}`,
        details: { i },
      });
      t.clock.advance(1000);
    }
    const all: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await t.engine.listAudit({ pageSize: 5, ...(cursor ? { cursor } : {}) });
      all.push(...page.items.map((e) => e.details.i as number));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.deepEqual(all, [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const idx = async (q: Parameters<typeof t.engine.listAudit>[0]) =>
      (await t.engine.listAudit(q)).items.map((e) => e.details.i);
    assert.deepEqual(await idx({ actor: 'bob' }), [11, 9, 7, 5, 3, 1]);
    assert.deepEqual(await idx({ action: 'queue.pause' }), [9, 6, 3, 0]);
    assert.deepEqual(await idx({ target: 'queue:q1' }), [9, 5, 1]);
    assert.deepEqual(await idx({ actor: 'bob', action: 'queue.pause' }), [9, 3]);
    assert.deepEqual(await idx({ target: 'queue:q0', actor: 'alice', action: 'queue.pause' }), [0]);
  });
});

test('findJobByIdempotencyKey finds the stored job, then the remembered one after ack', async () => {
  await withEngine(async (t) => {
    const { jobId } = await t.engine.enqueue({
      queue: 'q',
      type: 'a',
      payload: bytes('x'),
      idempotencyKey: 'k1',
    });
    assert.deepEqual(await t.engine.findJobByIdempotencyKey('q', 'k1'), { jobId, stored: true });
    assert.equal(await t.engine.findJobByIdempotencyKey('q', 'nope'), null);
    assert.equal(await t.engine.findJobByIdempotencyKey('other', 'k1'), null);
    const [job] = await t.engine.reserve({ queues: ['q'] });
    await t.engine.ack({ jobId: job!.id, attempt: 1 });
    assert.deepEqual(await t.engine.findJobByIdempotencyKey('q', 'k1'), { jobId, stored: false });
  });
});

test('the audit log survives a restart (it is in the database)', async () => {
  const t = await openTestEngine();
  try {
    await t.engine.recordAudit({ actor: 'alice', action: 'session.login', target: 'user:alice' });
    const again = await t.reopen();
    assert.equal((await again.engine.listAudit({})).items[0]?.action, 'session.login');
    again.dispose();
  } finally {
    t.dispose();
  }
});
