/**
 * Workflows (issue 33): job dependencies, flows and batches, through the engine, on every
 * store — the same answers on SQLite and PostgreSQL. A waiting job is released in the
 * unit that ends its last dependency; a failed dependency does what the waiting job's
 * policy says; a flow is stored all or none; a batch's completion job is enqueued once,
 * in the unit that ends its last member after the seal.
 */
import assert from 'node:assert/strict';
import { walkFlow } from '../../../../src/engine/control/flow-walk.ts';
import type { Engine } from '../../../../src/engine/engine.ts';
import { SeppError } from '../../../../src/engine/errors.ts';
import { defaultEngineLimits } from '../../../../src/engine/settings.ts';
import type {
  DependencyPolicy,
  EnqueueRequest,
  FlowResult,
  LeasedJob,
} from '../../../../src/engine/types.ts';
import { just } from '../../../../src/store/op.ts';
import { expectCode } from '../../../helpers/engine.ts';
import type { StoreCase } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array | null | undefined) => (data == null ? null : new TextDecoder().decode(data));

/** Each job on a queue of its own, so a reserve of that queue leases exactly it. */
let queues = 0;
const fresh = (): string => `wq${++queues}`;

interface Job {
  id: string;
  queue: string;
}

async function add(engine: Engine, extra: Partial<EnqueueRequest> = {}): Promise<Job> {
  const queue = extra.queue ?? fresh();
  const { jobId } = await engine.enqueue({ queue, type: 't', payload: bytes(queue), ...extra });
  return { id: jobId, queue };
}

function after(engine: Engine, parents: readonly Job[], policy?: DependencyPolicy): Promise<Job> {
  return add(engine, {
    dependsOn: parents.map((p) => p.id),
    ...(policy === undefined ? {} : { onDependencyFailure: policy }),
  });
}

async function lease(engine: Engine, job: Job): Promise<LeasedJob> {
  const leased = await engine.reserve({ queues: [job.queue], maxJobs: 10, leaseMs: 60_000 });
  assert.deepEqual(
    leased.map((l) => l.id),
    [job.id],
    `job ${job.id} should be the one ready job of ${job.queue}`,
  );
  return leased[0]!;
}

async function complete(engine: Engine, job: Job, result?: string): Promise<LeasedJob> {
  const leased = await lease(engine, job);
  await engine.ack({
    jobId: leased.id,
    attempt: leased.attempt,
    ...(result === undefined ? {} : { result: bytes(result), resultContentType: 'text/plain' }),
  });
  return leased;
}

async function kill(engine: Engine, job: Job): Promise<void> {
  const leased = await lease(engine, job);
  await engine.nack({
    jobId: leased.id,
    attempt: leased.attempt,
    error: 'boom',
    directive: { kind: 'dead_letter' },
  });
}

const stateOf = async (engine: Engine, job: { id: string }) => (await engine.getJob(job.id)).state;

/** A job of a flow in `queue`, named `name`. */
const flowJobIn =
  (queue: string) =>
  (name: string, extra: Partial<EnqueueRequest> & { after?: string[] } = {}) => ({
    name,
    queue,
    type: 'x',
    payload: bytes(''),
    ...extra,
  });

function committed(result: FlowResult): Record<string, string> {
  assert.equal(result.committed, true, JSON.stringify(result));
  if (!result.committed) return {};
  return Object.fromEntries(result.jobs.map((j) => [j.name, j.jobId]));
}

export const dependencyCases: StoreCase[] = [
  {
    name: "flows: a flow's walk stops at its job and edge bounds, saying which (task batchguard18)",
    async run(h) {
      const { engine } = await h.engine();
      const parents = [await add(engine), await add(engine), await add(engine)];
      const children: Job[] = [];
      for (let i = 0; i < 10; i++) children.push(await after(engine, parents));
      const start = children[0]!.id;
      const walk = (jobsMax: number, edgesMax: number, jobId = start) =>
        h.store.read((view) => walkFlow(view.dependencies!, jobId, jobsMax, edgesMax));
      const whole = await walk(100, 1000);
      assert.deepEqual([whole.rows.length, whole.jobsLimited, whole.edgesLimited], [13, false, false]);
      assert.equal(whole.rows[0]!.id, start, 'the job itself first');
      assert.deepEqual(
        new Set(whole.rows.map((r) => r.id)),
        new Set([...parents, ...children].map((j) => j.id)),
      );
      // 3 edges to the parents, then 7 of their 30: the jobs they reached, no more.
      const dense = await walk(100, 10);
      assert.deepEqual([dense.jobsLimited, dense.edgesLimited], [false, true]);
      assert.ok(dense.rows.length >= 4 && dense.rows.length <= 11, `${dense.rows.length} jobs`);
      const few = await walk(5, 1000);
      assert.deepEqual([few.rows.length, few.jobsLimited, few.edgesLimited], [5, true, false]);
      const none = await walk(100, 1000, '01900000-0000-7000-8000-000000000000');
      assert.deepEqual(none.rows, []);
    },
  },
  {
    name: 'dependencies: a waiting job is released in the ack of the last one, unseen by leases before',
    async run(h) {
      assert.equal(await h.store.read((view) => just(view.dependencies !== undefined)), true);
      const { engine } = await h.engine();
      const a = await add(engine);
      const b = await add(engine);
      const child = await after(engine, [a, b]);
      assert.equal(await stateOf(engine, child), 'waiting');
      assert.deepEqual(await engine.reserve({ queues: [child.queue], maxJobs: 10 }), []);
      await complete(engine, a, 'from a');
      assert.equal(await stateOf(engine, child), 'waiting', 'b has not completed');
      await complete(engine, b);
      assert.equal(await stateOf(engine, child), 'ready');
      // A dependency that completed before is resolved at once; an unknown one is refused.
      const late = await after(engine, [a]);
      assert.equal(await stateOf(engine, late), 'ready');
      await assert.rejects(
        engine.enqueue({ queue: 'q', type: 't', payload: bytes(''), dependsOn: ['no-such-job'] }),
        (error) => error instanceof SeppError && error.rejection?.reason === 'unknown_dependency',
      );
      // Its dependencies' results are passed on at lease, and GetJob shows both sides.
      const leased = await lease(engine, child);
      const results = new Map((leased.dependencyResults ?? []).map((r) => [r.jobId, r]));
      assert.equal(text(results.get(a.id)?.result), 'from a');
      assert.equal(results.get(b.id)?.state, 'completed');
      const info = await engine.getJob(a.id);
      assert.equal(info.state, 'completed', 'kept while others depend on it');
      assert.deepEqual(
        info.dependents?.map((d) => d.id).sort(),
        [child.id, late.id].sort(),
        JSON.stringify(info.dependents),
      );
    },
  },
  {
    name: 'dependencies: cancel passes the failure on, run releases, wait stays and resumes after a requeue',
    async run(h) {
      const { engine } = await h.engine();
      const failing = await add(engine);
      const cancelled = await after(engine, [failing], 'cancel');
      const grandchild = await after(engine, [cancelled], 'run');
      const finallyJob = await after(engine, [failing], 'run');
      const waiter = await after(engine, [failing], 'wait');
      await kill(engine, failing);
      assert.equal(await stateOf(engine, cancelled), 'cancelled');
      assert.match((await engine.getJob(cancelled.id)).cancelledBy ?? '', new RegExp(failing.id));
      // The cancelled job failed in turn: its `run` dependent runs anyway.
      assert.equal(await stateOf(engine, grandchild), 'ready');
      assert.equal(await stateOf(engine, finallyJob), 'ready');
      assert.equal(await stateOf(engine, waiter), 'waiting');
      // Requeued from the dead letters and completed: what waited carries on.
      await engine.requeueJob(failing.id);
      await complete(engine, failing);
      assert.equal(await stateOf(engine, waiter), 'ready');
      // A cancel of a job others wait on passes on in the same unit too.
      const root = await add(engine);
      const dependent = await after(engine, [root]);
      await engine.cancel(root.id);
      assert.equal(await stateOf(engine, dependent), 'cancelled');
      // A waiting job may itself be cancelled.
      const other = await add(engine);
      const waiting = await after(engine, [other]);
      await engine.cancel(waiting.id);
      assert.equal(await stateOf(engine, waiting), 'cancelled');
      await complete(engine, other);
    },
  },
  {
    // Issue 33: a job waiting under `wait` on a failed job that was then deleted waited forever.
    name: 'dependencies: a deleted job cancels what still waits on it: a dead letter, all of them, a bulk delete, an expiry',
    async run(h) {
      const expiring = fresh();
      const { engine, clock } = await h.engine({
        options: { queues: { [expiring]: { expiredAction: 'delete' } } },
      });
      const cancelledBy = async (job: Job) => {
        const info = await engine.getJob(job.id);
        return `${info.state} ${info.cancelledBy ?? ''}`;
      };
      // A dead letter deleted by id: the job waiting on it is cancelled, naming it, and its own
      // dependents go on by their policies (one waiting on a cancelled job may be requeued later).
      const dead = await add(engine);
      const waits = await after(engine, [dead], 'wait');
      const cancels = await after(engine, [waits], 'cancel');
      const runs = await after(engine, [waits], 'run');
      const waitsOnWaits = await after(engine, [waits], 'wait');
      await kill(engine, dead);
      assert.equal(await stateOf(engine, waits), 'waiting');
      // What a delete would cancel, counted first: each waiting job once, of the queue's dead letters.
      const also = await after(engine, [dead, runs], 'wait');
      const waitingOn = (queue: string, ids: string[], limit = 10) =>
        h.store.read((view) => view.dependencies!.waitingOnDead({ queue, ids, limit }));
      assert.equal(await waitingOn(dead.queue, [dead.id, 'no-such-job']), 2);
      assert.equal(await waitingOn(dead.queue, [dead.id], 1), 1, 'counted up to the limit');
      assert.equal(await waitingOn(fresh(), [dead.id]), 0, 'a dead letter of another queue');
      assert.equal(await waitingOn(waits.queue, [waits.id]), 0, 'not a dead letter');
      assert.equal(await engine.deleteDeadLetters({ queue: dead.queue, jobIds: [dead.id] }), 1);
      assert.equal(await cancelledBy(also), `cancelled dependency:${dead.id} deleted`);
      assert.equal(await cancelledBy(waits), `cancelled dependency:${dead.id} deleted`);
      assert.equal(await cancelledBy(cancels), `cancelled dependency:${waits.id}`);
      assert.equal(await stateOf(engine, runs), 'ready');
      assert.equal(await stateOf(engine, waitsOnWaits), 'waiting');
      assert.deepEqual(
        (await engine.getJob(waits.id)).dependencies?.map((d) => [d.id, d.state, d.edge]),
        [[dead.id, null, 'failed']],
      );
      // All of a queue's dead letters (a bulk operation); a cancelled job deleted by a bulk delete;
      // a job deleted by its expiry (its `cancel` dependent is cancelled by the expiry, before).
      const dead2 = await add(engine);
      const waits2 = await after(engine, [dead2], 'wait');
      await kill(engine, dead2);
      const cancelled = await add(engine);
      const waits3 = await after(engine, [cancelled], 'wait');
      await engine.cancel(cancelled.id);
      const expires = await add(engine, { queue: expiring, ttlMs: 1_000 });
      const cancelsOnExpiry = await after(engine, [expires], 'cancel');
      const waitsOnExpiry = await after(engine, [expires], 'wait');
      assert.equal(await engine.deleteDeadLetters({ queue: dead2.queue, all: true }), 1);
      const bulk = await engine.runBulk({
        action: 'delete',
        filter: { queue: cancelled.queue, states: ['cancelled'] },
      });
      assert.equal(bulk.changed, 1);
      clock.advance(2_000);
      await engine.runMaintenance();
      assert.equal(await cancelledBy(waits2), `cancelled dependency:${dead2.id} deleted`);
      assert.equal(await cancelledBy(waits3), `cancelled dependency:${cancelled.id} deleted`);
      assert.equal(await cancelledBy(cancelsOnExpiry), `cancelled dependency:${expires.id}`);
      assert.equal(await cancelledBy(waitsOnExpiry), `cancelled dependency:${expires.id} deleted`);
      assert.deepEqual(await engine.counterMismatches(), []);
    },
  },
  {
    // Task small18c: a dead letter a `wait` job waited on outlived dead_retention_ms, re-read by every sweep.
    name: 'dependencies: a dead or cancelled job past its retention is swept and cancels what waits on it',
    async run(h) {
      const queue = fresh();
      const { engine, clock } = await h.engine({
        options: { queues: { [queue]: { deadRetentionMs: 1_000, cancelledRetentionMs: 1_000 } } },
      });
      const cancelledBy = async (job: Job) => {
        const info = await engine.getJob(job.id);
        return `${info.state} ${info.cancelledBy ?? ''}`;
      };
      const dead = await add(engine, { queue });
      const waits = await after(engine, [dead], 'wait');
      const runs = await after(engine, [dead], 'run');
      await kill(engine, dead);
      const cancelled = await add(engine, { queue });
      const waitsOnCancelled = await after(engine, [cancelled], 'wait');
      await engine.cancel(cancelled.id);
      const [running] = await engine.reserve({ queues: [runs.queue], maxJobs: 1, leaseMs: 600_000 });
      assert.equal(running?.id, runs.id);
      clock.advance(61_000); // past the retention and the sweep interval
      await engine.runMaintenance();
      assert.equal(await stateOf(engine, dead), 'dead', 'kept while a job that may read it runs');
      assert.equal(await cancelledBy(waitsOnCancelled), `cancelled dependency:${cancelled.id} deleted`);
      await engine.ack({ jobId: runs.id, attempt: running!.attempt });
      clock.advance(61_000); // the next sweep
      await engine.runMaintenance();
      await assert.rejects(engine.getJob(dead.id), (e) => e instanceof SeppError && e.code === 'not_found');
      assert.equal(await cancelledBy(waits), `cancelled dependency:${dead.id} deleted`);
      assert.deepEqual(await engine.counterMismatches(), []);
    },
  },
  {
    name: 'dependencies: a completed dependency is kept until what waits on it ended, then swept',
    async run(h) {
      const queue = fresh();
      const { engine, clock } = await h.engine({
        options: { queues: { [queue]: { completedRetentionMs: 1_000 } } },
      });
      const a = await add(engine, { queue });
      const b = await after(engine, [a]);
      await complete(engine, a);
      clock.advance(10_000);
      await engine.runMaintenance();
      assert.equal(await stateOf(engine, a), 'completed', 'b has not run yet');
      await complete(engine, b);
      clock.advance(61_000);
      await engine.runMaintenance();
      await assert.rejects(
        engine.getJob(a.id),
        (error) => error instanceof SeppError && error.code === 'not_found',
      );
    },
  },
  {
    // Task wf18: once the sweep took a completed dependency, its edges must not read `pending` —
    // neither those of the jobs it released nor those of one cancelled before it completed.
    name: 'dependencies: the edges of a swept completed dependency say completed, however it was acked',
    async run(h) {
      const gates = fresh();
      const kept = fresh();
      const { engine, clock } = await h.engine({
        options: { queues: { [kept]: { completedRetentionMs: 86_400_000 } } },
      });
      // Two flows whose gates are acked together (the set release), one gate acked alone.
      const first = committed(
        await engine.enqueueFlow([
          flowJobIn(gates)('a'),
          flowJobIn(kept)('b', { after: ['a'] }),
          flowJobIn(kept)('c', { after: ['a'] }),
        ]),
      );
      const second = committed(
        await engine.enqueueFlow([flowJobIn(gates)('x'), flowJobIn(kept)('y', { after: ['x'] })]),
      );
      await engine.cancel(first.c!);
      const together = await engine.reserve({ queues: [gates], maxJobs: 10, leaseMs: 60_000 });
      assert.equal(together.length, 2);
      await engine.ackBatch(together.map((l) => ({ jobId: l.id, attempt: l.attempt })));
      const alone = await add(engine);
      const third = committed(await engine.enqueueFlow([flowJobIn(kept)('z', { dependsOn: [alone.id] })]));
      await complete(engine, alone);
      for (const leased of await engine.reserve({ queues: [kept], maxJobs: 10, leaseMs: 60_000 }))
        await engine.ack({ jobId: leased.id, attempt: leased.attempt });
      const edges = async (jobId: string) => (await engine.getFlow(jobId)).edges.map((e) => e.state);
      const shown = async () => ({
        b: await edges(first.b!),
        y: await edges(second.y!),
        z: await edges(third.z!),
        c: (await engine.getJob(first.c!)).dependencies?.map((d) => [d.state, d.edge]),
      });
      const completedEdges = { b: ['completed', 'completed'], y: ['completed'], z: ['completed'] };
      assert.deepEqual(await shown(), { ...completedEdges, c: [['completed', 'completed']] });
      clock.advance(61_000); // past the sweep interval: the gates have no reader left
      await engine.runMaintenance();
      for (const id of [first.a!, second.x!, alone.id]) {
        await assert.rejects(engine.getJob(id), (e) => e instanceof SeppError && e.code === 'not_found');
      }
      assert.deepEqual(await shown(), { ...completedEdges, c: [[null, 'completed']] }, 'after the sweep');
    },
  },
  {
    name: 'flows: all or none, names map to ids, results by name; a retried flow with keys does not duplicate',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const flowJobs = (suffix: string) => [
        { name: 'extract', queue, type: 'x', payload: bytes(''), idempotencyKey: `e${suffix}` },
        { name: 'a', queue, type: 'x', payload: bytes(''), after: ['extract'], idempotencyKey: `a${suffix}` },
        { name: 'b', queue, type: 'x', payload: bytes(''), after: ['extract'], idempotencyKey: `b${suffix}` },
        {
          name: 'load',
          queue,
          type: 'x',
          payload: bytes(''),
          after: ['a', 'b'],
          idempotencyKey: `l${suffix}`,
        },
      ];
      const ids = committed(await engine.enqueueFlow(flowJobs('1')));
      assert.deepEqual(committed(await engine.enqueueFlow(flowJobs('1'))), ids, 'the same ids again');
      assert.equal(await stateOf(engine, { id: ids.load! }), 'waiting');
      // One job refused: nothing of the flow is stored.
      const refused = await engine.enqueueFlow([
        { name: 'ok', queue, type: 'x', payload: bytes('') },
        { name: 'bad', queue: '', type: 'x', payload: bytes(''), after: ['ok'] },
      ]);
      assert.equal(refused.committed, false);
      const graph = await engine.getFlow(ids.load!);
      assert.deepEqual(graph.jobs.map((j) => j.id).sort(), Object.values(ids).sort());
      assert.equal(graph.edges.length, 4);
      const run = async (name: string, result: string) => {
        const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1 });
        assert.equal(leased?.id, ids[name], `${name} is the one ready job`);
        await engine.ack({ jobId: leased!.id, attempt: leased!.attempt, result: bytes(result) });
        return leased!;
      };
      await run('extract', 'rows');
      const first = await engine.reserve({ queues: [queue], maxJobs: 2 });
      assert.deepEqual(first.map((l) => l.id).sort(), [ids.a, ids.b].sort());
      for (const l of first)
        await engine.ack({ jobId: l.id, attempt: l.attempt, result: bytes(`from ${l.id}`) });
      const [load] = await engine.reserve({ queues: [queue], maxJobs: 1 });
      assert.equal(load?.id, ids.load);
      const byName = new Map((load?.dependencyResults ?? []).map((r) => [r.name, text(r.result)]));
      assert.deepEqual(
        byName,
        new Map([
          ['a', `from ${ids.a}`],
          ['b', `from ${ids.b}`],
        ]),
      );
      // Counts agree with the rows (checked after every case too), and `waiting` is counted.
      assert.deepEqual(await engine.counterMismatches(), []);
    },
  },
  {
    name: 'flows: the jobs carry their dependency flags from the enqueue; a depends_on on a stored job marks it',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const flagsOf = async (id: string) =>
        (await h.store.read((view) => view.jobs.get(id)))?.dependency_flags;
      const stored = await add(engine);
      const job = flowJobIn(queue);
      const ws = ['w1', 'w2', 'w3', 'w4'];
      // `keyed`'s key lookup stores the jobs before it (root, solo): those are marked by a write of their
      // row, the later ones by their INSERT; `wide` has edges enough for the set statements.
      const ids = committed(
        await engine.enqueueFlow([
          job('root'),
          job('solo'),
          job('keyed', { after: ['root'], idempotencyKey: 'flags-k' }),
          job('left', { after: ['root'] }),
          ...ws.map((w) => job(w, { after: ['root'] })),
          job('wide', { after: [...ws, 'keyed'], dependsOn: [stored.id] }),
          job('leaf', { after: ['left', 'keyed'], dependsOn: [stored.id] }),
        ]),
      );
      const waits = 1;
      const waitedOn = 2;
      const expected: Record<string, number> = {
        root: waitedOn,
        solo: 0,
        keyed: waits | waitedOn,
        left: waits | waitedOn,
        ...Object.fromEntries(ws.map((w) => [w, waits | waitedOn])),
        wide: waits,
        leaf: waits,
      };
      for (const [name, flags] of Object.entries(expected))
        assert.equal(await flagsOf(ids[name]!), flags, `${name}'s dependency_flags`);
      assert.equal(await flagsOf(stored.id), waitedOn, 'a stored job named in depends_on is marked');
      assert.equal((await engine.getFlow(ids.leaf!)).edges.length, 15);
      // Sent again with the same key: the duplicate keeps its flags, and a new job only it would wait on has none.
      const again = committed(
        await engine.enqueueFlow([job('p'), job('keyed', { after: ['p'], idempotencyKey: 'flags-k' })]),
      );
      assert.equal(again.keyed, ids.keyed);
      assert.equal(await flagsOf(ids.keyed!), waits | waitedOn);
      assert.equal(await flagsOf(again.p!), 0);
      // A job enqueued alone with depends_on: it waits, its stored dependency is marked.
      const lone = await add(engine);
      const child = await after(engine, [lone]);
      assert.equal(await flagsOf(child.id), waits);
      assert.equal(await flagsOf(lone.id), waitedOn);
      // The flow runs as its edges say: root first, then what waits on it alone.
      await complete(engine, stored);
      const [first] = await engine.reserve({ queues: [queue], maxJobs: 1 });
      assert.equal(first?.id, ids.root);
      await engine.ack({ jobId: first!.id, attempt: first!.attempt });
      const next = await engine.reserve({ queues: [queue], maxJobs: 20 });
      assert.deepEqual(
        next.map((l) => l.id).sort(),
        [ids.solo, ids.keyed, ids.left, ...ws.map((w) => ids[w]), again.p].sort(),
      );
      assert.deepEqual(await engine.counterMismatches(), []);
    },
  },
  {
    name: 'flows sent at once share a unit: each all or none, a retry among them stores nothing twice, a failing one fails alone',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const job = flowJobIn(queue);
      const keyed = [job('a', { idempotencyKey: 'ka' }), job('b', { after: ['a'], idempotencyKey: 'kb' })];
      const [first, refused, retry] = await Promise.all([
        engine.enqueueFlow(keyed),
        engine.enqueueFlow([job('ok'), job('bad', { queue: '', after: ['ok'] })]),
        engine.enqueueFlow(keyed),
      ]);
      assert.deepEqual(committed(retry!), committed(first!), 'the retry answers the same ids');
      assert.equal(refused!.committed, false);
      // A duplicate whose original is dead refuses its flow (cancel): that flow fails, alone.
      const dead = committed(await engine.enqueueFlow([job('d', { queue: fresh(), idempotencyKey: 'kd' })]));
      const [leased] = await engine.reserve({ queues: [(await engine.getJob(dead.d!)).queue] });
      await engine.nack({
        jobId: dead.d!,
        attempt: leased!.attempt,
        error: 'x',
        directive: { kind: 'dead_letter' },
      });
      const others = fresh();
      const [before, failing, after] = await Promise.allSettled([
        engine.enqueueFlow([job('e', { queue: others })]),
        engine.enqueueFlow([
          job('d', { queue: leased!.queue, idempotencyKey: 'kd' }),
          job('f', { queue: others, after: ['d'] }),
        ]),
        engine.enqueueFlow([job('g', { queue: others })]),
      ]);
      assert.equal(before!.status, 'fulfilled');
      assert.equal(after!.status, 'fulfilled');
      assert.ok(
        failing!.status === 'rejected' &&
          failing.reason instanceof SeppError &&
          failing.reason.code === 'failed_precondition',
      );
      const stored = (r: PromiseSettledResult<FlowResult>) =>
        r.status === 'fulfilled' ? Object.values(committed(r.value)) : [];
      // Ready: a (b waits on it), e and g; nothing of the failed flow (f).
      const ready = await engine.reserve({ queues: [queue, others], maxJobs: 10 });
      assert.deepEqual(
        ready.map((l) => l.id).sort(),
        [committed(first!).a!, ...stored(before!), ...stored(after!)].sort(),
      );
    },
  },
  {
    name: 'batches: members added while others end; the completion job once, after the seal, with the counts',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const done = fresh();
      const member = (): EnqueueRequest => ({ queue, type: 'm', payload: bytes('') });
      const created = await engine.createBatch({
        onComplete: { queue: done, type: 'complete', payload: bytes('') },
        onSuccess: { queue: done, type: 'success', payload: bytes('') },
        jobs: [member(), member()],
      });
      const id = created.batch.id;
      const runOne = async (outcome: 'ack' | 'dead') => {
        const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1 });
        assert.ok(leased, 'a member is ready');
        if (outcome === 'ack') await engine.ack({ jobId: leased.id, attempt: leased.attempt });
        else
          await engine.nack({
            jobId: leased.id,
            attempt: leased.attempt,
            error: 'no',
            directive: { kind: 'dead_letter' },
          });
      };
      await runOne('ack');
      await runOne('ack');
      // Every member ended, but the batch is open: nothing is enqueued.
      assert.equal((await engine.getBatch(id)).batch.state, 'open');
      assert.deepEqual(await engine.reserve({ queues: [done], maxJobs: 10 }), []);
      await engine.addToBatch(id, [member()]);
      const sealed = await engine.sealBatch(id);
      assert.equal(sealed.state, 'sealed');
      assert.equal(sealed.pending, 1);
      await runOne('dead');
      const { batch, members } = await engine.getBatch(id);
      assert.equal(batch.state, 'ended');
      assert.deepEqual([batch.members, batch.completed, batch.dead, batch.cancelled], [3, 2, 1, 0]);
      assert.deepEqual(
        members.map((m) => m.memberState),
        ['completed', 'completed', 'dead'],
      );
      assert.ok(batch.completeJobId !== null);
      assert.equal(batch.successJobId, null, 'one member died: no on_success');
      const completion = await engine.reserve({ queues: [done], maxJobs: 10 });
      assert.deepEqual(
        completion.map((l) => l.type),
        ['complete'],
      );
      // Sealing again, or a requeued member's end, enqueues nothing more.
      assert.equal((await engine.sealBatch(id)).state, 'ended');
      await engine.requeueJob(members[2]!.jobId);
      await runOne('ack');
      assert.equal((await engine.getBatch(id)).batch.dead, 1);
      assert.deepEqual(await engine.reserve({ queues: [done], maxJobs: 10 }), []);
      // A batch sealed with nothing pending ends in the seal; one whose members all complete runs on_success.
      const empty = await engine.createBatch({
        onComplete: { queue: done, type: 'empty', payload: bytes('') },
        seal: true,
      });
      assert.equal(empty.batch.state, 'ended');
      const good = await engine.createBatch({
        onSuccess: { queue: done, type: 'all-good', payload: bytes('') },
        jobs: [member()],
        seal: true,
      });
      await runOne('ack');
      assert.notEqual((await engine.getBatch(good.batch.id)).batch.successJobId, null);
      const types = (await engine.reserve({ queues: [done], maxJobs: 10 })).map((l) => l.type).sort();
      assert.deepEqual(types, ['all-good', 'empty']);
      assert.equal(await engine.batchesOpen(), 0);
    },
  },
  {
    name: 'batches: an add with sealIfAllStored seals in its unit only if none was refused; its repeat is answered',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const member = (key: string, q = queue): EnqueueRequest => ({
        queue: q,
        type: 'm',
        payload: bytes(''),
        idempotencyKey: `${queue}-${key}`,
      });
      const refusedOne = (await engine.createBatch({})).batch.id;
      const left = await engine.addToBatch(refusedOne, [member('r1'), member('r2', 'bad queue!')], {
        sealIfAllStored: true,
      });
      assert.deepEqual([left.batch.state, left.batch.members], ['open', 1]);
      const id = (await engine.createBatch({})).batch.id;
      const first = await engine.addToBatch(id, [member('a'), member('b')], { sealIfAllStored: true });
      assert.deepEqual([first.batch.state, first.batch.members], ['sealed', 2]);
      // Sent again (its answer lost): found by the keys in this batch, answered as the first.
      const again = await engine.addToBatch(id, [member('a'), member('b')], { sealIfAllStored: true });
      assert.deepEqual(
        again.results.map((r) => (r.ok ? [r.jobId, r.deduplicated] : r.message)),
        first.results.map((r) => (r.ok ? [r.jobId, true] : r.message)),
      );
      assert.deepEqual([again.batch.state, again.batch.members], ['sealed', 2]);
      // A job not in the batch (new, or another batch's) is refused as any add to a sealed batch,
      // and the unit stores nothing: the new job is not there after.
      for (const jobs of [[member('a'), member('new')], [member('r1')]]) {
        await assert.rejects(engine.addToBatch(id, jobs, { sealIfAllStored: true }), /is sealed/);
      }
      const stored = await engine.enqueueBatch([member('new')]);
      assert.deepEqual(
        stored.map((r) => r.ok && !r.deduplicated),
        [true],
        'the refused repeat stored nothing',
      );
    },
  },
  {
    name: 'batches: a leased member carries its batch id (grouped or not, added by a member, retried); others none',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const member = (extra: Partial<EnqueueRequest> = {}): EnqueueRequest => ({
        queue,
        type: 'm',
        payload: bytes(''),
        ...extra,
      });
      const outside = await add(engine, { queue });
      const created = await engine.createBatch({ jobs: [member(), member({ group: 'g' })], seal: true });
      const id = created.batch.id;
      const [plain, grouped] = created.results.map((r) => (r.ok ? r.jobId : assert.fail(r.message)));
      const batchOf = (jobs: readonly LeasedJob[]) => new Map(jobs.map((j) => [j.id, j.batchId]));
      const leased = await engine.reserve({ queues: [queue], maxJobs: 10, leaseMs: 60_000 });
      assert.deepEqual(
        batchOf(leased),
        new Map([
          [outside.id, null],
          [plain!, id],
          [grouped!, id],
        ]),
      );
      // Only members lease with a token (task token19).
      assert.deepEqual(
        leased.map((j) => [j.id, j.leaseToken === undefined]),
        leased.map((j) => [j.id, j.id === outside.id]),
      );
      // A member fans out into its own sealed batch with the id and the token its lease carried.
      const first = leased.find((j) => j.id === plain)!;
      const added = await engine.addToBatch(first.batchId!, [member()], {
        fromMember: first.id,
        memberToken: first.leaseToken!,
      });
      const [child] = added.results.map((r) => (r.ok ? r.jobId : assert.fail(r.message)));
      // A member's next attempt carries it too.
      await engine.nack({
        jobId: first.id,
        attempt: first.attempt,
        error: 'again',
        directive: { kind: 'delay', delayMs: 0 },
      });
      const next = await engine.reserve({ queues: [queue], maxJobs: 10, leaseMs: 60_000 });
      assert.deepEqual(
        batchOf(next),
        new Map([
          [plain!, id],
          [child!, id],
        ]),
      );
      // Only the current lease adds from the member: the token of its earlier attempt is refused.
      const stale = await expectCode(
        engine.addToBatch(id, [member()], { fromMember: first.id, memberToken: first.leaseToken! }),
        'permission_denied',
      );
      assert.match(stale.message, /not the token of member .* current lease/);
      const current = next.find((j) => j.id === plain)!;
      const again = await engine.addToBatch(id, [member()], {
        fromMember: first.id,
        memberToken: current.leaseToken!,
      });
      assert.equal(again.batch.members, 4);
    },
  },
  {
    name: 'secrets: the first one stored is kept and outlives a restart; a lease token made before one still adds',
    async run(h) {
      const secret = (candidate: number) =>
        h.write(function* (tx) {
          if (tx.dependencies === undefined) return null;
          return Buffer.from(
            yield* tx.dependencies.secret({ name: 'test', candidate: new Uint8Array(32).fill(candidate) }),
          );
        });
      const first = await secret(1);
      if (first === null) return; // A store without batches keeps no secret.
      assert.deepEqual(first, Buffer.alloc(32, 1));
      assert.deepEqual(await secret(2), first, 'a second candidate is not stored');
      await h.restart();
      assert.deepEqual(await secret(3), first, 'the secret outlives a restart');
      // The lease tokens' secret likewise: a worker holding a member's lease across a restart still adds.
      const queue = fresh();
      let { engine } = await h.engine();
      const { batch } = await engine.createBatch({
        jobs: [{ queue, type: 'm', payload: bytes('') }],
        seal: true,
      });
      const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1, leaseMs: 60_000 });
      ({ engine } = await h.engine());
      const added = await engine.addToBatch(batch.id, [{ queue, type: 'm', payload: bytes('') }], {
        fromMember: leased!.id,
        memberToken: leased!.leaseToken!,
      });
      assert.equal(added.batch.members, 2);
    },
  },
  {
    name: 'batches: the first death enqueues on_death once, with its error; a last member dying first ends both',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const alerts = fresh();
      const member = (): EnqueueRequest => ({ queue, type: 'm', payload: bytes('') });
      const kill = async (error: string) => {
        const [leased] = await engine.reserve({ queues: [queue], maxJobs: 1 });
        assert.ok(leased, 'a member is ready');
        await engine.nack({
          jobId: leased.id,
          attempt: leased.attempt,
          error,
          directive: { kind: 'dead_letter' },
        });
        return leased.id;
      };
      const created = await engine.createBatch({
        onDeath: { queue: alerts, type: 'death', payload: bytes('{"n":1}') },
        jobs: [member(), member()],
      });
      const first = await kill('disk on fire');
      await kill('again');
      const { batch } = await engine.getBatch(created.batch.id);
      assert.deepEqual([batch.state, batch.dead, batch.firstDeadId], ['open', 2, first]);
      const deaths = await engine.reserve({ queues: [alerts], maxJobs: 10 });
      assert.deepEqual(
        deaths.map((l) => l.id),
        [batch.deathJobId],
      );
      const payload = JSON.parse(new TextDecoder().decode(deaths[0]!.payload)) as {
        batch: { outcome: string; firstDead: unknown; pending: number };
        data: unknown;
      };
      assert.deepEqual(
        [payload.batch.outcome, payload.batch.firstDead, payload.batch.pending, payload.data],
        ['death', { jobId: first, error: 'disk on fire' }, 1, { n: 1 }],
      );
      // The only member of a sealed batch dies: on_death, then the end's on_complete, in one unit.
      const lone = await engine.createBatch({
        onDeath: { queue: alerts, type: 'death', payload: bytes('') },
        onComplete: { queue: alerts, type: 'complete', payload: bytes('') },
        jobs: [member()],
        seal: true,
      });
      await kill('alone');
      const ended = (await engine.getBatch(lone.batch.id)).batch;
      assert.equal(ended.state, 'ended');
      assert.ok(ended.deathJobId !== null && ended.completeJobId !== null);
      assert.equal(ended.completionError, null);
      const types = (await engine.reserve({ queues: [alerts], maxJobs: 10 })).map((l) => l.type).sort();
      assert.deepEqual(types, ['complete', 'death']);
    },
  },
  {
    name: 'workflows: a flow and a batch are cancelled as one act; their counts and states follow',
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const ids = committed(
        await engine.enqueueFlow([
          { name: 'root', queue, type: 'x', payload: bytes('') },
          { name: 'left', queue, type: 'x', payload: bytes(''), after: ['root'] },
          { name: 'right', queue, type: 'x', payload: bytes(''), after: ['root'] },
        ]),
      );
      const cancelledFlow = await engine.cancelFlow(ids.left!);
      assert.equal(cancelledFlow.cancelled, 3);
      for (const id of Object.values(ids)) assert.equal(await stateOf(engine, { id }), 'cancelled');
      const done = fresh();
      const batch = await engine.createBatch({
        onComplete: { queue: done, type: 'complete', payload: bytes('') },
        jobs: [
          { queue, type: 'm', payload: bytes('') },
          { queue, type: 'm', payload: bytes('') },
        ],
        seal: true,
      });
      const result = await engine.cancelBatch(batch.batch.id);
      assert.equal(result.cancelled, 2);
      const { batch: ended } = await engine.getBatch(batch.batch.id);
      assert.equal(ended.state, 'ended');
      assert.equal(ended.cancelled, 2);
      assert.equal(
        (await engine.reserve({ queues: [done], maxJobs: 10 })).length,
        1,
        'the completion job, once',
      );
    },
  },
  {
    name: "workflows: GetFlow names every job of a flow, its final job's too; a job no flow named has none",
    async run(h) {
      const { engine } = await h.engine();
      const queue = fresh();
      const alone = await add(engine);
      const ids = committed(
        await engine.enqueueFlow([
          flowJobIn(queue)('extract'),
          flowJobIn(queue)('load', { after: ['extract'], dependsOn: [alone.id] }),
        ]),
      );
      const { jobs } = await engine.getFlow(ids.load!);
      assert.deepEqual(
        jobs.map((j) => [j.id, j.name]),
        [
          [alone.id, null],
          [ids.extract, 'extract'],
          [ids.load, 'load'],
        ],
      );
      // A flow of one job: nothing names it on an edge.
      const single = committed(await engine.enqueueFlow([flowJobIn(queue)('only')]));
      assert.deepEqual(
        (await engine.getFlow(single.only!)).jobs.map((j) => j.name),
        ['only'],
      );
    },
  },
  {
    name: 'workflows: the edges of a cancelled flow say failed — jobs it cancelled, a running one once it stops; a later completion says completed',
    async run(h) {
      const { engine } = await h.engine();
      const root = fresh();
      const rest = fresh();
      // A job that died before: `w` (policy wait) keeps waiting on it until the flow is cancelled.
      const dead = await add(engine);
      await kill(engine, dead);
      const ids = committed(
        await engine.enqueueFlow([
          flowJobIn(root)('a'),
          flowJobIn(rest)('b', { after: ['a'] }),
          flowJobIn(rest)('c', { after: ['b'] }),
          flowJobIn(rest)('w', { after: ['a'], dependsOn: [dead.id], onDependencyFailure: 'wait' }),
        ]),
      );
      const running = await lease(engine, { id: ids.a!, queue: root });
      assert.deepEqual(await engine.cancelFlow(ids.c!), { cancelled: 3, cancelRequested: 1 });
      const edges = async () =>
        Object.fromEntries(
          (await engine.getFlow(ids.c!)).edges.map((e) => [
            `${e.dependsOn === dead.id ? 'dead' : e.name}→${e.jobId === ids.w ? 'w' : e.jobId === ids.b ? 'b' : 'c'}`,
            e.state,
          ]),
        );
      // `a` runs until its worker stops: its edges wait for its end.
      assert.deepEqual(await edges(), {
        'a→b': 'pending',
        'b→c': 'failed',
        'a→w': 'pending',
        'dead→w': 'failed',
      });
      await assert.rejects(engine.ack({ jobId: running.id, attempt: running.attempt }), {
        code: 'job_cancelled',
      });
      assert.equal(await stateOf(engine, { id: ids.a! }), 'cancelled');
      assert.deepEqual(await edges(), {
        'a→b': 'failed',
        'b→c': 'failed',
        'a→w': 'failed',
        'dead→w': 'failed',
      });
      // By id, the same whichever is cancelled first: a dependency's failure cancels what waits on it
      // (the edge fails), and a job cancelled before its dependency fails learns it failed.
      for (const childFirst of [false, true]) {
        const gate = await add(engine);
        const child = await after(engine, [gate]);
        if (childFirst) await engine.cancel(child.id);
        await engine.cancel(gate.id);
        const edges = (await engine.getJob(child.id)).dependencies?.map((d) => d.edge);
        assert.deepEqual(edges, ['failed'], childFirst ? 'child first' : 'gate first');
      }
      // A job cancelled before the job it waited on completed: the edge says completed too, on
      // both sides and in the flow (the store leaves it pending: the ack pays nothing for it).
      const gate = await add(engine);
      const child = await after(engine, [gate]);
      await engine.cancel(child.id);
      const shown = async () => [
        (await engine.getJob(child.id)).dependencies?.map((d) => d.edge),
        (await engine.getJob(gate.id)).dependents?.map((d) => d.edge),
        (await engine.getFlow(child.id)).edges.map((e) => e.state),
      ];
      assert.deepEqual(await shown(), [['pending'], ['pending'], ['pending']]);
      await complete(engine, gate);
      assert.deepEqual(await shown(), [['completed'], ['completed'], ['completed']]);
    },
  },
  {
    // Found by task attack3: the edges carried each result, so a lease of 300 jobs that each
    // waited on the same 100 jobs of 64 KiB results read 1.9 GB (3.9 GB of buffers) to pass
    // none of them on, and GetFlow and GetJob read them too without using them.
    name: "dependencies: edges carry their results' sizes; a lease reads only the results it passes on, once",
    async run(h) {
      const { engine } = await h.engine({
        options: { limits: { ...defaultEngineLimits, maxDependencyResultsBytes: 100 } },
      });
      const a = await add(engine);
      const b = await add(engine);
      const queue = fresh();
      // Both above the limit together (120 bytes), `a` alone within it.
      const both = await add(engine, { queue, dependsOn: [a.id, b.id] });
      const one = await add(engine, { queue, dependsOn: [a.id] });
      await complete(engine, a, 'a'.repeat(60));
      await complete(engine, b, 'b'.repeat(60));
      const edges = await h.store.read((view) => view.dependencies!.of(both.id));
      assert.deepEqual(
        edges.map((e) => [e.parent_id, e.result_bytes, 'result' in e]),
        [
          [a.id, 60, false],
          [b.id, 60, false],
        ],
      );
      const leased = new Map(
        (await engine.reserve({ queues: [queue], maxJobs: 10, leaseMs: 60_000 })).map((l) => [l.id, l]),
      );
      assert.deepEqual(
        leased.get(both.id)?.dependencyResults?.map((r) => [r.result, r.resultOmitted]),
        [
          [null, true],
          [null, true],
        ],
      );
      const [passed] = leased.get(one.id)?.dependencyResults ?? [];
      assert.equal(text(passed?.result), 'a'.repeat(60));
      assert.equal(passed?.resultContentType, 'text/plain');
      assert.equal(passed?.resultOmitted, false);
      assert.deepEqual(
        (await h.store.read((view) => view.dependencies!.results([a.id, 'no-such-job']))).map((r) => [
          r.id,
          text(r.result),
        ]),
        [[a.id, 'a'.repeat(60)]],
      );
    },
  },
  {
    name: 'dependencies: jobs whose failure is left to maintenance are kept once (those with a pending edge), taken oldest first with their state',
    async run(h) {
      const { engine } = await h.engine();
      // Each kept job has a job waiting on it (`wait`: the dead one's failure leaves it waiting).
      const dead = await add(engine);
      await after(engine, [dead], 'wait');
      await kill(engine, dead);
      const later = await add(engine);
      await after(engine, [later]);
      // A job gone since (deleted as forgetDeletedJob does, alone: its edge is left pending).
      const gone = await add(engine, { queue: 'zz-gone' });
      await after(engine, [gone]);
      const { seq } = await engine.getJob(gone.id);
      // No job waits on it: nothing is left to pass its failure to.
      const alone = await add(engine);
      await h.store.write(function* (tx) {
        yield* tx.jobs.delete(seq);
        yield* tx.counts.adjust({ queue: gone.queue, from: 'ready', to: null, jobs: 1 });
        yield* tx.dependencies!.forgetDependents(gone.id);
        yield* tx.dependencies!.keepFailures([gone.id, dead.id, alone.id]);
        yield* tx.dependencies!.keepFailures([dead.id, later.id]);
      });
      const take = (limit: number) => h.store.write((tx) => tx.dependencies!.takeFailures(limit));
      const kept = [
        { id: dead.id, state: 'dead' },
        { id: later.id, state: 'ready' },
        { id: gone.id, state: null },
      ].sort((a, b) => (a.id < b.id ? -1 : 1));
      assert.deepEqual(await take(2), kept.slice(0, 2), 'oldest id first');
      assert.deepEqual(await take(10), kept.slice(2), 'taken once; a job gone has no state');
      assert.deepEqual(await take(10), [], 'the job nothing waits on was not kept');
    },
  },
  {
    name: 'batches: limits.max_open_batches_per_key bounds the batches one key holds not ended',
    async run(h) {
      const { engine } = await h.engine({
        options: { limits: { ...defaultEngineLimits, maxOpenBatchesPerKey: 2 } },
      });
      const first = await engine.createBatch({ owner: 'etl' });
      await engine.createBatch({ owner: 'etl' });
      await assert.rejects(
        engine.createBatch({ owner: 'etl' }),
        (error) => error instanceof SeppError && /max_open_batches_per_key/.test(error.message),
      );
      await engine.createBatch({ owner: 'other' });
      await engine.sealBatch(first.batch.id);
      await engine.createBatch({ owner: 'etl' });
    },
  },
];
