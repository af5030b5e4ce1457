/**
 * limits.max_dependents_per_job (SECURITY.md, "Workflows under attack"): how many jobs may
 * depend on one job, through every enqueue that makes edges — one job, a best-effort batch
 * (per job), an all-or-nothing batch and a flow (all or none), a batch's members — on every
 * store. A small limit (3) keeps the cases cheap; the count is kept by the store
 * (`job_dependents`), so the cases also hold across a restart with a lower limit.
 */
import assert from 'node:assert/strict';
import type { Engine } from '../../../../src/engine/engine.ts';
import { SeppError } from '../../../../src/engine/errors.ts';
import { defaultEngineLimits } from '../../../../src/engine/settings.ts';
import type { EnqueueRequest, EnqueueResult, FlowResult } from '../../../../src/engine/types.ts';
import type { StoreCase } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const limits = (maxDependentsPerJob: number) => ({
  options: { limits: { ...defaultEngineLimits, maxDependentsPerJob } },
});

let queues = 0;
const fresh = (): string => `dq${++queues}`;

const request = (queue: string, dependsOn: readonly string[] = []): EnqueueRequest => ({
  queue,
  type: 't',
  payload: bytes(''),
  ...(dependsOn.length === 0 ? {} : { dependsOn }),
});

async function add(engine: Engine, dependsOn: readonly string[] = []): Promise<string> {
  return (await engine.enqueue(request(fresh(), dependsOn))).jobId;
}

/** `count` jobs, one enqueue each, that depend on `parent`. */
async function dependOn(engine: Engine, parent: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await add(engine, [parent]));
  return ids;
}

/** The refusal of one edge too many to `parent`, as a rejection says it. */
function assertTooMany(
  rejection: { reason: string; message: string },
  parent: string,
  limit = 3,
  has = limit,
): void {
  assert.equal(rejection.reason, 'invalid_job', rejection.message);
  assert.match(rejection.message, new RegExp(`job ${parent} has ${has} jobs depending on it`));
  assert.match(rejection.message, new RegExp(`the limit is ${limit} \\(limits\\.max_dependents_per_job\\)`));
}

async function refusedEnqueue(engine: Engine, parent: string, limit = 3, has = limit): Promise<void> {
  await assert.rejects(engine.enqueue(request(fresh(), [parent])), (error) => {
    assert.ok(error instanceof SeppError && error.rejection !== undefined, String(error));
    assert.equal(error.code, 'invalid_argument');
    assertTooMany(error.rejection, parent, limit, has);
    return true;
  });
}

const accepted = (results: readonly EnqueueResult[]) => results.map((r) => r.ok);

function refusedFlow(result: FlowResult): { index: number; reason: string; message: string }[] {
  assert.equal(result.committed, false, JSON.stringify(result));
  return result.committed ? [] : result.rejections;
}

/** Leases and acks `id` (the one job of its queue). */
async function complete(engine: Engine, id: string): Promise<void> {
  const { queue } = await engine.getJob(id);
  const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1, leaseMs: 60_000 });
  assert.equal(leased?.id, id);
  await engine.ack({ jobId: id, attempt: leased!.attempt });
}

/** The workflow rows deleted jobs left behind (Dependencies.leftovers), as the engine's check reports them. */
async function leftovers(engine: Engine): Promise<string[]> {
  return (await engine.counterMismatches()).filter((line) => line.startsWith('job_depend'));
}

export const dependentsCases: StoreCase[] = [
  {
    name: 'dependents: a job deleted by any path takes its count and its edges with it',
    async run(h) {
      const queue = fresh();
      const expiring = fresh();
      const { engine, clock } = await h.engine({
        options: {
          ...limits(3).options,
          queues: { [expiring]: { expiredAction: 'delete' } },
        },
      });
      const parent = async (q = queue, extra: Partial<EnqueueRequest> = {}) => {
        const id = (await engine.enqueue({ ...request(q), ...extra })).jobId;
        await add(engine, [id]);
        return id;
      };
      // A bulk delete of a ready job others wait on (PurgeQueue, DeleteJobs): its dependents are cancelled.
      await parent();
      await engine.runBulk({ action: 'delete', filter: { queue, states: ['ready'] } });
      assert.deepEqual(await leftovers(engine), [], 'bulk delete');
      // A dead letter deleted by id, and all of a queue's (a purge of the dead letters).
      for (const all of [false, true]) {
        const id = await parent();
        await engine.deadLetterJob(id);
        await engine.deleteDeadLetters(all ? { queue, all: true } : { queue, jobIds: [id] });
        assert.deepEqual(await leftovers(engine), [], all ? 'dead letters purged' : 'dead letter deleted');
      }
      // A job that waited on another, released, then dead-lettered and deleted: its edge goes with it.
      const gate = await add(engine);
      const child = await add(engine, [gate]);
      await complete(engine, gate);
      await engine.deadLetterJob(child);
      const { queue: childQueue } = await engine.getJob(child);
      await engine.deleteDeadLetters({ queue: childQueue, jobIds: [child] });
      assert.deepEqual(await leftovers(engine), [], 'a waiting job deleted');
      // A job others wait on that expires on a queue whose expired_action is delete.
      const expired = await parent(expiring, { ttlMs: 1_000 });
      clock.advance(2_000);
      await engine.runMaintenance();
      assert.equal((await engine.getJob(expired)).outcomeOnly, true, 'deleted: its outcome is kept');
      assert.deepEqual(await leftovers(engine), [], 'expired and deleted');
    },
  },
  {
    name: 'dependents: at the limit accepted, one more refused — one job, a best-effort batch, all or none',
    async run(h) {
      const { engine } = await h.engine(limits(3));
      const gate = await add(engine);
      const waiting = await dependOn(engine, gate, 3);
      await refusedEnqueue(engine, gate);
      // A job naming it among others is refused too, and names the job that is full.
      const other = await add(engine);
      await assert.rejects(engine.enqueue(request(fresh(), [other, gate])), (error) => {
        assert.ok(error instanceof SeppError && error.rejection !== undefined);
        assert.match(error.rejection.message, /^depends_on\[1\]: /);
        return true;
      });

      // Per job in a best-effort batch: the first three of the batch, not the fourth.
      const batchGate = await add(engine);
      const queue = fresh();
      const results = await engine.enqueueBatch(Array.from({ length: 4 }, () => request(queue, [batchGate])));
      assert.deepEqual(accepted(results), [true, true, true, false]);
      const [, , , last] = results;
      assert.ok(last !== undefined && !last.ok);
      assertTooMany(last, batchGate);

      // All or none: the fourth is refused, and nothing of the request is stored.
      const atomicGate = await add(engine);
      const atomic = await engine.enqueueAtomic(
        Array.from({ length: 4 }, () => request(fresh(), [atomicGate])),
      );
      assert.equal(atomic.committed, false);
      if (!atomic.committed) {
        assert.deepEqual(
          atomic.rejections.map((r) => r.index),
          [3],
        );
        assertTooMany(atomic.rejections[0]!, atomicGate);
      }
      assert.equal((await engine.getJob(atomicGate)).dependents?.length ?? 0, 0, 'nothing stored');
      const three = await engine.enqueueAtomic(
        Array.from({ length: 3 }, () => request(fresh(), [atomicGate])),
      );
      assert.equal(three.committed, true);

      // The gate's end releases the three that wait on it.
      await complete(engine, gate);
      for (const id of waiting) assert.equal((await engine.getJob(id)).state, 'ready');
    },
  },
  {
    name: 'dependents: a flow is refused whole — by id, with earlier jobs, and on a job of its own',
    async run(h) {
      const { engine } = await h.engine(limits(3));
      const gate = await add(engine);
      await dependOn(engine, gate, 1);
      const queue = fresh();
      const job = (name: string, extra: { after?: string[]; dependsOn?: string[] } = {}) => ({
        name,
        ...request(queue),
        ...extra,
      });
      // One stored dependent and three in the flow: the third of the flow is one too many.
      const rejections = refusedFlow(
        await engine.enqueueFlow([
          job('a', { dependsOn: [gate] }),
          job('b', { dependsOn: [gate] }),
          job('c', { dependsOn: [gate] }),
        ]),
      );
      assert.deepEqual(
        rejections.map((r) => r.index),
        [2],
      );
      assertTooMany(rejections[0]!, gate);
      assert.equal((await engine.getJob(gate)).dependents?.length, 1, 'nothing of the flow stored');
      const two = await engine.enqueueFlow([
        job('a', { dependsOn: [gate] }),
        job('b', { dependsOn: [gate] }),
      ]);
      assert.equal(two.committed, true);
      await refusedEnqueue(engine, gate);

      // A job of the flow with more jobs after it than the limit: the flow is refused before anything is stored.
      const wide = ['x1', 'x2', 'x3', 'x4'].map((name) => job(name, { after: ['root'] }));
      await assert.rejects(
        engine.enqueueFlow([job('root'), ...wide]),
        (error) =>
          error instanceof SeppError &&
          error.code === 'invalid_argument' &&
          /jobs\[0\] \(root\) has 4 jobs running after it, the limit is 3 \(limits\.max_dependents_per_job\)/.test(
            error.message,
          ),
      );
      // Three after it are within the limit, and a fourth job naming the root by id is not.
      const within = await engine.enqueueFlow([job('root'), ...wide.slice(0, 3)]);
      assert.ok(within.committed);
      const root = within.committed ? within.jobs[0]!.jobId : '';
      await refusedEnqueue(engine, root);
    },
  },
  {
    name: 'dependents: a batch adds its members per job; a lower limit at a restart refuses new edges only',
    async run(h) {
      let { engine } = await h.engine(limits(3));
      const gate = await add(engine);
      const { batch } = await engine.createBatch({ jobs: [request(fresh(), [gate])] });
      const more = await engine.addToBatch(batch.id, [
        request(fresh(), [gate]),
        request(fresh(), [gate]),
        request(fresh(), [gate]),
      ]);
      assert.deepEqual(accepted(more.results), [true, true, false]);
      const [, , refused] = more.results;
      assert.ok(refused !== undefined && !refused.ok);
      assertTooMany(refused, gate);

      const roomy = await add(engine);
      await dependOn(engine, roomy, 2);
      // Limits take effect at a restart: 2 now. The edges made stay; a new one to either job is refused.
      ({ engine } = await h.engine(limits(2)));
      await refusedEnqueue(engine, gate, 2, 3);
      await refusedEnqueue(engine, roomy, 2);
      assert.equal((await engine.getJob(gate)).dependents?.length, 3);
      const free = await add(engine);
      await dependOn(engine, free, 2);
      await refusedEnqueue(engine, free, 2);
      await complete(engine, gate);
      const waiting = (await engine.getJob(gate)).dependents ?? [];
      assert.deepEqual(
        waiting.map((d) => d.state),
        ['ready', 'ready', 'ready'],
      );
    },
  },
];

/** A job request made by the API key `key` (EnqueueRequest.createdBy; undefined: without a key). */
const by = (key: string | undefined, dependsOn: readonly string[] = [], queue = fresh()): EnqueueRequest => ({
  ...request(queue, dependsOn),
  ...(key === undefined ? {} : { createdBy: key }),
});

/** The refusal of another key's edge to `parent` once other keys made their share (half of 4: 2). */
function assertOthersFull(rejection: { reason: string; message: string }, parent: string, has: number): void {
  assert.equal(rejection.reason, 'invalid_job', rejection.message);
  assert.match(
    rejection.message,
    new RegExp(
      `job ${parent} has ${has} jobs depending on it, 2 of them made by keys other than the one that enqueued it; ` +
        'those keys may make at most 2 together \\(half of limits\\.max_dependents_per_job, 4\\)',
    ),
  );
  assert.doesNotMatch(rejection.message, /alice|mallory|eve/, 'no key is named');
}

dependentsCases.push({
  name: "dependents: keys other than a job's creator make at most half of its dependents, together",
  async run(h) {
    let { engine } = await h.engine(limits(4));
    const enqueue = async (key: string | undefined, dependsOn: readonly string[] = []) =>
      (await engine.enqueue(by(key, dependsOn))).jobId;
    const refused = async (key: string | undefined, parent: string, has: number) =>
      assert.rejects(engine.enqueue(by(key, [parent])), (error) => {
        assert.ok(error instanceof SeppError && error.rejection !== undefined, String(error));
        assertOthersFull(error.rejection, parent, has);
        return true;
      });
    // Alice's job: mallory makes two of its dependents, then neither she, another key nor a
    // caller without a key (one key more) makes a third; alice still makes hers, up to the limit.
    const gate = await enqueue('alice');
    await enqueue('mallory', [gate]);
    await enqueue('mallory', [gate]);
    await refused('mallory', gate, 2);
    await refused('eve', gate, 2);
    await refused(undefined, gate, 2);
    await enqueue('alice', [gate]);
    await refused('mallory', gate, 3);
    await enqueue('alice', [gate]);
    await assert.rejects(engine.enqueue(by('alice', [gate])), (error) => {
      assert.ok(error instanceof SeppError && error.rejection !== undefined, String(error));
      assertTooMany(error.rejection, gate, 4);
      assert.match(error.rejection.message, /\(2 of them made by keys other than the one that enqueued it\)/);
      return true;
    });

    // In one batch from several callers (the HTTP API coalesces them): each edge counts as its own key's.
    const batchGate = await enqueue('alice');
    const mixed = await engine.enqueueBatch([
      by('mallory', [batchGate]),
      by('eve', [batchGate]),
      by('alice', [batchGate]),
      by('mallory', [batchGate]),
      by('alice', [batchGate]),
    ]);
    assert.deepEqual(accepted(mixed), [true, true, true, false, true]);
    const [, , , fourth] = mixed;
    assert.ok(fourth !== undefined && !fourth.ok);
    assertOthersFull(fourth, batchGate, 3);

    // All or none, and a flow naming it by id: refused whole at other keys' third edge.
    const flowGate = await enqueue('alice');
    const atomic = await engine.enqueueAtomic([1, 2, 3].map(() => by('mallory', [flowGate])));
    assert.deepEqual(atomic.committed ? [] : atomic.rejections.map((r) => r.index), [2]);
    const flow = refusedFlow(
      await engine.enqueueFlow(['a', 'b', 'c'].map((name) => ({ name, ...by('mallory', [flowGate]) }))),
    );
    assert.deepEqual(
      flow.map((r) => r.index),
      [2],
    );
    assertOthersFull(flow[0]!, flowGate, 2);
    assert.equal((await engine.getJob(flowGate)).dependents?.length ?? 0, 0, 'nothing of either stored');

    // The counts are the store's: after a restart other keys still have none left on the gate.
    ({ engine } = await h.engine(limits(4)));
    await assert.rejects(engine.enqueue(by('eve', [gate])), SeppError);
    // Without keys every caller is the same (none): a job made without one takes the whole limit.
    const keyless = await enqueue(undefined);
    for (let i = 0; i < 4; i++) await enqueue(undefined, [keyless]);
    await refusedEnqueue(engine, keyless, 4);
  },
});

dependentsCases.push({
  name: "dependents: an admin key's edges count as the job's creator's, not against other keys' share",
  async run(h) {
    let { engine } = await h.engine(limits(4));
    /** A request of the admin key `ops` (EnqueueRequest.createdByAdmin, as the handlers mark it). */
    const admin = (dependsOn: readonly string[]): EnqueueRequest => ({
      ...by('ops', dependsOn),
      createdByAdmin: true,
    });
    const gate = (await engine.enqueue(by('alice'))).jobId;
    await engine.enqueue(by('mallory', [gate]));
    await engine.enqueue(by('mallory', [gate]));
    // Other keys made their share: mallory is refused, the admin key is not, one job or a flow.
    await assert.rejects(engine.enqueue(by('mallory', [gate])), (error) => {
      assert.ok(error instanceof SeppError && error.rejection !== undefined, String(error));
      assertOthersFull(error.rejection, gate, 2);
      return true;
    });
    await engine.enqueue(admin([gate]));
    const flow = await engine.enqueueFlow([{ name: 'a', ...admin([gate]) }]);
    assert.equal(flow.committed, true, JSON.stringify(flow));
    // The limit holds for it: 4 dependents, 2 of them by other keys (the admin's are not counted so).
    ({ engine } = await h.engine(limits(4)));
    await assert.rejects(engine.enqueue(admin([gate])), (error) => {
      assert.ok(error instanceof SeppError && error.rejection !== undefined, String(error));
      assertTooMany(error.rejection, gate, 4);
      assert.match(error.rejection.message, /\(2 of them made by keys other than the one that enqueued it\)/);
      return true;
    });
  },
});
