/**
 * A batch's on_death job (issue 33, task batchdeath): enqueued once, in the unit that
 * counts the batch's first dead member (dead-lettered by its worker, attempts exhausted,
 * dead-lettered by an operator, expired), while the rest of the batch may still run;
 * never for a cancelled member, never twice. Injected clock, no sleeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EnqueueRequest } from '../../src/engine/types.ts';
import type { BatchCompletionJob } from '../../src/engine/workflow-types.ts';
import type { Db } from '../../src/store/sqlite/open.ts';
import { completionPayload, ids, killJob, lease } from '../helpers/batch-members.ts';
import { bytes, expectCode, job, withEngine, withQueues } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

const deathJobs = (db: Db): number =>
  db.prepare<[], number>("SELECT count(*) FROM jobs WHERE queue = 'alerts'").pluck().get() ?? -1;

let queueCounter = 0;
const fresh = (): string => `bd${++queueCounter}`;
/** A member on a queue of its own, so a reserve of that queue leases exactly it. */
const member = (extra: Partial<EnqueueRequest> = {}): EnqueueRequest => job(fresh(), extra);

const onDeath: BatchCompletionJob = {
  queue: 'alerts',
  type: 'page-oncall',
  payload: bytes('{"team":"etl"}'),
};
const onComplete: BatchCompletionJob = { queue: 'callbacks', type: 'batch-done', payload: new Uint8Array() };

test('the first death enqueues on_death at once, while the rest runs; later deaths enqueue nothing', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const created = await engine.createBatch({
      onDeath,
      onComplete,
      jobs: [member(), member(), member()],
      seal: true,
    });
    const [a, b, c] = ids(created.results);
    assert.deepEqual(
      [created.batch.hasOnDeath, created.batch.deathJobId, created.batch.firstDeadId],
      [true, null, null],
    );
    await killJob(engine, b!, 'row 7 is corrupt');
    let { batch } = await engine.getBatch(created.batch.id);
    assert.deepEqual(
      { state: batch.state, pending: batch.pending, dead: batch.dead, firstDeadId: batch.firstDeadId },
      { state: 'sealed', pending: 2, dead: 1, firstDeadId: b },
    );
    assert.equal(deathJobs(db), 1, 'on_death in the commit that counted the death');
    assert.notEqual(batch.deathJobId, null);
    assert.deepEqual(await completionPayload(engine, batch.deathJobId!), {
      batch: {
        id: batch.id,
        outcome: 'death',
        completed: 0,
        dead: 1,
        cancelled: 0,
        members: [a, b, c],
        membersOmitted: false,
        pending: 2,
        firstDead: { jobId: b, error: 'row 7 is corrupt' },
      },
      data: { team: 'etl' },
    });
    const deathJobId = batch.deathJobId;
    await killJob(engine, a!);
    // A dead member requeued and dead again counts once, and enqueues nothing more.
    await engine.requeueDeadLetters({ queue: (await engine.getJob(b!)).queue, jobIds: [b!] });
    await killJob(engine, b!);
    await killJob(engine, c!);
    batch = (await engine.getBatch(created.batch.id)).batch;
    assert.deepEqual(
      { state: batch.state, dead: batch.dead, deathJobId: batch.deathJobId, firstDeadId: batch.firstDeadId },
      { state: 'ended', dead: 3, deathJobId, firstDeadId: b },
    );
    assert.equal(deathJobs(db), 1, 'once');
    assert.equal((await completionPayload(engine, batch.completeJobId!)).batch.dead, 3);
  });
});

test('every way to die counts, in open and sealed batches; a cancel or a completion does not', async () => {
  await withEngine({}, async ({ engine, db, clock }) => {
    /** The firstDead of the on_death job that ending the batch's first member enqueued, or null. */
    const deathOf = async (jobs: EnqueueRequest[], seal: boolean, end: (id: string) => Promise<void>) => {
      const created = await engine.createBatch({ onDeath, jobs, seal });
      const [first] = ids(created.results);
      await end(first!);
      const { batch } = await engine.getBatch(created.batch.id);
      if (batch.deathJobId === null) return null;
      assert.equal(batch.firstDeadId, first);
      return (await completionPayload(engine, batch.deathJobId)).batch.firstDead as {
        jobId: string;
        error: unknown;
      };
    };
    // Attempts exhausted, in an open batch: the batch need not be sealed.
    const exhausted = await deathOf([member({ maxAttempts: 1 }), member()], false, async (id) => {
      const leased = await lease(engine, id);
      await engine.nack({ jobId: id, attempt: leased.attempt, error: 'timeout talking to S3' });
    });
    assert.equal(exhausted?.error, 'timeout talking to S3');
    // Dead-lettered by an operator: the job has no error of its own.
    const byOperator = await deathOf([member(), member()], true, async (id) => {
      await engine.deadLetterJob(id);
    });
    assert.equal(byOperator?.error, null, 'an on_death job (undefined: none), with no error');
    // Expired: the batch counts it dead.
    const expired = await deathOf([member({ ttlMs: 1_000 }), member()], true, async () => {
      clock.advance(2_000);
      await engine.runMaintenance();
    });
    assert.match(String(expired?.error), /^expired: not started before/);
    // Neither a cancel nor a completion is a death.
    assert.equal(
      await deathOf([member(), member()], true, async (id) => {
        await engine.cancel(id);
      }),
      null,
    );
    assert.equal(
      await deathOf([member(), member()], true, async (id) => {
        const leased = await lease(engine, id);
        await engine.ack({ jobId: id, attempt: leased.attempt });
      }),
      null,
    );
    assert.equal(deathJobs(db), 3);
  });
});

test('on_death is checked as the other completion jobs are', async () => {
  await withEngine({}, async ({ engine }) => {
    const keyed = await expectCode(
      engine.createBatch({ onDeath: { ...onDeath, idempotencyKey: 'k' } as BatchCompletionJob }),
      'invalid_argument',
    );
    assert.match(keyed.message, /^on_death: a completion job takes no idempotencyKey/);
    const notJson = await expectCode(
      engine.createBatch({ onDeath: { ...onDeath, payload: bytes('not json') } }),
      'invalid_argument',
    );
    assert.match(notJson.message, /^on_death: the payload must be JSON/);
  });
});

test('an on_death its queue refuses is told in completionError, kept at the end', async () => {
  await withEngine({ options: withQueues({ alerts: { maxDepth: 1 } }) }, async ({ engine, db }) => {
    await engine.enqueue({ queue: 'alerts', type: 'filler', payload: new Uint8Array() });
    const created = await engine.createBatch({ onDeath, onComplete, jobs: [member()], seal: true });
    const [only] = ids(created.results);
    await killJob(engine, only!);
    const { batch } = await engine.getBatch(created.batch.id);
    assert.equal(batch.state, 'ended');
    assert.equal(batch.deathJobId, null);
    assert.equal(batch.firstDeadId, only);
    assert.notEqual(batch.completeJobId, null, 'the end still enqueues on_complete');
    assert.match(batch.completionError ?? '', /^on_death: /);
    assert.equal(deathJobs(db), 1, 'only the filler');
  });
});

test('events: batch_first_death in the commit that counted the death, named by the batch id', async () => {
  await withEngine({}, async ({ engine }) => {
    const c = collect(engine, { kinds: ['dead_lettered', 'enqueued', 'batch_first_death'] });
    const created = await engine.createBatch({ onDeath, jobs: [member(), member()], seal: true });
    const [a, b] = ids(created.results);
    await killJob(engine, a!);
    await killJob(engine, b!);
    const { batch } = await engine.getBatch(created.batch.id);
    assert.deepEqual(c.summary().slice(-4), [
      `dead_lettered:${a}`,
      `enqueued:${batch.deathJobId}`,
      `batch_first_death:${batch.id}`,
      `dead_lettered:${b}`,
    ]);
    const died = c.events.find((e) => e.kind === 'batch_first_death');
    assert.ok(died?.kind === 'batch_first_death');
    assert.deepEqual([died.queue, died.type], ['alerts', 'page-oncall']);
    assert.deepEqual(
      [died.batch.firstDeadId, died.batch.deathJobId, died.batch.dead, died.batch.pending],
      [a, batch.deathJobId, 1, 1],
    );
    // A batch without on_death tells its first death too, with no job.
    const plain = await engine.createBatch({ jobs: [member()] });
    const [only] = ids(plain.results);
    await killJob(engine, only!);
    const last = c.events.at(-1);
    assert.ok(last?.kind === 'batch_first_death');
    assert.deepEqual(
      [last.jobId, last.queue, last.batch.firstDeadId, last.batch.deathJobId],
      [plain.batch.id, '', only, null],
    );
  });
});
