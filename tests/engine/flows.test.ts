/**
 * Flows (issue 33): one call enqueues a DAG whose jobs refer to each other by names
 * local to the request, all or nothing, validated and bounded; a retried flow with
 * idempotency keys stores nothing twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import type { FlowJob, FlowResult } from '../../src/engine/types.ts';
import type { Db } from '../../src/store/sqlite/open.ts';
import { expectCode, job, withEngine, withQueues } from '../helpers/engine.ts';

const rows = (db: Db, sql: string): number => db.prepare<[], number>(sql).pluck().get() ?? -1;

function flowJob(name: string, after: string[] = [], extra: Partial<FlowJob> = {}): FlowJob {
  return { ...job(`flow-${name}`), name, after, ...extra };
}

function ids(result: FlowResult): Record<string, string> {
  assert.ok(result.committed, 'the flow should be stored');
  return Object.fromEntries(result.jobs.map((j) => [j.name, j.jobId]));
}

async function runOne(engine: Engine, queue: string): Promise<string> {
  const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1 });
  assert.ok(leased, `a job of ${queue} should be ready`);
  await engine.ack({ jobId: leased.id, attempt: leased.attempt });
  return leased.id;
}

/** A flow job `a` with an idempotency key whose original is stored and dead (a failed parent under cancel). */
async function deadKeyedJob(engine: Engine): Promise<FlowJob> {
  const a = flowJob('a', [], { idempotencyKey: 'k-a' });
  const id = ids(await engine.enqueueFlow([a]));
  const [leased] = await engine.reserve({ queues: ['flow-a'] });
  await engine.nack({
    jobId: id.a!,
    attempt: leased!.attempt,
    error: 'x',
    directive: { kind: 'dead_letter' },
  });
  return a;
}

test('a diamond flow: names map to ids, only the roots are ready, the rest run in order', async () => {
  await withEngine({}, async ({ engine }) => {
    const result = await engine.enqueueFlow([
      flowJob('collect', ['left', 'right']),
      flowJob('left', ['split']),
      flowJob('right', ['split']),
      flowJob('split'),
    ]);
    const id = ids(result);
    assert.deepEqual(
      result.committed && result.jobs.map((j) => j.name),
      ['collect', 'left', 'right', 'split'],
      'answered in request order',
    );
    for (const name of ['collect', 'left', 'right'])
      assert.equal((await engine.getJob(id[name]!)).state, 'waiting');
    assert.equal((await engine.getJob(id.split!)).state, 'ready');
    assert.equal(await runOne(engine, 'flow-split'), id.split);
    assert.equal(await runOne(engine, 'flow-left'), id.left);
    assert.equal((await engine.getJob(id.collect!)).state, 'waiting');
    assert.equal(await runOne(engine, 'flow-right'), id.right);
    assert.equal(await runOne(engine, 'flow-collect'), id.collect);
  });
});

/** `root`, `width` children on `queue` after it, and a `collector` after them all. */
function fanOutIn(root: string, width: number, queue: string): FlowJob[] {
  const children = Array.from({ length: width }, (_, i) => flowJob(`child-${i}`, [root], { queue }));
  return [
    flowJob(root),
    ...children,
    flowJob(
      'collector',
      children.map((c) => c.name),
    ),
  ];
}

test('fan-out, fan-in: 1 parent, 20 children, 1 collector', async () => {
  await withEngine({}, async ({ engine }) => {
    const id = ids(await engine.enqueueFlow(fanOutIn('parent', 20, 'kids')));
    await runOne(engine, 'flow-parent');
    const leased = await engine.reserve({ queues: ['kids'], maxJobs: 100 });
    assert.equal(leased.length, 20);
    await engine.ackBatch(leased.map((l) => ({ jobId: l.id, attempt: l.attempt })));
    assert.equal(await runOne(engine, 'flow-collector'), id.collector);
  });
});

test('1 → 10,000 → 1 (issue 33, W5) is within the default max_dependents_per_job; one more by id is not', async () => {
  const limits = { ...defaultEngineLimits, maxFlowJobs: 10_002, maxDependenciesPerJob: 10_000 };
  assert.equal(limits.maxDependentsPerJob, 10_000, 'the default');
  await withEngine({ options: { limits } }, async ({ engine, db }) => {
    const id = ids(await engine.enqueueFlow(fanOutIn('root', 10_000, 'wide')));
    // Counted from the request, and in the store from its edges: the flow writes no count.
    assert.equal(rows(db, 'SELECT count(*) FROM job_dependents'), 0);
    const over = await expectCode(
      engine.enqueue(job('one-more', { dependsOn: [id.root!] })),
      'invalid_argument',
    );
    assert.match(
      over.message,
      /has 10000 jobs depending on it, the limit is 10000 \(limits\.max_dependents_per_job\)/,
    );
  });
});

test('a flow may also wait on stored jobs by id', async () => {
  await withEngine({}, async ({ engine }) => {
    const { jobId: before } = await engine.enqueue(job('earlier'));
    const id = ids(await engine.enqueueFlow([flowJob('a'), flowJob('b', ['a'], { dependsOn: [before] })]));
    await runOne(engine, 'flow-a');
    assert.equal((await engine.getJob(id.b!)).state, 'waiting');
    await runOne(engine, 'earlier');
    assert.equal((await engine.getJob(id.b!)).state, 'ready');
  });
});

test('the shape is checked before anything is stored: cycles, unknown names, duplicates, bounds', async () => {
  const limits = { ...defaultEngineLimits, maxFlowJobs: 5, maxFlowDepth: 3, maxDependenciesPerJob: 2 };
  await withEngine({ options: { limits } }, async ({ engine, db }) => {
    const cases: [FlowJob[], RegExp][] = [
      [[flowJob('a', ['b']), flowJob('b', ['a'])], /is in a cycle/],
      [[flowJob('a', ['a'])], /is in a cycle/],
      [[flowJob('a', ['nobody'])], /runs after nobody, which is not in the flow/],
      [[flowJob('a'), flowJob('a')], /names two jobs of the flow/],
      [[flowJob('a'), flowJob('b', ['a', 'a'])], /names a twice/],
      [[flowJob('bad name')], /jobs\[0\]\.name .* may use only/],
      [
        [flowJob('a'), flowJob('b', ['a']), flowJob('c', ['b']), flowJob('d', ['c'])],
        /limits\.max_flow_depth/,
      ],
      [
        [flowJob('a'), flowJob('b'), flowJob('c', ['a', 'b'], { dependsOn: ['x'] })],
        /max_dependencies_per_job/,
      ],
    ];
    for (const [jobs, message] of cases) {
      const error = await expectCode(engine.enqueueFlow(jobs), 'invalid_argument');
      assert.match(error.message, message);
    }
    const many = Array.from({ length: 6 }, (_, i) => flowJob(`j${i}`));
    assert.match((await expectCode(engine.enqueueFlow(many), 'resource_exhausted')).message, /max_flow_jobs/);
    await expectCode(engine.enqueueFlow([]), 'invalid_argument');
    assert.equal(rows(db, 'SELECT count(*) FROM jobs'), 0);
  });
});

test('all or nothing: one refused job stores none of the flow, and says which', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const result = await engine.enqueueFlow([
      flowJob('a'),
      flowJob('b', ['a'], { priority: 12 }),
      flowJob('c', ['a'], { dependsOn: ['missing'] }),
    ]);
    assert.equal(result.committed, false);
    assert.deepEqual(!result.committed && result.rejections.map((r) => [r.index, r.reason]), [
      [1, 'invalid_job'],
      [2, 'unknown_dependency'],
    ]);
    assert.equal(rows(db, 'SELECT count(*) FROM jobs'), 0);
    assert.equal(rows(db, 'SELECT count(*) FROM job_dependencies'), 0);
  });
});

test('a retried flow with idempotency keys stores nothing twice and answers the same ids', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const flow = [
      flowJob('a', [], { idempotencyKey: 'order-1:a' }),
      flowJob('b', ['a'], { idempotencyKey: 'order-1:b' }),
    ];
    const first = ids(await engine.enqueueFlow(flow));
    const again = await engine.enqueueFlow(flow);
    assert.deepEqual(ids(again), first);
    assert.ok(again.committed && again.jobs.every((j) => j.deduplicated));
    assert.equal(rows(db, 'SELECT count(*) FROM jobs'), 2);
    assert.equal(rows(db, 'SELECT count(*) FROM job_dependencies'), 1);
    // A retry that adds a job waits on the original of its duplicate parent.
    const more = ids(await engine.enqueueFlow([...flow, flowJob('c', ['b'])]));
    assert.equal((await engine.getJob(more.c!)).state, 'waiting');
    await runOne(engine, 'flow-a');
    await runOne(engine, 'flow-b');
    assert.equal((await engine.getJob(more.c!)).state, 'ready');
  });
});

test('a flow whose duplicate parent already failed is refused under cancel, and stores nothing', async () => {
  await withEngine({}, async ({ engine, db }) => {
    const a = await deadKeyedJob(engine);
    const error = await expectCode(engine.enqueueFlow([a, flowJob('b', ['a'])]), 'failed_precondition');
    assert.match(error.message, /jobs\[1\] \(b\): depends_on\[0\]: job .* is dead/);
    assert.equal(rows(db, 'SELECT count(*) FROM jobs'), 1);
  });
});

test('flows sent at once share one write unit, each answered on its own and all or nothing', async () => {
  const units: number[] = [];
  const options = withQueues({ 'flow-deep': { maxDepth: 3 } });
  await withEngine(
    { options, deps: { onBatch: (stats) => units.push(stats.operations) } },
    async ({ engine, db }) => {
      const keyed = [
        flowJob('a', [], { idempotencyKey: 'shared:a' }),
        flowJob('b', ['a'], { idempotencyKey: 'shared:b' }),
      ];
      const deep = (name: string) => [
        flowJob(name, [], { queue: 'flow-deep' }),
        flowJob(`${name}-2`, [name], { queue: 'flow-deep' }),
      ];
      units.length = 0;
      const [first, refused, retry, fits, full] = await Promise.all([
        engine.enqueueFlow(keyed),
        engine.enqueueFlow([flowJob('c'), flowJob('d', ['c'], { priority: 12 })]),
        // An idempotent retry in the same unit: the original's ids, nothing stored twice.
        engine.enqueueFlow(keyed),
        engine.enqueueFlow(deep('e')),
        // max_depth 3 counts the 2 jobs an earlier flow of the unit added.
        engine.enqueueFlow(deep('f')),
      ]);
      assert.deepEqual(units, [1], 'the five flows were one unit of one batch');
      assert.deepEqual(ids(retry!), ids(first!));
      assert.ok(retry!.committed && retry!.jobs.every((j) => j.deduplicated));
      assert.deepEqual(!refused!.committed && refused!.rejections.map((r) => [r.index, r.reason]), [
        [1, 'invalid_job'],
      ]);
      ids(fits!);
      assert.deepEqual(!full!.committed && full!.rejections.map((r) => [r.index, r.reason]), [
        [0, 'queue_full'],
        [1, 'queue_full'],
      ]);
      assert.equal(rows(db, 'SELECT count(*) FROM jobs'), 4);
      assert.equal(rows(db, 'SELECT count(*) FROM job_dependencies'), 2);
      assert.equal((await engine.getJob(ids(first!).b!)).state, 'waiting');
    },
  );
});

test('a flow that fails a shared unit fails alone, with the error it meets alone; the others commit', async () => {
  const units: number[] = [];
  await withEngine({ deps: { onBatch: (stats) => units.push(stats.operations) } }, async ({ engine, db }) => {
    const a = await deadKeyedJob(engine);
    units.length = 0;
    const [before, failing, after] = await Promise.allSettled([
      engine.enqueueFlow([flowJob('b'), flowJob('c', ['b'])]),
      engine.enqueueFlow([a, flowJob('d', ['a'])]),
      engine.enqueueFlow([flowJob('e')]),
    ]);
    assert.deepEqual(units, [1, 3], 'the shared unit failed; each flow ran again in a unit of its own');
    assert.equal(before!.status, 'fulfilled');
    assert.equal(after!.status, 'fulfilled');
    assert.equal(failing!.status, 'rejected');
    const error = (failing as PromiseRejectedResult).reason;
    assert.equal(error.code, 'failed_precondition');
    assert.match(error.message, /jobs\[1\] \(d\): depends_on\[0\]: job .* is dead/);
    // a, b, c and e: nothing of the failed flow, each of the others once.
    assert.equal(rows(db, 'SELECT count(*) FROM jobs'), 4);
    assert.equal(rows(db, 'SELECT count(*) FROM job_dependencies'), 1);
  });
});

test('results passed on: a leased job gets what its dependencies returned, by id and name, bounded', async () => {
  const limits = { ...defaultEngineLimits, maxDependencyResultsBytes: 10 };
  await withEngine({ options: { limits } }, async ({ engine }) => {
    const { jobId: byId } = await engine.enqueue(job('earlier'));
    const id = ids(
      await engine.enqueueFlow([
        flowJob('left'),
        flowJob('right'),
        flowJob('join', ['left', 'right'], { dependsOn: [byId] }),
      ]),
    );
    const finish = async (queue: string, result: string) => {
      const [leased] = await engine.reserve({ queues: [queue] });
      assert.equal(leased?.dependencyResults, undefined, 'a job without dependencies gets none');
      await engine.ack({
        jobId: leased!.id,
        attempt: leased!.attempt,
        result: new TextEncoder().encode(result),
        resultContentType: 'text/plain',
      });
    };
    await finish('flow-left', 'L');
    await finish('flow-right', 'RR');
    await finish('earlier', 'E');
    const [joined] = await engine.reserve({ queues: ['flow-join'] });
    assert.equal(joined?.id, id.join);
    const got = (joined?.dependencyResults ?? []).map((d) => [
      d.jobId === byId ? 'by id' : d.name,
      d.state,
      d.result === null ? null : new TextDecoder().decode(d.result),
      d.resultOmitted,
    ]);
    assert.deepEqual(got, [
      ['by id', 'completed', 'E', false],
      ['left', 'completed', 'L', false],
      ['right', 'completed', 'RR', false],
    ]);
  });
  // Above the limit, every result is left out: the worker fetches them with GetJob.
  await withEngine(
    { options: { limits: { ...limits, maxDependencyResultsBytes: 2 } } },
    async ({ engine }) => {
      const id = ids(await engine.enqueueFlow([flowJob('a'), flowJob('b', ['a'])]));
      const [a] = await engine.reserve({ queues: ['flow-a'] });
      await engine.ack({ jobId: id.a!, attempt: a!.attempt, result: new TextEncoder().encode('too long') });
      const [b] = await engine.reserve({ queues: ['flow-b'] });
      assert.deepEqual(
        b?.dependencyResults?.map((d) => [d.name, d.result, d.resultOmitted]),
        [['a', null, true]],
      );
    },
  );
});

test('results passed on after a restart: the queue is known to pass them from its stored mark', async () => {
  await withEngine({}, async (t) => {
    const id = ids(await t.engine.enqueueFlow([flowJob('a'), flowJob('b', ['a'])]));
    const [a] = await t.engine.reserve({ queues: ['flow-a'] });
    await t.engine.ack({ jobId: id.a!, attempt: a!.attempt, result: new TextEncoder().encode('kept') });
    const t2 = await t.reopen();
    const [b] = await t2.engine.reserve({ queues: ['flow-b'] });
    assert.deepEqual(
      b?.dependencyResults?.map((d) => [
        d.name,
        d.result === null ? null : new TextDecoder().decode(d.result),
      ]),
      [['a', 'kept']],
    );
    return t2;
  });
});
