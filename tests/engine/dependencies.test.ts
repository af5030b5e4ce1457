/**
 * Job dependencies (issue 33): a job that names `dependsOn` waits in `waiting` until
 * every job it depends on completed, and is released in the transaction that ends the
 * last of them; a failed dependency cancels it, runs it or leaves it waiting, by its
 * policy. Chains, fan-in, diamonds, every terminal state, retention and a restart.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import type { DependencyPolicy, EnqueueRequest, LeasedJob } from '../../src/engine/types.ts';
import type { Db } from '../../src/store/sqlite/open.ts';
import { expectCode, job, withEngine, withQueues } from '../helpers/engine.ts';

/** What one counting query answers, over the raw rows. */
const rows = (db: Db, sql: string): number => db.prepare<[], number>(sql).pluck().get() ?? -1;
const edgeRows = (db: Db): number => rows(db, 'SELECT count(*) FROM job_dependencies');
const jobRows = (db: Db): number => rows(db, 'SELECT count(*) FROM jobs');

/** Each job on a queue of its own, so a reserve of that queue leases exactly it. */
let queueCounter = 0;
const fresh = (): string => `q${++queueCounter}`;

async function add(
  engine: Engine,
  extra: Partial<EnqueueRequest> = {},
): Promise<{ id: string; queue: string }> {
  const queue = extra.queue ?? fresh();
  const { jobId } = await engine.enqueue(job(queue, extra));
  return { id: jobId, queue };
}

async function after(
  engine: Engine,
  parents: readonly { id: string }[],
  policy?: DependencyPolicy,
  extra: Partial<EnqueueRequest> = {},
): Promise<{ id: string; queue: string }> {
  return add(engine, {
    dependsOn: parents.map((p) => p.id),
    ...(policy === undefined ? {} : { onDependencyFailure: policy }),
    ...extra,
  });
}

async function lease(engine: Engine, j: { id: string; queue: string }): Promise<LeasedJob> {
  const leased = await engine.reserve({ queues: [j.queue], maxJobs: 10, leaseMs: 60_000 });
  assert.deepEqual(
    leased.map((l) => l.id),
    [j.id],
    `job ${j.id} should be the one ready job of ${j.queue}`,
  );
  return leased[0]!;
}

async function complete(engine: Engine, j: { id: string; queue: string }, result?: string): Promise<void> {
  const leased = await lease(engine, j);
  await engine.ack({
    jobId: leased.id,
    attempt: leased.attempt,
    ...(result === undefined
      ? {}
      : { result: new TextEncoder().encode(result), resultContentType: 'text/plain' }),
  });
}

async function kill(engine: Engine, j: { id: string; queue: string }): Promise<void> {
  const leased = await lease(engine, j);
  await engine.nack({
    jobId: leased.id,
    attempt: leased.attempt,
    error: 'boom',
    directive: { kind: 'dead_letter' },
  });
}

const stateOf = async (engine: Engine, j: { id: string }) => (await engine.getJob(j.id)).state;

test('a chain: the dependent waits, unseen by leases, and is ready in the commit that acks its dependency', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const a = await add(engine);
    const b = await after(engine, [a]);
    assert.equal(await stateOf(engine, b), 'waiting');
    assert.deepEqual(await engine.reserve({ queues: [b.queue], maxJobs: 10 }), []);
    const counts = (await engine.queueCounts()).get(b.queue);
    assert.equal(counts?.waiting, 1);
    await complete(engine, a);
    assert.equal(await stateOf(engine, b), 'ready');
    // A job others depend on is kept completed (they may read its result), though the queue keeps none.
    assert.equal(await stateOf(engine, a), 'completed');
    await complete(engine, b);
    // The dependent, acked and not kept, takes its edges with it.
    assert.equal(edgeRows(db), 0);
  });
});

test('a long-poll waiting on the dependent gets it in the commit of the ack that releases it', async () => {
  await withEngine({}, async ({ engine }) => {
    const a = await add(engine);
    const b = await after(engine, [a]);
    const waiting = engine.reserve({ queues: [b.queue], maxJobs: 1, waitMs: 30_000 });
    await complete(engine, a);
    const [got] = await waiting;
    assert.equal(got?.id, b.id);
  });
});

test('fan-in: the collector is released once, when the last of its dependencies completes', async () => {
  await withEngine({}, async ({ engine }) => {
    const parts = [await add(engine), await add(engine), await add(engine)];
    const collector = await after(engine, parts);
    await complete(engine, parts[2]!);
    await complete(engine, parts[0]!);
    assert.equal(await stateOf(engine, collector), 'waiting');
    await complete(engine, parts[1]!);
    assert.equal(await stateOf(engine, collector), 'ready');
    assert.equal((await engine.queueCounts()).get(collector.queue)?.ready, 1);
  });
});

test('a diamond: D after B and C, both after A, runs exactly once', async () => {
  await withEngine({}, async ({ engine }) => {
    const a = await add(engine);
    const b = await after(engine, [a]);
    const c = await after(engine, [a]);
    const d = await after(engine, [b, c]);
    await complete(engine, a);
    assert.equal(await stateOf(engine, b), 'ready');
    assert.equal(await stateOf(engine, c), 'ready');
    await complete(engine, b);
    assert.equal(await stateOf(engine, d), 'waiting');
    await complete(engine, c);
    await complete(engine, d);
    assert.deepEqual(await engine.reserve({ queues: [d.queue], maxJobs: 10 }), []);
  });
});

test('acks in a batch release their dependents: the one-statement delete leaves jobs in a dependency to the slow path', async () => {
  await withEngine({}, async ({ engine }) => {
    const queue = fresh();
    const plain = [];
    for (let i = 0; i < 12; i++) plain.push(await add(engine, { queue }));
    const parent = await add(engine, { queue });
    const child = await after(engine, [parent]);
    const leased = await engine.reserve({ queues: [queue], maxJobs: 100 });
    assert.equal(leased.length, 13);
    const outcomes = await engine.ackBatch(leased.map((l) => ({ jobId: l.id, attempt: l.attempt })));
    assert.ok(outcomes.every((o) => o.ok));
    assert.equal(await stateOf(engine, child), 'ready');
    assert.equal(await stateOf(engine, parent), 'completed');
  });
});

test('acks in a batch of jobs others wait on: each kept completed with its result once; a repeat, a stale attempt and a cancel are refused', async () => {
  await withEngine({}, async ({ engine }) => {
    const queue = fresh();
    const parents = [];
    for (let i = 0; i < 12; i++) parents.push(await add(engine, { queue }));
    const collector = await after(engine, parents);
    const leased = await engine.reserve({ queues: [queue], maxJobs: 100, leaseMs: 60_000 });
    assert.equal(leased.length, 12);
    const [stale, cancelled, ...rest] = leased;
    await engine.cancel(cancelled!.id);
    const acks = [
      ...rest.map((l, i) => ({ jobId: l.id, attempt: l.attempt, result: new TextEncoder().encode(`r${i}`) })),
      { jobId: rest[0]!.id, attempt: rest[0]!.attempt },
      { jobId: stale!.id, attempt: stale!.attempt + 1 },
      { jobId: cancelled!.id, attempt: cancelled!.attempt },
    ];
    const outcomes = await engine.ackBatch(acks);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.code)),
      [...rest.map(() => 'ok'), 'not_found', 'lease_lost', 'job_cancelled'],
    );
    for (const [i, l] of rest.entries()) {
      const info = await engine.getJob(l.id);
      assert.equal(info.state, 'completed');
      assert.equal(new TextDecoder().decode(info.result!), `r${i}`);
    }
    assert.equal(await stateOf(engine, stale!), 'leased');
    assert.deepEqual(await engine.counterMismatches(), []);
    // The stale one completes at its own attempt; the cancelled one failed, so the collector is cancelled.
    await engine.ack({ jobId: stale!.id, attempt: stale!.attempt });
    assert.equal(await stateOf(engine, collector), 'cancelled');
    assert.deepEqual(await engine.counterMismatches(), []);
  });
});

test('acks in a batch of collectors (jobs that only wait): deleted with their edges, next to kept jobs; a stale attempt and a cancel are refused', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const queue = fresh();
    const collectors = [];
    for (let i = 0; i < 4; i++) {
      const parents = [await add(engine), await add(engine)];
      collectors.push(await after(engine, parents, undefined, { queue }));
      for (const parent of parents) await complete(engine, parent);
    }
    // A job others wait on, acked in the same batch: kept completed, its dependent released.
    const parent = await add(engine, { queue });
    const dependent = await after(engine, [parent], undefined, { queue: fresh() });
    const leased = await engine.reserve({ queues: [queue], maxJobs: 100, leaseMs: 60_000 });
    assert.equal(leased.length, 5);
    const byId = new Map(leased.map((l) => [l.id, l]));
    const [first, second, stale, cancelled] = collectors.map((c) => byId.get(c.id)!);
    await engine.cancel(cancelled!.id);
    const edgesBefore = edgeRows(db);
    const outcomes = await engine.ackBatch([
      { jobId: first!.id, attempt: first!.attempt },
      { jobId: parent.id, attempt: byId.get(parent.id)!.attempt },
      { jobId: second!.id, attempt: second!.attempt },
      { jobId: stale!.id, attempt: stale!.attempt + 1 },
      { jobId: cancelled!.id, attempt: cancelled!.attempt },
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.ok ? 'ok' : o.code)),
      ['ok', 'ok', 'ok', 'lease_lost', 'job_cancelled'],
    );
    // Deleted (GetJob answers from the recently finished outcomes), and their edges with them.
    for (const gone of [first!, second!]) {
      assert.equal(rows(db, `SELECT count(*) FROM jobs WHERE id = '${gone.id}'`), 0);
      assert.equal(await stateOf(engine, gone), 'completed');
    }
    // The cancelled one is kept, with its edges.
    assert.equal(edgeRows(db), edgesBefore - 4);
    assert.equal(await stateOf(engine, stale!), 'leased');
    assert.equal(await stateOf(engine, parent), 'completed');
    assert.equal(await stateOf(engine, dependent), 'ready');
    assert.deepEqual(await engine.counterMismatches(), []);
  });
});

test('policy cancel (the default): a dead dependency cancels the job, and its own dependents by their policies', async () => {
  await withEngine({}, async ({ engine }) => {
    const a = await add(engine);
    const b = await after(engine, [a]);
    const cancelsToo = await after(engine, [b], 'cancel');
    const finallyJob = await after(engine, [b], 'run');
    const keepsWaiting = await after(engine, [b], 'wait');
    await kill(engine, a);
    const info = await engine.getJob(b.id);
    assert.equal(info.state, 'cancelled');
    assert.equal(info.cancelledBy, `dependency:${a.id}`);
    assert.equal((await engine.getJob(cancelsToo.id)).cancelledBy, `dependency:${b.id}`);
    assert.equal(await stateOf(engine, finallyJob), 'ready');
    assert.equal(await stateOf(engine, keepsWaiting), 'waiting');
  });
});

test('policy run: a "finally" job runs after its dependencies ended, whatever the end', async () => {
  await withEngine({}, async ({ engine }) => {
    const ok = await add(engine);
    const dead = await add(engine);
    const cleanup = await after(engine, [ok, dead], 'run');
    await kill(engine, dead);
    assert.equal(await stateOf(engine, cleanup), 'waiting');
    await complete(engine, ok);
    assert.equal(await stateOf(engine, cleanup), 'ready');
  });
});

test('policy wait: the job waits through a failure, and goes on when the failed job is requeued and completes', async () => {
  await withEngine({}, async ({ engine }) => {
    const a = await add(engine);
    const b = await after(engine, [a], 'wait');
    await kill(engine, a);
    assert.equal(await stateOf(engine, a), 'dead');
    assert.equal(await stateOf(engine, b), 'waiting');
    await engine.requeueJob(a.id);
    assert.equal(await stateOf(engine, b), 'waiting');
    await complete(engine, a);
    assert.equal(await stateOf(engine, b), 'ready');
  });
});

test('fan-in over every terminal state: completed, dead, cancelled while waiting, cancelled while leased, expired', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const done = await add(engine);
    const dead = await add(engine, { maxAttempts: 1 });
    const cancelledReady = await add(engine);
    const cancelledLeased = await add(engine);
    const expired = await add(engine, { ttlMs: 1_000 });
    const collector = await after(engine, [done, dead, cancelledReady, cancelledLeased, expired], 'run');
    await complete(engine, done);
    const leasedDead = await lease(engine, dead);
    await engine.nack({ jobId: dead.id, attempt: leasedDead.attempt, error: 'no attempts left' });
    assert.equal(await stateOf(engine, dead), 'dead');
    await engine.cancel(cancelledReady.id);
    const running = await lease(engine, cancelledLeased);
    await engine.cancel(cancelledLeased.id);
    assert.equal(await stateOf(engine, collector), 'waiting');
    await engine.nack({ jobId: running.id, attempt: running.attempt, error: 'stopped' });
    assert.equal(await stateOf(engine, cancelledLeased), 'cancelled');
    assert.equal(await stateOf(engine, collector), 'waiting');
    clock.advance(2_000);
    await engine.runMaintenance();
    assert.equal(await stateOf(engine, expired), 'dead');
    assert.equal(await stateOf(engine, collector), 'ready');
  });
});

test('cancelling a waiting job ends it and passes the failure on', async () => {
  await withEngine({}, async ({ engine }) => {
    const a = await add(engine);
    const b = await after(engine, [a]);
    const c = await after(engine, [b]);
    assert.deepEqual(await engine.cancel(b.id), { previousState: 'waiting', state: 'cancelled' });
    assert.equal(await stateOf(engine, c), 'cancelled');
    // The dependency completing later releases nothing.
    await complete(engine, a);
    assert.equal(await stateOf(engine, b), 'cancelled');
  });
});

test('a released job with a run time ahead becomes scheduled, and ready when due', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const a = await add(engine);
    const b = await after(engine, [a], undefined, { delayMs: 60_000 });
    assert.equal(await stateOf(engine, b), 'waiting');
    await complete(engine, a);
    assert.equal(await stateOf(engine, b), 'scheduled');
    clock.advance(60_000);
    await engine.runMaintenance();
    assert.equal(await stateOf(engine, b), 'ready');
  });
});

test('depends_on at enqueue: unknown, failed, completed, duplicated and too many', async () => {
  await withEngine(
    { options: { limits: { ...defaultEngineLimits, maxDependenciesPerJob: 3 } } },
    async ({ engine }) => {
      const unknown = await expectCode(
        engine.enqueue(job(fresh(), { dependsOn: ['01a2365f-985c-7000-b7f9-d57e51622832'] })),
        'not_found',
      );
      assert.equal(unknown.rejection?.reason, 'unknown_dependency');
      assert.match(
        unknown.message,
        /depends_on\[0\]: job 01a2365f-985c-7000-b7f9-d57e51622832 does not exist/,
      );
      // No UUID names no job, and the message says it is not an id (not that a job is missing).
      const noId = await expectCode(engine.enqueue(job(fresh(), { dependsOn: ['nope'] })), 'not_found');
      assert.equal(noId.rejection?.reason, 'unknown_dependency');
      assert.match(noId.message, /depends_on\[0\]: "nope" is not a job id \(a UUID/);
      // A job id copied in upper case names the same job, as GetJob takes it.
      const upper = await add(engine);
      const { jobId } = await engine.enqueue(job(fresh(), { dependsOn: [upper.id.toUpperCase()] }));
      assert.equal(await stateOf(engine, { id: jobId }), 'waiting');

      const dead = await add(engine);
      await kill(engine, dead);
      const failed = await expectCode(
        engine.enqueue(job(fresh(), { dependsOn: [dead.id] })),
        'failed_precondition',
      );
      assert.equal(failed.rejection?.reason, 'dependency_failed');
      // Under run, a failed dependency is resolved: the job is ready at once; under wait, it waits.
      assert.equal(await stateOf(engine, await after(engine, [dead], 'run')), 'ready');
      assert.equal(await stateOf(engine, await after(engine, [dead], 'wait')), 'waiting');

      const parent = await add(engine);
      await after(engine, [parent]); // parent now has a dependent: kept when completed
      await complete(engine, parent);
      assert.equal(await stateOf(engine, await after(engine, [parent])), 'ready');

      const twice = await expectCode(
        engine.enqueue(job(fresh(), { dependsOn: [parent.id, parent.id] })),
        'invalid_argument',
      );
      assert.match(twice.message, /names job .* twice/);
      const many = await expectCode(
        engine.enqueue(job(fresh(), { dependsOn: ['a', 'b', 'c', 'd'] })),
        'invalid_argument',
      );
      assert.match(many.message, /limits\.max_dependencies_per_job/);

      // A policy without dependencies would be accepted and ignored: refused, in a flow too
      // (where `after` is what it is about).
      const lone = await expectCode(
        engine.enqueue(job(fresh(), { onDependencyFailure: 'run' })),
        'invalid_argument',
      );
      assert.equal(lone.rejection?.reason, 'invalid_job');
      assert.match(
        lone.message,
        /on_dependency_failure is run but the job has no dependencies: .*give depends_on/,
      );
      const queue = fresh();
      const root = await engine.enqueueFlow([{ ...job(queue), name: 'a', onDependencyFailure: 'wait' }]);
      assert.equal(root.committed, false);
      assert.match(root.committed ? '' : root.rejections[0]!.message, /no dependencies/);
      const flow = await engine.enqueueFlow([
        { ...job(queue), name: 'a' },
        { ...job(queue), name: 'b', after: ['a'], onDependencyFailure: 'run' },
      ]);
      assert.equal(flow.committed, true);
    },
  );
});

test('a queue holding jobs that wait on others is not deleted, and the refusal says what to do', async () => {
  await withEngine({}, async ({ engine }) => {
    const a = await add(engine);
    const queue = fresh();
    await engine.enqueue(job(queue, { dependsOn: [a.id] }));
    const refused = await expectCode(engine.deleteQueue(queue), 'failed_precondition');
    assert.match(
      refused.message,
      /holds 1 job \(waiting 1\); only an empty queue can be deleted: cancel its jobs waiting on other jobs \(by id, or their flow or batch\) first$/,
    );
  });
});

test('an all-or-nothing batch with an unknown dependency stores nothing', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const a = await add(engine);
    const before = jobRows(db);
    const result = await engine.enqueueAtomic([
      job(fresh(), { dependsOn: [a.id] }),
      job(fresh(), { dependsOn: ['x'] }),
    ]);
    assert.equal(result.committed, false);
    assert.equal(jobRows(db), before);
    assert.equal(edgeRows(db), 0);
  });
});

test('retention: a completed job is not swept while a job depending on it has not ended', async () => {
  const queue = 'kept';
  await withEngine(
    { options: withQueues({ [queue]: { completedRetentionMs: 1_000 } }) },
    async ({ engine, clock, db }) => {
      const a = await add(engine, { queue });
      const b = await after(engine, [a]);
      const counted = `SELECT dependents FROM job_dependents WHERE parent_id = '${a.id}'`;
      assert.equal(rows(db, counted), 1, 'its count of dependents (limits.max_dependents_per_job)');
      await complete(engine, a);
      clock.advance(10_000);
      await engine.runMaintenance();
      assert.equal(await stateOf(engine, a), 'completed', 'b has not run yet');
      await complete(engine, b);
      clock.advance(61_000); // the next sweep
      await engine.runMaintenance();
      assert.equal(rows(db, `SELECT count(*) FROM jobs WHERE id = '${a.id}'`), 0, 'swept once b ended');
      assert.equal(rows(db, 'SELECT count(*) FROM job_dependents'), 0, 'its count swept with it');
    },
  );
});

test('jobs without dependencies never reach the dependency table', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const queue = fresh();
    for (let i = 0; i < 20; i++) await add(engine, { queue });
    const leased = await engine.reserve({ queues: [queue], maxJobs: 100 });
    await engine.ackBatch(leased.map((l) => ({ jobId: l.id, attempt: l.attempt })));
    assert.equal(jobRows(db), 0);
    assert.equal(edgeRows(db), 0);
    assert.equal(rows(db, 'SELECT count(*) FROM job_dependents'), 0);
  });
});

test("counts of dependents: by id once per unit; a flow's own jobs by their edges until named by id", async () => {
  await withEngine({}, async ({ engine, db }) => {
    const gate = await add(engine);
    const queue = fresh();
    const flowJob = (name: string, after: string[] = []) => ({
      name,
      queue,
      type: 't',
      payload: new Uint8Array(),
      after,
    });
    const result = await engine.enqueueFlow([
      { ...flowJob('root'), dependsOn: [gate.id] },
      flowJob('a', ['root']),
      flowJob('b', ['root']),
      { ...flowJob('c', ['root']), dependsOn: [gate.id] },
      flowJob('end', ['a', 'b', 'c']),
    ]);
    assert.ok(result.committed);
    const root = result.jobs[0]!.jobId;
    const counted = (id: string) =>
      rows(db, `SELECT dependents FROM job_dependents WHERE parent_id = '${id}'`);
    assert.equal(counted(gate.id), 2, 'one row, written once for the unit');
    assert.equal(rows(db, 'SELECT count(*) FROM job_dependents'), 1, "the flow's own jobs: no row");
    // Named by id later, the root's count starts from its edges (3) with the new one.
    await after(engine, [{ id: root }]);
    assert.equal(counted(root), 4);
    await after(engine, [{ id: root }]);
    assert.equal(counted(root), 5);
    assert.equal(
      counted(root),
      rows(db, `SELECT count(*) FROM job_dependencies WHERE parent_id = '${root}'`),
    );
  });
});

test('a waiting job survives a restart and is released after it', async () => {
  await withEngine({}, async (t) => {
    const a = await add(t.engine);
    const b = await after(t.engine, [a]);
    const t2 = await t.reopen();
    assert.equal(await stateOf(t2.engine, b), 'waiting');
    await complete(t2.engine, a);
    assert.equal(await stateOf(t2.engine, b), 'ready');
    return t2;
  });
});

test('a bulk cancel or delete of a job others wait on passes its end on: none is stranded', async () => {
  await withEngine({}, async ({ engine, db }) => {
    // Cancelled by CancelJobs: the `cancel` dependent is cancelled, the `run` one released,
    // the `wait` one keeps waiting (a requeue of the parent would resume it).
    const parent = await add(engine);
    const cancels = await after(engine, [parent], 'cancel');
    const runs = await after(engine, [parent], 'run');
    const waits = await after(engine, [parent], 'wait');
    assert.deepEqual(await engine.cancelJobs({ queue: parent.queue }), { cancelled: 1, cancelRequested: 0 });
    assert.equal((await engine.getJob(cancels.id)).state, 'cancelled');
    assert.equal((await engine.getJob(runs.id)).state, 'ready');
    assert.equal((await engine.getJob(waits.id)).state, 'waiting');

    // Deleted by PurgeQueue (a bulk delete): the same, as a cancelled dependency; and a deleted
    // job that waited on others forgets its edges.
    const second = await add(engine);
    const cancels2 = await after(engine, [second], 'cancel');
    const runs2 = await after(engine, [second], 'run');
    assert.deepEqual(await engine.purgeQueue(second.queue), { deleted: 1 });
    assert.equal((await engine.getJob(cancels2.id)).state, 'cancelled');
    assert.equal((await engine.getJob(runs2.id)).state, 'ready');
    const edges = edgeRows(db);
    assert.deepEqual(await engine.purgeQueue(runs2.queue), { deleted: 1 });
    assert.equal(edgeRows(db), edges - 1, "the deleted job's own edge is forgotten");
    assert.equal(
      rows(db, "SELECT count(*) FROM jobs WHERE state = 'waiting'"),
      1,
      'only the `wait` job waits',
    );
  });
});
