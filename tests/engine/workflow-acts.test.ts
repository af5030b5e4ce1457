/**
 * Flows and batches as one thing (issue 33): GetFlow reads the jobs connected to a job
 * through dependencies, either way; CancelFlow and CancelBatch cancel every job not yet
 * ended in one write, audited; GetJob shows a job's dependencies, dependents and batch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
