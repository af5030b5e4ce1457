/**
 * Batches (issue 33): jobs with completion jobs. A member's end is counted in the unit
 * that ends it; the completion job is enqueued exactly once, in the unit that ends the
 * last member of a sealed batch (or the seal, when nothing is pending) — never before
 * the seal, never twice — whatever the members ended as. Injected clock, no sleeps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EnqueueRequest } from '../../src/engine/types.ts';
import type { BatchCompletionJob } from '../../src/engine/workflow-types.ts';
import type { Db } from '../../src/store/sqlite/open.ts';
import { complete, completionPayload, ids, killJob, lease } from '../helpers/batch-members.ts';
import { bytes, expectCode, job, withEngine } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

const rows = (db: Db, sql: string): number => db.prepare<[], number>(sql).pluck().get() ?? -1;
/** Completion jobs are on their own queue: one row per job the end enqueued. */
const completionJobs = (db: Db): number => rows(db, "SELECT count(*) FROM jobs WHERE queue = 'callbacks'");

let queueCounter = 0;
const fresh = (): string => `bq${++queueCounter}`;

const onComplete: BatchCompletionJob = {
  queue: 'callbacks',
  type: 'batch-done',
  payload: bytes('{"report":"daily"}'),
};
const onSuccess: BatchCompletionJob = { queue: 'callbacks', type: 'batch-ok', payload: new Uint8Array() };

/** A member on a queue of its own, so a reserve of that queue leases exactly it. */
const member = (extra: Partial<EnqueueRequest> = {}): EnqueueRequest => job(fresh(), extra);

test('a sealed batch: the completion jobs are enqueued in the commit that ends its last member, once', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const created = await engine.createBatch({
      onComplete,
      onSuccess,
      jobs: [member(), member(), member()],
      seal: true,
    });
    const [a, b, c] = ids(created.results);
    assert.equal(created.batch.state, 'sealed');
    assert.deepEqual(
      { members: created.batch.members, pending: created.batch.pending },
      { members: 3, pending: 3 },
    );
    await complete(engine, a!);
    await complete(engine, b!);
    let { batch } = await engine.getBatch(created.batch.id);
    assert.deepEqual(
      { state: batch.state, pending: batch.pending, completed: batch.completed },
      {
        state: 'sealed',
        pending: 1,
        completed: 2,
      },
    );
    assert.equal(completionJobs(db), 0, 'nothing before the last member ends');
    await complete(engine, c!);
    const got = await engine.getBatch(created.batch.id);
    batch = got.batch;
    assert.equal(batch.state, 'ended');
    assert.equal(batch.pending, 0);
    assert.equal(completionJobs(db), 2, 'on_complete and on_success, one each');
    assert.notEqual(batch.completeJobId, null);
    assert.notEqual(batch.successJobId, null);
    const payload = await completionPayload(engine, batch.completeJobId!);
    assert.deepEqual(payload, {
      batch: {
        id: batch.id,
        outcome: 'complete',
        completed: 3,
        dead: 0,
        cancelled: 0,
        members: [a, b, c],
        membersOmitted: false,
      },
      data: { report: 'daily' },
    });
    assert.equal((await completionPayload(engine, batch.successJobId!)).batch.outcome, 'success');
    assert.deepEqual(
      got.members.map((m) => [m.jobId, m.memberState]),
      [
        [a, 'completed'],
        [b, 'completed'],
        [c, 'completed'],
      ],
    );
    // The members' jobs were deleted as they were acked (no queue keeps completed jobs); the batch still lists them.
    assert.deepEqual(
      got.members.map((m) => m.jobState),
      [null, null, null],
    );
  });
});

test('an open batch never ends before its seal, while members are added as others finish', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const created = await engine.createBatch({ onComplete, jobs: [member()] });
    const batchId = created.batch.id;
    const [first] = ids(created.results);
    await complete(engine, first!);
    assert.equal((await engine.getBatch(batchId)).batch.state, 'open');
    assert.equal(completionJobs(db), 0, 'every member ended, but the batch is open');
    const second = ids((await engine.addToBatch(batchId, [member(), member()])).results);
    await complete(engine, second[0]!);
    const third = ids((await engine.addToBatch(batchId, [member()])).results);
    await complete(engine, second[1]!);
    const sealed = await engine.sealBatch(batchId);
    assert.deepEqual(
      { state: sealed.state, pending: sealed.pending, members: sealed.members },
      {
        state: 'sealed',
        pending: 1,
        members: 4,
      },
    );
    assert.equal(completionJobs(db), 0);
    await complete(engine, third[0]!);
    assert.equal((await engine.getBatch(batchId)).batch.state, 'ended');
    assert.equal(completionJobs(db), 1);
    // Sealing again changes nothing and enqueues nothing.
    assert.equal((await engine.sealBatch(batchId)).state, 'ended');
    await expectCode(engine.addToBatch(batchId, [member()]), 'failed_precondition');
    assert.equal(completionJobs(db), 1);
  });
});

test('sealing a batch whose members all ended ends it in the seal', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const created = await engine.createBatch({ onComplete, jobs: [member()] });
    await complete(engine, ids(created.results)[0]!);
    const sealed = await engine.sealBatch(created.batch.id);
    assert.equal(sealed.state, 'ended');
    assert.equal(completionJobs(db), 1);
    // An empty batch sealed at creation ends at once, too.
    const empty = await engine.createBatch({ onComplete, seal: true });
    assert.equal(empty.batch.state, 'ended');
    assert.deepEqual((await completionPayload(engine, empty.batch.completeJobId!)).batch.members, []);
    assert.equal(completionJobs(db), 2);
  });
});

test('members ending in every terminal state are counted once; on_success runs only if all completed', async () => {
  await withEngine({}, async ({ engine, db, clock }) => {
    const parent = await engine.enqueue(member({ maxAttempts: 1 }));
    const created = await engine.createBatch({
      onComplete,
      onSuccess,
      jobs: [
        member(), // completed
        member({ maxAttempts: 1 }), // dead: attempts exhausted
        member(), // dead: dead-lettered by its worker
        member(), // cancelled while ready
        member(), // cancelled while leased
        member({ ttlMs: 1_000 }), // expired (dead)
        member({ dependsOn: [parent.jobId] }), // cancelled: its dependency failed
      ],
      seal: true,
    });
    const [done, exhausted, deadLettered, cancelledReady, cancelledLeased, expired, dependent] = ids(
      created.results,
    );
    await complete(engine, done!);
    const leased = await lease(engine, exhausted!);
    await engine.nack({ jobId: exhausted!, attempt: leased.attempt, error: 'no attempts left' });
    await killJob(engine, deadLettered!);
    await engine.cancel(cancelledReady!);
    const running = await lease(engine, cancelledLeased!);
    await engine.cancel(cancelledLeased!);
    await engine.nack({ jobId: cancelledLeased!, attempt: running.attempt, error: 'stopped' });
    clock.advance(2_000);
    await engine.runMaintenance();
    assert.equal((await engine.getJob(expired!)).state, 'dead');
    assert.equal((await engine.getBatch(created.batch.id)).batch.pending, 1, 'the dependent still waits');
    assert.equal(completionJobs(db), 0);
    await killJob(engine, parent.jobId);
    assert.equal((await engine.getJob(dependent!)).state, 'cancelled');
    const { batch, members } = await engine.getBatch(created.batch.id);
    assert.deepEqual(
      { state: batch.state, completed: batch.completed, dead: batch.dead, cancelled: batch.cancelled },
      { state: 'ended', completed: 1, dead: 3, cancelled: 3 },
    );
    assert.deepEqual(
      members.map((m) => m.memberState),
      ['completed', 'dead', 'dead', 'cancelled', 'cancelled', 'dead', 'cancelled'],
    );
    assert.equal(batch.successJobId, null, 'not every member completed');
    assert.equal(completionJobs(db), 1);
    const payload = await completionPayload(engine, batch.completeJobId!);
    assert.deepEqual([payload.batch.completed, payload.batch.dead, payload.batch.cancelled], [1, 3, 3]);
    // A dead member requeued and completed is not counted again, and nothing is enqueued twice.
    assert.equal(
      await engine.requeueDeadLetters({
        queue: (await engine.getJob(deadLettered!)).queue,
        jobIds: [deadLettered!],
      }),
      1,
    );
    await complete(engine, deadLettered!);
    const after = (await engine.getBatch(created.batch.id)).batch;
    assert.deepEqual([after.completed, after.dead], [1, 3]);
    assert.equal(completionJobs(db), 1);
  });
});

test("a running member adds jobs to its sealed batch with its lease's token; others cannot", async () => {
  await withEngine({}, async ({ engine, db }) => {
    const created = await engine.createBatch({ onComplete, jobs: [member(), member()], seal: true });
    const batchId = created.batch.id;
    const [fanOut, sibling] = ids(created.results);
    const outsider = await engine.enqueue(member());
    await expectCode(engine.addToBatch(batchId, [member()]), 'failed_precondition');
    const refusal = async (
      fromMember: string,
      memberToken: string | undefined,
      code: 'failed_precondition' | 'permission_denied',
      message: RegExp,
    ) => {
      const options = { fromMember, ...(memberToken === undefined ? {} : { memberToken }) };
      const error = await expectCode(engine.addToBatch(batchId, [member()], options), code);
      assert.match(error.message, message);
    };
    // No token (what a client that sends only the attempt sends): refused before anything is read.
    await refusal(fanOut!, undefined, 'permission_denied', /^from_member_token: required with from_member/);
    await refusal(outsider.jobId, 'x', 'failed_precondition', /is no member of batch/);
    await refusal(fanOut!, 'x', 'failed_precondition', /is not running \(it is ready\)/);
    const leased = await lease(engine, fanOut!);
    const token = leased.leaseToken!;
    assert.match(token, /^[A-Za-z0-9_-]{22}$/, 'a member leases with 16 bytes of base64url');
    // The job's id and its attempt, all GetJob shows, prove nothing; nor does a wrong token or another member's.
    const notIts = /^from_member_token: not the token of member .* current lease/;
    await refusal(fanOut!, String(leased.attempt), 'permission_denied', notIts);
    await refusal(
      fanOut!,
      `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
      'permission_denied',
      notIts,
    );
    const other = await lease(engine, sibling!);
    assert.notEqual(other.leaseToken, token);
    await refusal(fanOut!, other.leaseToken, 'permission_denied', notIts);
    assert.equal(
      (await lease(engine, outsider.jobId)).leaseToken,
      undefined,
      'a job outside batches has no token',
    );
    // The token of an earlier attempt proves nothing once the member was leased again.
    await engine.nack({
      jobId: fanOut!,
      attempt: leased.attempt,
      error: 'again',
      directive: { kind: 'delay', delayMs: 0 },
    });
    const again = await lease(engine, fanOut!);
    assert.equal(again.attempt, leased.attempt + 1);
    assert.notEqual(again.leaseToken, token);
    await refusal(fanOut!, token, 'permission_denied', notIts);
    const more = ids(
      (
        await engine.addToBatch(batchId, [member(), member()], {
          fromMember: fanOut!,
          memberToken: again.leaseToken!,
        })
      ).results,
    );
    await engine.ack({ jobId: fanOut!, attempt: again.attempt });
    await engine.ack({ jobId: sibling!, attempt: other.attempt });
    assert.equal((await engine.getBatch(batchId)).batch.state, 'sealed', 'what the member added is pending');
    // Once the member ended it cannot add any more.
    await refusal(fanOut!, again.leaseToken, 'failed_precondition', /has ended \(completed\)/);
    await complete(engine, more[0]!);
    await complete(engine, more[1]!);
    const { batch } = await engine.getBatch(batchId);
    assert.deepEqual([batch.state, batch.members, batch.completed], ['ended', 4, 4]);
    assert.equal(completionJobs(db), 1);
  });
});

test('requests are checked: completion jobs, ids, unknown batches; a refused member joins nothing', async () => {
  await withEngine({}, async ({ engine }) => {
    await expectCode(
      engine.createBatch({ onComplete: { ...onComplete, payload: bytes('not json') } }),
      'invalid_argument',
    );
    await expectCode(
      engine.createBatch({ onComplete: { ...onComplete, dependsOn: ['x'] } as BatchCompletionJob }),
      'invalid_argument',
    );
    // An absolute time is refused with what to give instead.
    const absolute = await expectCode(
      engine.createBatch({ onComplete: { ...onComplete, runAtMs: 1 } as BatchCompletionJob }),
      'invalid_argument',
    );
    assert.match(
      absolute.message,
      /takes no runAtMs \(an absolute time; delayMs counts from the end of the batch\)$/,
    );
    await expectCode(
      engine.createBatch({ onComplete: { ...onComplete, queue: 'bad queue!' } }),
      'invalid_argument',
    );
    await expectCode(engine.getBatch('nope'), 'invalid_argument');
    // A malformed id is quoted in the message only in part (the HTTP fuzz sent 70 KB of one).
    const long = 'x'.repeat(70_000);
    for (const refused of [
      await expectCode(engine.getBatch(long), 'invalid_argument'),
      await expectCode(
        engine.addToBatch('01900000-0000-7000-8000-000000000000', [member()], {
          fromMember: long,
          memberToken: 'x',
        }),
        'invalid_argument',
      ),
    ]) {
      assert.ok(refused.message.length < 200, `a message of ${refused.message.length} characters`);
    }
    await expectCode(engine.getBatch('01900000-0000-7000-8000-000000000000'), 'not_found');
    await expectCode(engine.sealBatch('01900000-0000-7000-8000-000000000000'), 'not_found');
    const created = await engine.createBatch({
      onComplete,
      jobs: [member(), member({ queue: 'bad queue!' })],
      seal: true,
    });
    assert.deepEqual(
      created.results.map((r) => r.ok),
      [true, false],
    );
    assert.equal(created.batch.members, 1);
  });
});

test('sealIfAllStored seals in the create only when no member was refused; seal wins', async () => {
  await withEngine({}, async ({ engine }) => {
    const stored = await engine.createBatch({ jobs: [member(), member()], sealIfAllStored: true });
    assert.deepEqual([stored.batch.state, stored.batch.members], ['sealed', 2]);
    const refused = await engine.createBatch({
      jobs: [member(), member({ queue: 'bad queue!' })],
      sealIfAllStored: true,
    });
    assert.deepEqual([refused.batch.state, refused.batch.members], ['open', 1]);
    const both = await engine.createBatch({
      jobs: [member({ queue: 'bad queue!' })],
      seal: true,
      sealIfAllStored: true,
    });
    assert.equal(both.batch.state, 'ended', 'sealed with nothing pending: ended in the seal');
  });
});

test('an add of no jobs with sealIfAllStored that sealed is answered again when repeated', async () => {
  await withEngine({}, async ({ engine }) => {
    const id = (await engine.createBatch({ jobs: [member()] })).batch.id;
    const first = await engine.addToBatch(id, [], { sealIfAllStored: true });
    assert.equal(first.batch.state, 'sealed');
    // Sent again, its answer lost (the SDKs' addToBatch(id, [], { seal: true }) repeats it): as SealBatch would be.
    const again = await engine.addToBatch(id, [], { sealIfAllStored: true });
    assert.deepEqual([again.batch.state, again.results], ['sealed', []]);
  });
});

test('a batch survives a restart: the end after it enqueues the completion job once', async () => {
  await withEngine({}, async (t) => {
    const created = await t.engine.createBatch({ onComplete, jobs: [member(), member()], seal: true });
    const [a, b] = ids(created.results);
    await complete(t.engine, a!);
    const reopened = await t.reopen();
    await complete(reopened.engine, b!);
    const { batch } = await reopened.engine.getBatch(created.batch.id);
    assert.equal(batch.state, 'ended');
    assert.equal(completionJobs(reopened.db), 1);
    return reopened;
  });
});

test('jobs outside batches never touch the batch tables', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const plain = await engine.enqueue(member());
    await complete(engine, plain.jobId);
    assert.equal(rows(db, 'SELECT count(*) FROM batch_members'), 0);
    assert.equal(rows(db, 'SELECT count(*) FROM batches'), 0);
  });
});

test('bulk cancel and delete end members too, and the batch counts them: it ends once', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const queue = fresh();
    const cancelled = await engine.createBatch({ onComplete, jobs: [job(queue), job(queue)], seal: true });
    const bystander = await engine.enqueue(job(queue));
    assert.deepEqual(await engine.cancelJobs({ queue }), { cancelled: 3, cancelRequested: 0 });
    assert.equal((await engine.getJob(bystander.jobId)).state, 'cancelled');
    const first = (await engine.getBatch(cancelled.batch.id)).batch;
    assert.deepEqual([first.state, first.cancelled, first.pending], ['ended', 2, 0]);
    assert.equal(completionJobs(db), 1);

    // A purge deletes ready members: each counts as cancelled, and the batch ends with the last.
    const other = fresh();
    const purged = await engine.createBatch({ onComplete, jobs: [member(), job(other)], seal: true });
    const [a] = ids(purged.results);
    await complete(engine, a!);
    assert.deepEqual(await engine.purgeQueue(other), { deleted: 1 });
    const second = (await engine.getBatch(purged.batch.id)).batch;
    assert.deepEqual([second.state, second.completed, second.cancelled, second.pending], ['ended', 1, 1, 0]);
    assert.equal(completionJobs(db), 2);
    // Nothing is counted twice: a later purge of the cancelled member changes nothing.
    assert.deepEqual(await engine.purgeQueue(other), { deleted: 0 });
    assert.equal(completionJobs(db), 2);
  });
});

test('events: batch_ended in the commit that enqueued the completion job, named by the batch id', async () => {
  await withEngine({}, async ({ engine }) => {
    const c = collect(engine, { kinds: ['batch_ended', 'enqueued'] });
    const created = await engine.createBatch({ onComplete, jobs: [member()], seal: true });
    const [only] = ids(created.results);
    await complete(engine, only!);
    const { batch } = await engine.getBatch(created.batch.id);
    assert.deepEqual(c.summary().slice(-2), [`enqueued:${batch.completeJobId}`, `batch_ended:${batch.id}`]);
    const ended = c.events.at(-1);
    assert.ok(ended?.kind === 'batch_ended');
    assert.deepEqual([ended.queue, ended.type], ['callbacks', 'batch-done']);
    assert.deepEqual(ended.batch, batch);
    // Following one batch: its id as the job filter.
    const one = collect(engine, { jobIds: [batch.id] }, { kind: 'oldest' });
    assert.deepEqual(one.summary(), [`batch_ended:${batch.id}`]);
  });
});

// Task wf18: migration 0030 filled the batch id only on rows a lease could still take; a member
// that had ended before it, requeued later, was leased without its batch id.
test('a member stored without its batch id (ended before 0030) gets it back when requeued, by every path', async () => {
  await withEngine({ options: { queues: { kept: { completedRetentionMs: 86_400_000 } } } }, async (t) => {
    const { engine, db } = t;
    const { batch, results } = await engine.createBatch({
      jobs: [member({ queue: 'kept' }), member(), member(), member()],
      seal: true,
    });
    const [done, cancelled, dead, untouched] = ids(results);
    await complete(engine, done!);
    await engine.cancel(cancelled!);
    await killJob(engine, dead!);
    // The rows as an upgraded database holds them: the column is empty.
    db.exec('UPDATE jobs SET batch_id = NULL');
    await engine.requeueJob(done!);
    const { queue } = await engine.getJob(cancelled!);
    await engine.runBulk({ action: 'requeue', filter: { queue, states: ['cancelled'] } });
    await engine.requeueDeadLetters({ queue: (await engine.getJob(dead!)).queue, jobIds: [dead!] });
    for (const id of [done!, cancelled!, dead!])
      assert.equal((await lease(engine, id)).batchId, batch.id, id);
    // A row a lease can take is left as it is: nothing but a requeue fills it.
    assert.equal((await lease(engine, untouched!)).batchId, null);
  });
});
