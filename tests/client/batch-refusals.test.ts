/**
 * Batches and flows under refusals, with a real server (batch-retries.ts, flows.ts): with retries
 * on, members of createBatch and addToBatch refused `queue_full` are added again until the queue
 * has room, each stored once, and `seal` waits for them; with nothing refused a sealed
 * createBatch or addToBatch is one call (`seal_if_all_stored`), against a server that ignores
 * that field the SDK seals, and a seal that fails says which batch it left open. With retries off the refusal
 * is an outcome. A flow is one all-or-nothing request the SDK cannot cut: over a `max_batch_jobs` a
 * reload lowered, its error names the limit and the flow's size. The Python SDK's tests of the
 * same are in clients/python/tests/test_batch_refusals.py.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { BatchLeftOpenError, Flow, SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { SeppError as EngineError } from '../../src/engine/errors.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from './helpers.ts';

const toml = '[queues.few]\nmax_depth = 2\n';
const retry = { unavailable: true, maxAttempts: 1000, baseDelayMs: 5, maxDelayMs: 20 };

let t: TestServer;
let once: SeppClient;
/** AddToBatch, CreateBatch and SealBatch calls the engine took. */
let adds = 0;
let creates = 0;
let seals = 0;
/** Set: the engine's createBatch and addToBatch drop `sealIfAllStored`, as a server older than the field. */
let ignoreSealIfAllStored = false;
/** Set: the engine's next addToBatch is applied, then answered UNAVAILABLE (its answer lost). */
let loseAddAnswer = false;
/** Set: the engine's sealBatch fails with this. */
let sealFails: Error | undefined;
before(async () => {
  t = await startTestServer({ toml });
  const engine = t.server.engine;
  const add = engine.addToBatch.bind(engine);
  engine.addToBatch = (batchId, jobs, options = {}, audit) => {
    adds++;
    const { sealIfAllStored, ...rest } = options;
    const added = add(batchId, jobs, ignoreSealIfAllStored ? rest : { ...rest, sealIfAllStored }, audit);
    if (!loseAddAnswer) return added;
    loseAddAnswer = false;
    return added.then(() => Promise.reject(new EngineError('unavailable', 'the answer was lost on cue')));
  };
  const create = engine.createBatch.bind(engine);
  engine.createBatch = ({ sealIfAllStored, ...request }, audit) => {
    creates++;
    return create(ignoreSealIfAllStored ? request : { ...request, sealIfAllStored }, audit);
  };
  const seal = engine.sealBatch.bind(engine);
  engine.sealBatch = (...args) => {
    seals++;
    return sealFails === undefined ? seal(...args) : Promise.reject(sealFails);
  };
  once = SeppClient.connect(t.address);
});
after(async () => {
  await once.close();
  await t.dispose();
});

/** Takes the oldest job of queue `few` out (reserve and ack). */
async function drainOne(): Promise<string> {
  const [lease] = await once.reserve({ queues: ['few'] });
  assert.ok(lease, 'a job on few');
  await once.ack(lease);
  return lease.id;
}

/** The types of the ready jobs on `few`, sorted. */
async function typesOnFew(): Promise<string[]> {
  const page = await t.server.engine.listJobs({ queue: 'few', state: 'ready' });
  return page.items.map((job) => job.type).toSorted();
}

test('createBatch and addToBatch: members refused queue_full are added again, once each, then sealed', async () => {
  const retried = SeppClient.connect(t.address, { retry });
  try {
    // Retries off: the refusal is the member's outcome, the batch sealed in the one call.
    await once.enqueue('few', 'filler');
    const plain = await once.createBatch({
      jobs: [
        { queue: 'few', type: 'a' },
        { queue: 'few', type: 'b' },
      ],
      seal: true,
    });
    assert.deepEqual(
      plain.results.map((o) => (o.ok ? 'ok' : o.reason)),
      ['ok', 'queue_full'],
    );
    assert.equal(plain.batch.state, 'sealed');
    await drainOne();
    await drainOne();

    // Retries on: `d` is added again while the queue is full, and stored once it has room.
    await once.enqueue('few', 'filler');
    const addsBefore = adds;
    const sealsBefore = seals;
    const created = retried.createBatch({
      jobs: [
        { queue: 'few', type: 'c' },
        { queue: 'few', type: 'd' },
      ],
      seal: true,
    });
    await until(() => adds > addsBefore, 'the refused member added again');
    await drainOne();
    const { batch, results } = await created;
    assert.ok(
      results.every((o) => o.ok),
      'every member stored',
    );
    assert.deepEqual([batch.state, batch.members], ['sealed', 2]);
    assert.equal(seals, sealsBefore + 1, 'sealed by one SealBatch after the add');
    assert.deepEqual(await typesOnFew(), ['c', 'd'], 'each stored once');
    await drainOne();
    await drainOne();

    // addToBatch alike, to an open batch, sealing it after.
    const open = await retried.createBatch({ jobs: [{ queue: 'few', type: 'e' }] });
    const addsThen = adds;
    const sealsThen = seals;
    const added = retried.addToBatch(
      open.batch.id,
      [
        { queue: 'few', type: 'f' },
        { queue: 'few', type: 'g' },
      ],
      {
        seal: true,
      },
    );
    await until(() => adds > addsThen + 1, 'the refused member added again');
    assert.equal(await drainOne(), open.results[0]?.ok ? open.results[0].id : '', 'e leaves first');
    const after = await added;
    assert.deepEqual(
      after.results.map((o) => o.ok),
      [true, true],
    );
    assert.deepEqual([after.batch.state, after.batch.members], ['sealed', 3]);
    assert.equal(seals, sealsThen + 1, 'the add refused g: not sealed in it, but by one SealBatch after');
    assert.deepEqual(await typesOnFew(), ['f', 'g'], 'each stored once');
    await drainOne();
    await drainOne();
  } finally {
    await retried.close();
  }
});

test('a sealed createBatch or addToBatch with nothing refused is one call; an older server is sealed after', async () => {
  const retried = SeppClient.connect(t.address, { retry });
  try {
    const counts = () => ({ creates, adds, seals });
    const before = counts();
    const one = await retried.createBatch({ jobs: [{ queue: 'roomy', type: 'a' }], seal: true });
    assert.deepEqual([one.batch.state, one.batch.members], ['sealed', 1]);
    assert.deepEqual(counts(), { ...before, creates: before.creates + 1 }, 'one CreateBatch, nothing else');
    const open = await retried.createBatch({ jobs: [] });
    const addBefore = counts();
    const added = await retried.addToBatch(open.batch.id, [{ queue: 'roomy', type: 'a' }], { seal: true });
    assert.deepEqual([added.batch.state, added.batch.members], ['sealed', 1]);
    assert.deepEqual(counts(), { ...addBefore, adds: addBefore.adds + 1 }, 'one AddToBatch, nothing else');

    // The add's answer is lost after it sealed: its repeat is answered as the first.
    const lostOne = await retried.createBatch({ jobs: [] });
    const lostBefore = counts();
    loseAddAnswer = true;
    const repeated = await retried.addToBatch(
      lostOne.batch.id,
      [
        { queue: 'roomy', type: 'l1' },
        { queue: 'roomy', type: 'l2' },
      ],
      { seal: true },
    );
    assert.deepEqual([repeated.batch.state, repeated.batch.members], ['sealed', 2]);
    assert.deepEqual(
      repeated.results.map((o) => o.ok && o.deduplicated),
      [true, true],
    );
    assert.deepEqual(counts(), { ...lostBefore, adds: lostBefore.adds + 2 }, 'the add twice, nothing else');
    const { members } = await retried.getBatch(lostOne.batch.id);
    assert.deepEqual(
      members.map((m) => m.jobId),
      repeated.results.map((o) => (o.ok ? o.id : '')),
    );

    // A server that ignores seal_if_all_stored answers the batch open: the SDK seals it.
    ignoreSealIfAllStored = true;
    const older = await retried.createBatch({ jobs: [{ queue: 'roomy', type: 'b' }], seal: true });
    assert.deepEqual([older.batch.state, older.batch.members], ['sealed', 1]);
    assert.deepEqual(counts(), {
      ...before,
      creates: before.creates + 4,
      adds: before.adds + 3,
      seals: before.seals + 1,
    });
    const openToo = await retried.createBatch({ jobs: [] });
    const olderAdd = await retried.addToBatch(openToo.batch.id, [{ queue: 'roomy', type: 'b' }], {
      seal: true,
    });
    assert.deepEqual([olderAdd.batch.state, olderAdd.batch.members], ['sealed', 1]);
    assert.deepEqual(counts(), {
      ...before,
      creates: before.creates + 5,
      adds: before.adds + 4,
      seals: before.seals + 2,
    });

    // The seal fails: the error says which batch is left open, and it is.
    sealFails = new EngineError('failed_precondition', 'the seal was refused on cue');
    const refused = await retried.createBatch({ jobs: [{ queue: 'roomy', type: 'c' }], seal: true }).then(
      () => assert.fail('a failed seal resolved'),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof BatchLeftOpenError, String(refused));
    assert.equal(refused.code, 'failed_precondition');
    assert.match(refused.message, /^batch \S+ is stored with its members but left open: .*refused on cue/);
    assert.equal((await retried.getBatch(refused.batchId)).batch.state, 'open');
  } finally {
    ignoreSealIfAllStored = false;
    sealFails = undefined;
    await retried.close();
  }
});

test('a flow over a limit a reload or restart lowered: the error names the limit and the flow size', async () => {
  const client = SeppClient.connect(t.address, { retry });
  const small = await startTestServer({ toml: '[grpc]\nmax_message_bytes = "1200KiB"\n' });
  const toSmall = SeppClient.connect(small.address, { retry });
  try {
    await client.enqueue('flows', 't'); // The client knows the server's bounds before the reload.
    t.writeConfig(`${toml}[limits]\nmax_flow_jobs = 2\n`);
    assert.equal((await t.server.reload({ actor: 'signal:SIGHUP' })).applied, true);
    const flow = new Flow()
      .add('a', { queue: 'flows', type: 't' })
      .add('b', { queue: 'flows', type: 't', after: ['a'] })
      .add('c', { queue: 'flows', type: 't', after: ['b'] });
    const refusal = (flow: Flow, via: SeppClient) =>
      via.enqueueFlow(flow).then(
        () => assert.fail('a flow over the limit was stored'),
        (e: unknown) => e,
      );
    const overJobs = await refusal(flow, client);
    assert.ok(overJobs instanceof SeppError);
    assert.deepEqual([overJobs.grpcCode, overJobs.retry], [status.RESOURCE_EXHAUSTED, 'never']);
    assert.match(overJobs.message, /^the flow \(3 jobs, about \d+ bytes\) is one all-or-nothing request/);
    assert.match(overJobs.message, /the limit is 2 \(limits\.max_flow_jobs\)/);

    // Over the message size a restart left (the server's grpc.max_message_bytes below the flow).
    const large = new Flow();
    for (const name of ['a', 'b', 'c'])
      large.add(name, { queue: 'q', type: 't', payload: 'x'.repeat(500 * 1024) });
    const overBytes = await refusal(large, toSmall);
    assert.ok(overBytes instanceof SeppError);
    assert.deepEqual([overBytes.grpcCode, overBytes.retry], [status.RESOURCE_EXHAUSTED, 'never']);
    assert.match(overBytes.message, /^the flow \(3 jobs, about 15\d{5} bytes\)/);
    assert.match(overBytes.message, /\(\d+ vs 1228800\).*grpc\.max_message_bytes/);
  } finally {
    await client.close();
    await toSmall.close();
    await small.dispose();
    t.writeConfig(toml);
    await t.server.reload({ actor: 'signal:SIGHUP' });
  }
});
