/**
 * A nack the server applied whose answer was lost, sent again (repeated-settlement.ts): the
 * repeat is answered "not leased" (or, its retry leased again since, "lease lost"), and the SDK
 * reads the job — its error history holds this attempt's entry with the nack's own message — so
 * the nack is reported applied, with where the job went. A repeat the job does not prove (the
 * lease ran out before the nack: the entry is the server's "lease expired") is still the refusal.
 * An ack alike (the client's, and a Worker's over unary calls): repeated and answered "not
 * leased", it is acked unless the job disproves it (not completed on that attempt). Through a proxy that cuts the connection
 * carrying the answer (AnswerCutProxy), in front of a real server. A give-back is sent once, never
 * repeated (a lost one leaves the lease to run out). The Python SDK's tests of the
 * same are in clients/python/tests/test_nack_repeat.py.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LeaseLostError, SeppClient, type SeppError } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { AnswerCutProxy } from '../helpers/answer-cut-proxy.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from './helpers.ts';

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

let t: TestServer;
let proxy: AnswerCutProxy;
let client: SeppClient;
const clock = new FakeClock(Date.now());
/** Nacks the server finished (applied or refused), counted as each one's answer is about to leave. */
let nacksDone = 0;
/** Acks alike. */
let acksDone = 0;
/** Set: the next nack applied, its job is leased again (a later attempt) before the nack answers. */
let leaseAgainQueue: string | undefined;

before(async () => {
  t = await startTestServer({ clock });
  const engine = t.server.engine;
  const nack = engine.nack.bind(engine);
  engine.nack = (request) =>
    nack(request)
      .then(async (answer) => {
        const queue = leaseAgainQueue;
        leaseAgainQueue = undefined;
        if (queue !== undefined) assert.equal((await engine.reserve({ queues: [queue] })).length, 1);
        return answer;
      })
      .finally(() => nacksDone++);
  const ack = engine.ack.bind(engine);
  engine.ack = (request) => ack(request).finally(() => acksDone++);
  proxy = new AnswerCutProxy(t.server.grpcPort);
  client = SeppClient.connect(await proxy.listen(), {
    retry: { unavailable: true, maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 5 },
  });
});
after(async () => {
  await client.close();
  await proxy.close();
  await t.dispose();
});

/** Loses the answer of the next nack the server finishes. */
function loseNextNackAnswer(): void {
  const before = nacksDone;
  proxy.cutNextAnswer(() => nacksDone > before);
}

test('a nack whose answer was lost, repeated: applied, where the nack put it', async () => {
  const { id } = await client.enqueue('nack-repeat', 't');
  const [lease] = await client.reserve({ queues: ['nack-repeat'] });
  assert.equal(lease?.id, id);
  const cuts = proxy.cuts;
  loseNextNackAnswer();
  const result = await client.nack(lease, { error: new TypeError('boom'), retryAfterMs: 60_000 });
  assert.equal(proxy.cuts, cuts + 1, 'the first answer was lost');
  const job = await client.getJob(id);
  assert.deepEqual(result, { state: 'scheduled', runAt: job.runAt });
  assert.equal(result.runAt?.getTime(), clock.nowMs() + 60_000);
  assert.deepEqual(
    job.errors.map((e) => `${e.attempt} ${e.errorClass} ${e.error}`),
    ['1 TypeError boom'],
    'applied once',
  );
});

/** Loses the answer of the next ack the server finishes. */
function loseNextAckAnswer(): void {
  const before = acksDone;
  proxy.cutNextAnswer(() => acksDone > before);
}

test('a nack whose answer was lost, its job leased again before the repeat: applied, ready', async () => {
  const { id } = await client.enqueue('nack-again', 't');
  const [lease] = await client.reserve({ queues: ['nack-again'] });
  assert.equal(lease?.id, id);
  const cuts = proxy.cuts;
  leaseAgainQueue = 'nack-again';
  loseNextNackAnswer();
  const result = await client.nack(lease, { error: 'boom', retryAfterMs: 0 });
  assert.equal(proxy.cuts, cuts + 1, 'the first answer was lost');
  const job = await client.getJob(id);
  assert.deepEqual([job.state, job.attempt], ['leased', 2], 'leased again under attempt 2');
  assert.deepEqual(result, { state: 'ready', runAt: job.runAt });
});

test('an ack whose answer was lost, repeated: acked; one the job disproves is the lost lease', async () => {
  const { id } = await client.enqueue('ack-repeat', 't');
  const [lease] = await client.reserve({ queues: ['ack-repeat'] });
  assert.equal(lease?.id, id);
  const cuts = proxy.cuts;
  loseNextAckAnswer();
  await client.ack(lease, { result: 'done' });
  assert.equal(proxy.cuts, cuts + 1, 'the first answer was lost');
  assert.equal((await client.getJob(id)).state, 'completed');

  // The lease ran out before the ack: the job, read, is not completed on that attempt.
  const expired = await client.enqueue('ack-expired', 't');
  const [late] = await client.reserve({ queues: ['ack-expired'], leaseMs: 1000 });
  assert.equal(late?.id, expired.id);
  clock.advance(2000);
  await t.server.engine.runMaintenance();
  loseNextAckAnswer();
  const refused = await client.ack(late).then(
    () => assert.fail('the ack of an expired lease was taken as applied'),
    (error: unknown) => error,
  );
  assert.equal(proxy.cuts, cuts + 2, 'the first answer was lost');
  assert.ok(refused instanceof LeaseLostError);
  assert.equal(refused.code, 'not_found');
});

test("a unary Worker's ack whose answer was lost: completed, no lost lease", async () => {
  const { id } = await client.enqueue('ack-worker', 't');
  const worker = client.worker({
    queues: ['ack-worker'],
    transport: 'unary',
    logger: quiet,
    fallback: async () => {
      loseNextAckAnswer();
      return 'done';
    },
  });
  const errors: SeppError[] = [];
  const completed: string[] = [];
  worker.on('error', (error: SeppError) => errors.push(error));
  worker.on('completed', (job) => completed.push(job.id));
  try {
    const cuts = proxy.cuts;
    await until(() => completed.length + errors.length > 0, 'the job settled');
    assert.equal(proxy.cuts, cuts + 1, 'the answer was lost');
    assert.deepEqual(errors, [], 'the repeat reported no lost lease');
    assert.deepEqual(completed, [id]);
    assert.equal((await client.getJob(id)).state, 'completed');
  } finally {
    await worker.close({ timeoutMs: 0 });
  }
});

test('a repeat the job does not prove applied is the refusal', async () => {
  const { id } = await client.enqueue('nack-expired', 't');
  const [lease] = await client.reserve({ queues: ['nack-expired'], leaseMs: 1000 });
  assert.equal(lease?.id, id);
  clock.advance(2000);
  await t.server.engine.runMaintenance();
  const cuts = proxy.cuts;
  loseNextNackAnswer();
  const refused = await client.nack(lease, { error: 'boom' }).then(
    () => assert.fail('the nack of an expired lease was taken as applied'),
    (error: unknown) => error,
  );
  assert.equal(proxy.cuts, cuts + 1, 'the first answer was lost');
  assert.ok(refused instanceof LeaseLostError);
  assert.equal(refused.code, 'not_found');
  const job = await client.getJob(id);
  assert.deepEqual(
    job.errors.map((e) => `${e.attempt} ${e.error}`),
    ['1 lease expired'],
  );
});

test('a give-back whose answer was lost is not sent again; the next lease has the next attempt', async () => {
  const { id } = await client.enqueue('give-back-once', 't');
  const [lease] = await client.reserve({ queues: ['give-back-once'] });
  assert.equal(lease?.id, id);
  const done = nacksDone;
  loseNextNackAnswer();
  await assert.rejects(client.nack(lease, { giveBack: true }), 'the lost answer is the error');
  assert.equal(nacksDone, done + 1, 'sent once, not repeated');
  const [again] = await client.reserve({ queues: ['give-back-once'] });
  assert.deepEqual(
    [again?.id, again?.attempt],
    [id, lease.attempt + 1],
    'given back: leased again under the next attempt (the given-back one is never reused)',
  );
  assert.equal((await client.getJob(id)).state, 'leased', 'and that lease stands');
});

test("a Worker's nack whose answer the broken Work stream took: failed, not an error", async () => {
  const { id } = await client.enqueue('nack-worker', 't');
  const worker = client.worker({
    queues: ['nack-worker'],
    logger: quiet,
    reconnect: { baseDelayMs: 1, maxDelayMs: 20 },
    fallback: async () => {
      loseNextNackAnswer();
      throw new Error('handler failed');
    },
  });
  const errors: SeppError[] = [];
  const failed: string[] = [];
  worker.on('error', (error: SeppError) => errors.push(error));
  worker.on('failed', (job, error, result) => failed.push(`${job.id} ${error.message} ${result.state}`));
  try {
    const cuts = proxy.cuts;
    await until(() => failed.length === 1, 'the job failed');
    assert.equal(proxy.cuts, cuts + 1, 'the answer was lost');
    assert.deepEqual(failed, [`${id} handler failed ${(await client.getJob(id)).state}`]);
    assert.deepEqual(
      errors.filter((e) => e instanceof LeaseLostError),
      [],
      'the repeat reported no lost lease',
    );
    const job = await client.getJob(id);
    assert.deepEqual(
      job.errors.map((e) => `${e.attempt} ${e.error}`),
      ['1 handler failed'],
    );
  } finally {
    await worker.close({ timeoutMs: 0 });
  }
});
