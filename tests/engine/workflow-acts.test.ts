/**
 * Flows and batches as one thing (issue 33): GetFlow reads the jobs connected to a job
 * through dependencies, either way; CancelFlow and CancelBatch cancel every job not yet
 * ended in one write, audited; GetJob shows a job's dependencies, dependents and batch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maxFlowWalkEdges } from '../../src/engine/control/index.ts';
import type { Engine } from '../../src/engine/engine.ts';
import type { FlowJob } from '../../src/engine/types.ts';
import { bytes, expectCode, withEngine } from '../helpers/engine.ts';
import { collect } from '../helpers/events.ts';

const flowJob = (name: string, after: string[] = [], extra: Partial<FlowJob> = {}): FlowJob => ({
  name,
  queue: `wa-${name}`,
  type: name,
  payload: bytes('x'),
  after,
  ...extra,
});

/** A diamond a → (b, c) → d, and e after d under the run policy (a "finally" job). */
async function diamond(engine: Engine): Promise<Record<string, string>> {
  const result = await engine.enqueueFlow([
    flowJob('a'),
    flowJob('b', ['a']),
    flowJob('c', ['a']),
    flowJob('d', ['b', 'c']),
    flowJob('e', ['d'], { onDependencyFailure: 'run' }),
  ]);
  assert.ok(result.committed);
  return Object.fromEntries(result.jobs.map((j) => [j.name, j.jobId]));
}

async function runOne(engine: Engine, queue: string): Promise<void> {
  const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1, leaseMs: 60_000 });
  assert.ok(leased, `a job of ${queue} should be ready`);
  await engine.ack({ jobId: leased.id, attempt: leased.attempt });
}

test('GetFlow: every job connected either way, in enqueue order, with the edges and their states', async () => {
  await withEngine(
    { options: { queues: { 'wa-a': { completedRetentionMs: 60_000 } } } },
    async ({ engine }) => {
      const ids = await diamond(engine);
      const unrelated = await engine.enqueue({ queue: 'wa-other', type: 'x', payload: bytes('x') });
      await runOne(engine, 'wa-a');
      for (const start of [ids.a!, ids.d!, ids.e!]) {
        const flow = await engine.getFlow(start);
        assert.deepEqual(
          flow.jobs.map((j) => [j.type, j.state]),
          [
            ['a', 'completed'],
            ['b', 'ready'],
            ['c', 'ready'],
            ['d', 'waiting'],
            ['e', 'waiting'],
          ],
        );
        assert.equal(flow.truncated, false);
        assert.deepEqual(
          flow.edges.map((e) => [e.jobId, e.dependsOn, e.state, e.name]).sort(),
          [
            [ids.b, ids.a, 'completed', 'a'],
            [ids.c, ids.a, 'completed', 'a'],
            [ids.d, ids.b, 'pending', 'b'],
            [ids.d, ids.c, 'pending', 'c'],
            [ids.e, ids.d, 'pending', 'd'],
          ].sort(),
        );
      }
      assert.deepEqual(
        (await engine.getFlow(unrelated.jobId)).jobs.map((j) => j.id),
        [unrelated.jobId],
      );
      assert.equal((await engine.getFlow(ids.a!, 2)).truncated, true);
      await expectCode(engine.getFlow('01900000-0000-7000-8000-000000000000'), 'not_found');
    },
  );
});

test('GetJob: the dependencies and dependents of a job with their states, and its batch', async () => {
  await withEngine({}, async ({ engine }) => {
    const ids = await diamond(engine);
    const d = await engine.getJob(ids.d!);
    assert.deepEqual(
      d.dependencies?.map((l) => [l.id, l.type, l.state, l.edge, l.name]),
      [
        [ids.b, 'b', 'waiting', 'pending', 'b'],
        [ids.c, 'c', 'waiting', 'pending', 'c'],
      ],
    );
    assert.deepEqual(
      d.dependents?.map((l) => [l.id, l.state, l.edge]),
      [[ids.e, 'waiting', 'pending']],
    );
    const a = await engine.getJob(ids.a!);
    assert.equal(a.dependencies, undefined, 'a waits on nothing');
    assert.equal(a.dependents?.length, 2);
    const plain = await engine.enqueue({ queue: 'wa-plain', type: 'x', payload: bytes('x') });
    const info = await engine.getJob(plain.jobId);
    assert.deepEqual([info.dependencies, info.dependents, info.batchId], [undefined, undefined, undefined]);
    const { batch, results } = await engine.createBatch({
      jobs: [{ queue: 'wa-plain', type: 'x', payload: bytes('x') }],
    });
    const member = results[0]!;
    assert.ok(member.ok);
    assert.equal((await engine.getJob(member.jobId)).batchId, batch.id);
  });
});

// Task batchguard18: 20 jobs each waited on by the same 5,000 (100,000 edges), made by copying
// rows (an enqueue each would cost seconds): a read walks at most maxFlowWalkEdges of them.
test('GetFlow: a dense flow is read up to its edge budget, marked edgesLimited; CancelFlow refuses it', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const parent = await engine.enqueue({ queue: 'wa-dense', type: 'p', payload: bytes('') });
    const child = await engine.enqueue({
      queue: 'wa-dense',
      type: 'c',
      payload: bytes(''),
      dependsOn: [parent.jobId],
    });
    const columns = (
      db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('jobs') as string[]
    ).filter((c) => c !== 'seq');
    const copy = (id: string, type: string, count: number) =>
      db
        .prepare(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
           INSERT INTO jobs (${columns.join(', ')})
           SELECT ${columns.map((c) => (c === 'id' ? `'${type}-' || n.i` : c)).join(', ')} FROM n, jobs WHERE jobs.id = ?`,
        )
        .run(id);
    copy(parent.jobId, 'p', 19);
    copy(child.jobId, 'c', 4_999);
    db.exec(`INSERT OR IGNORE INTO job_dependencies (child_seq, parent_id, policy)
             SELECT c.seq, p.id, 'cancel' FROM jobs c, jobs p WHERE c.type = 'c' AND p.type = 'p'`);
    assert.equal(db.prepare('SELECT count(*) FROM job_dependencies').pluck().get(), 100_000);
    const started = performance.now();
    const flow = await engine.getFlow(child.jobId);
    const readMs = performance.now() - started;
    // The child's 20 parents, then their children until 100,000 edges were read.
    assert.deepEqual([flow.truncated, flow.edgesLimited], [true, true]);
    assert.ok(flow.jobs.length > 20 && flow.jobs.length <= 5_020, `${flow.jobs.length} jobs`);
    assert.ok(flow.jobs.some((j) => j.id === child.jobId));
    assert.ok(readMs < 5_000, `the read took ${readMs.toFixed(0)} ms`);
    const refused = await expectCode(engine.cancelFlow(child.jobId), 'resource_exhausted');
    assert.match(refused.message, new RegExp(`has more than ${maxFlowWalkEdges} edges to walk`));
    // The copies go again: the engine's counters (checked after each test) never knew them.
    db.exec(`DELETE FROM job_dependencies WHERE parent_id GLOB 'p-*'
               OR child_seq IN (SELECT seq FROM jobs WHERE id GLOB 'c-*');
             DELETE FROM jobs WHERE id GLOB 'p-*' OR id GLOB 'c-*'`);
    // A sparse flow is read whole.
    const alone = await engine.enqueue({ queue: 'wa-dense', type: 'x', payload: bytes('') });
    assert.deepEqual(
      [(await engine.getFlow(alone.jobId)).truncated, (await engine.getFlow(alone.jobId)).edgesLimited],
      [false, false],
    );
  });
});

test('CancelFlow: every job not yet ended, a leased one by request, audited; ended jobs stay as they are', async () => {
  await withEngine(
    { options: { queues: { 'wa-a': { completedRetentionMs: 60_000 } } } },
    async ({ engine }) => {
      const ids = await diamond(engine);
      await runOne(engine, 'wa-a');
      const [running] = await engine.reserve({ queues: ['wa-b'], maxJobs: 1, leaseMs: 60_000 });
      assert.equal(running?.id, ids.b);
      const audit = { actor: 'key:ops', action: 'flow.cancel', target: `job:${ids.d}` };
      assert.deepEqual(await engine.cancelFlow(ids.d!, audit), { cancelled: 3, cancelRequested: 1 });
      const states = Object.fromEntries(
        await Promise.all(
          Object.entries(ids).map(async ([name, id]) => [name, (await engine.getJob(id)).state]),
        ),
      );
      assert.deepEqual(states, {
        a: 'completed',
        b: 'leased',
        c: 'cancelled',
        d: 'cancelled',
        e: 'cancelled',
      });
      assert.notEqual((await engine.getJob(ids.b!)).cancelledAtMs, null, 'its worker was asked to stop');
      await expectCode(engine.ack({ jobId: running!.id, attempt: running!.attempt }), 'job_cancelled');
      assert.equal((await engine.getJob(ids.b!)).state, 'cancelled');
      const [entry] = (await engine.listAudit({ action: 'flow.cancel' })).items;
      assert.deepEqual(entry?.details, { jobs: 5, cancelled: 3, cancelRequested: 1 });
      // Again: nothing left to cancel.
      assert.deepEqual(await engine.cancelFlow(ids.a!), { cancelled: 0, cancelRequested: 0 });
    },
  );
});

test('CancelBatch: its pending members are cancelled in one write and the sealed batch ends once', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const job = (queue: string) => ({ queue, type: 'x', payload: bytes('x') });
    const { batch, results } = await engine.createBatch({
      onComplete: { queue: 'wa-callbacks', type: 'done', payload: new Uint8Array() },
      jobs: [job('wa-m1'), job('wa-m2'), job('wa-m3')],
      seal: true,
    });
    assert.ok(results.every((r) => r.ok));
    await runOne(engine, 'wa-m1');
    const [running] = await engine.reserve({ queues: ['wa-m2'], maxJobs: 1, leaseMs: 60_000 });
    const audit = { actor: 'key:ops', action: 'batch.cancel', target: `batch:${batch.id}` };
    assert.deepEqual(await engine.cancelBatch(batch.id, audit), { cancelled: 1, cancelRequested: 1 });
    assert.equal((await engine.getBatch(batch.id)).batch.state, 'sealed', 'the running member has not ended');
    await engine.nack({ jobId: running!.id, attempt: running!.attempt, error: 'stopped' });
    const ended = (await engine.getBatch(batch.id)).batch;
    assert.deepEqual([ended.state, ended.completed, ended.cancelled, ended.dead], ['ended', 1, 2, 0]);
    const callbacks = db.prepare("SELECT count(*) FROM jobs WHERE queue = 'wa-callbacks'").pluck().get();
    assert.equal(callbacks, 1);
    assert.equal((await engine.listAudit({ action: 'batch.cancel' })).items.length, 1);
    await expectCode(engine.cancelBatch('01900000-0000-7000-8000-000000000000'), 'not_found');
  });
});

test('events: a waiting job released by the ack of its last dependency, in that commit', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const c = collect(engine, { kinds: ['released', 'completed'] });
    const ids = await diamond(engine);
    await runOne(engine, 'wa-a');
    await runOne(engine, 'wa-b');
    assert.deepEqual(c.summary(), [
      `completed:${ids.a}`,
      `released:${ids.b}`,
      `released:${ids.c}`,
      `completed:${ids.b}`,
    ]);
    await runOne(engine, 'wa-c');
    const released = c.events.at(-1);
    assert.equal(released?.kind, 'released');
    assert.equal(released?.jobId, ids.d);
    assert.deepEqual(
      released?.kind === 'released' ? [released.state, released.runAtMs <= clock.nowMs()] : [],
      ['ready', true],
    );
  });
});
