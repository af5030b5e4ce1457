/**
 * A queue made through one server, asked about through another on the same PostgreSQL
 * schema before the second one's refresh (queues/queue-lookup.ts): every call that checks a
 * queue exists finds it in the store on the registry's miss and answers as the first server
 * would — its paused flag and run-time overrides included — and a queue that exists nowhere
 * is still NOT_FOUND. ListQueues and the admin API's queue page list it at once too. The clocks are fake, so no poll refreshes anything; the queues are made
 * paused or with scheduled jobs only, so no signal of ready jobs tells the second server either.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import type { StoreTx, WriteUnit } from '../../src/store/store.ts';
import { useCluster } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/steady-load.ts';

const postgres = useCluster('queuemiss');
const audit = { actor: 'ops', action: 'queue.settings', target: 'queue:q' };
const payload = new Uint8Array([1]);
const laterMs = 3_600_000;

let a: Engine;
let b: Engine;
let storeOfB: PostgresStore;
let opened: Promise<void> | undefined;

/**
 * An engine on the schema, once its listener is connected: the look at the store it takes
 * then is over before the test makes anything.
 */
async function open(maxQueues = 20, onStore?: (store: PostgresStore) => void): Promise<Engine> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, 'miss'));
  onStore?.(store);
  await store.start();
  const defaults = defaultEngineOptions();
  const options = { ...defaults, limits: { ...defaults.limits, maxQueues } };
  const engine = await Engine.open(store, options, { clock: new FakeClock() });
  // The LISTEN connection comes up on its own (a real socket), not at a write: wait for it.
  await waitFor(() => store.signals.listening, 'the signal listener', 30_000);
  return engine;
}

/** B, then A (at the first test: the cluster's own `before` does not wait for a second one). */
function openBoth(): Promise<void> {
  opened ??= (async () => {
    b = await open(20, (store) => {
      storeOfB = store;
    });
    a = await open();
  })();
  return opened;
}

after(async () => {
  await a?.close();
  await b?.close();
});

/** Makes `queue` through A: paused, max_attempts overridden, `scheduled` jobs due in an hour. */
async function madeOnA(queue: string, scheduled = 0): Promise<void> {
  await openBoth();
  await a.pauseQueue(queue, undefined, { allowMissing: true });
  await a.changeQueueSettings(queue, { set: { maxAttempts: 7 } }, audit);
  if (scheduled > 0) {
    await a.enqueueBatch(
      Array.from({ length: scheduled }, () => ({ queue, type: 't', payload, delayMs: laterMs })),
    );
  }
  assert.ok(!(await knownToB(queue)), `B does not know ${queue} yet`);
}

/** Whether B's registry holds `queue` (describeQueues describes only those, and looks nothing up). */
const knownToB = async (queue: string) => (await b.describeQueues([queue])).length > 0;

/** What a queue looks like through one server, without what is that server's own (its waiters). */
async function seen(engine: Engine, queue: string) {
  const info = await engine.getQueue(queue);
  assert.ok(info !== undefined, `${queue} exists`);
  return { paused: info.paused, counts: info.counts, settings: info.settings, sources: info.settingSources };
}

test('each call on B right after A made the queue answers as A, and B keeps the queue', async () => {
  await madeOnA('info', 2);
  assert.deepEqual(await seen(b, 'info'), await seen(a, 'info'), 'GetQueue');
  assert.ok(await knownToB('info'));
  assert.equal((await b.getQueue('info'))?.settings.maxAttempts, 7);

  await madeOnA('count', 3);
  assert.equal((await b.countBulk('delete', { queue: 'count' })).matched, 3, 'a bulk count');

  await madeOnA('dead');
  assert.deepEqual((await b.listDeadLetters({ queue: 'dead' })).items, [], 'dead letters');
  await madeOnA('requeue');
  assert.equal(await b.requeueDeadLetters({ queue: 'requeue', all: true }), 0, 'requeue all dead letters');
  await madeOnA('chosen');
  assert.equal(await b.deleteDeadLetters({ queue: 'chosen', jobIds: ['nope'] }), 0, 'chosen dead letters');

  await madeOnA('errors');
  assert.equal((await b.topErrors({ queue: 'errors' })).deadTotal, 0, 'error groups');

  await madeOnA('settings');
  const changed = await b.changeQueueSettings('settings', { set: { maxLeased: 2 } }, audit);
  assert.equal(changed.settings.maxAttempts, 7, "A's override stays");
  assert.equal(changed.settings.maxLeased, 2);
  assert.equal(changed.paused, true);

  await madeOnA('resume', 1);
  await b.resumeQueue('resume');
  assert.equal((await b.getQueue('resume'))?.paused, false);

  await madeOnA('gone');
  await b.deleteQueue('gone');
  assert.equal(await a.getQueue('gone').then((q) => q?.name), 'gone', "A's registry keeps it till its job");
  assert.equal(await b.getQueue('gone'), undefined);

  await madeOnA('purge', 2);
  assert.deepEqual(await b.purgeQueue('purge'), { deleted: 2 }, 'purge (a bulk delete)');
});

test('an enqueue on B to a queue A made finds it: still paused, its override kept, counted once', async () => {
  await openBoth();
  const before = (await b.listQueues()).length;
  await madeOnA('enq');
  const [accepted] = await b.enqueueBatch([{ queue: 'enq', type: 't', payload }]);
  assert.ok(accepted?.ok === true);
  assert.equal((await b.getJob(accepted.jobId)).maxAttempts, 7, "the job is checked against A's override");
  const info = await seen(b, 'enq');
  assert.equal(info.paused, true, 'not taken as a new, unpaused queue');
  assert.equal(info.settings.maxAttempts, 7);
  assert.equal((await b.listQueues()).length, before + 1, 'one queue more');
  assert.deepEqual(await b.reserve({ queues: ['enq'], maxJobs: 1 }), [], 'a paused queue leases nothing');
  await madeOnA('atomic');
  const atomic = await b.enqueueAtomic([{ queue: 'atomic', type: 't', payload }]);
  assert.ok(atomic.committed);
  assert.equal((await b.getJob(atomic.results[0]?.jobId ?? '')).maxAttempts, 7, 'all or nothing too');
  assert.equal((await b.getQueue('atomic'))?.paused, true);
  // A server at its limits.max_queues enqueues to a queue another one made: not a new queue.
  const full = await open((await b.listQueues()).length);
  try {
    await madeOnA('over');
    const [found] = await full.enqueueBatch([{ queue: 'over', type: 't', payload }]);
    assert.equal(found?.ok, true, 'not refused as a queue beyond the limit');
  } finally {
    await full.close();
  }
  const client = await postgres.client();
  const rows = await client.query("SELECT count(*)::int AS n FROM miss.queues WHERE name = 'enq'");
  assert.equal(rows.rows[0].n, 1);
});

test('a queue that exists nowhere is still not_found on B (and B does not remember it)', async () => {
  await openBoth();
  const notFound = (error: unknown) => error instanceof SeppError && error.code === 'not_found';
  assert.equal(await b.getQueue('nowhere'), undefined);
  await assert.rejects(b.countBulk('delete', { queue: 'nowhere' }), notFound);
  await assert.rejects(b.listDeadLetters({ queue: 'nowhere' }), notFound);
  await assert.rejects(b.requeueDeadLetters({ queue: 'nowhere', all: true }), notFound);
  await assert.rejects(b.deleteDeadLetters({ queue: 'nowhere', jobIds: ['x'] }), notFound);
  await assert.rejects(b.topErrors({ queue: 'nowhere' }), notFound);
  await assert.rejects(b.changeQueueSettings('nowhere', { set: { maxLeased: 1 } }, audit), notFound);
  await assert.rejects(b.pauseQueue('nowhere'), notFound);
  await assert.rejects(b.deleteQueue('nowhere'), notFound);
  assert.ok(!(await knownToB('nowhere')));
  // Made through A now: B's next call finds it (no absence was remembered).
  await madeOnA('nowhere');
  assert.equal((await b.getQueue('nowhere'))?.paused, true);
});

test("ListQueues and the queue page on B list a queue A just made, with A's paused flag and override", async () => {
  await madeOnA('listed', 1);
  const listed = (await b.listQueues()).find((q) => q.name === 'listed');
  assert.ok(listed !== undefined, 'ListQueues lists it before any refresh');
  assert.deepEqual(
    { paused: listed.paused, scheduled: listed.counts.scheduled, maxAttempts: listed.settings.maxAttempts },
    { paused: true, scheduled: 1, maxAttempts: 7 },
  );
  assert.ok(await knownToB('listed'), 'B keeps it');

  await madeOnA('paged');
  const page = await b.queuePage({ pageSize: 100 });
  assert.equal(page.items.find((q) => q.name === 'paged')?.paused, true, "the admin API's page lists it");
  const client = await postgres.client();
  const stored = await client.query<{ name: string }>('SELECT name FROM miss.queues ORDER BY name');
  assert.deepEqual(
    page.items.map((q) => q.name),
    stored.rows.map((row) => row.name),
    'B lists every queue the store holds',
  );
});

/**
 * Counts the reads of a queue's row (`queues.find`) in B's writes while `act` runs: B's
 * store hands each write unit a transaction whose find is counted, and is itself again after.
 */
async function findsOnB(act: () => Promise<unknown>): Promise<number> {
  let finds = 0;
  const write = storeOfB.write;
  const original = write.bind(storeOfB);
  storeOfB.write = <T>(unit: WriteUnit<T>) =>
    original((tx: StoreTx) => {
      const queues = Object.create(tx.queues) as StoreTx['queues'];
      queues.find = (name) => {
        finds++;
        return tx.queues.find(name);
      };
      return unit(Object.assign(Object.create(tx) as StoreTx, { queues }));
    });
  try {
    await act();
  } finally {
    storeOfB.write = write;
  }
  return finds;
}

test('a batch or flow to a queue new everywhere reads its row once, not once per job', async () => {
  // All or nothing, the queue stays a miss until every job is admitted: it was read per job.
  await openBoth();
  const jobs = (queue: string) => Array.from({ length: 50 }, () => ({ queue, type: 't', payload }));
  let atomic: Awaited<ReturnType<Engine['enqueueAtomic']>> | undefined;
  assert.equal(await findsOnB(async () => (atomic = await b.enqueueAtomic(jobs('fresh-atomic')))), 1);
  assert.equal(atomic?.committed, true);
  const twoQueues = [...jobs('fresh-x'), ...jobs('fresh-y'), ...jobs('fresh-x')];
  assert.equal(await findsOnB(() => b.enqueueAtomic(twoQueues)), 2, 'one read per distinct name');
  // A refused job creates nothing, so its queue stays a miss too.
  const refused = jobs('fresh-refused').map((job) => ({ ...job, type: '' }));
  assert.equal(await findsOnB(() => b.enqueueBatch(refused)), 1);
  const flow = Array.from({ length: 50 }, (_, i) => ({
    queue: 'fresh-flow',
    type: 't',
    payload,
    name: `j${i}`,
    after: i === 0 ? [] : [`j${i - 1}`],
  }));
  let result: Awaited<ReturnType<Engine['enqueueFlow']>> | undefined;
  assert.equal(await findsOnB(async () => (result = await b.enqueueFlow(flow))), 1);
  assert.equal(result?.committed, true);
  // A queue A made is still found through the one read, with its override.
  await madeOnA('made-atomic');
  const made = await b.enqueueAtomic(jobs('made-atomic'));
  assert.ok(made.committed);
  assert.equal((await b.getJob(made.results[0]?.jobId ?? '')).maxAttempts, 7);
});
