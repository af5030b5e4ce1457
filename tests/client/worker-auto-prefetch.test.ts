/**
 * `prefetch: 'auto'`, the Worker's default (clients/typescript/src/worker-auto-prefetch.ts):
 * the rule as a pure function, then a real server: a worker of short jobs comes to hold jobs
 * beyond its slots once its first `concurrency` runs finished, and gives them back at close
 * with their attempts uncounted, each once; a worker whose jobs take longer than its budget holds none.
 * Run times are measured on the worker's injected clock, which a handler moves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient, type Worker } from '@sepp-queue/client';
import { AutoPrefetch, autoPrefetchLimit } from '../../clients/typescript/src/worker-auto-prefetch.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deferred, heardBack, nextEvents, until } from './helpers.ts';

describe('prefetch auto: the rule', () => {
  test('none before `concurrency` runs; then slots × min(1 s, lease/10) of work, capped', () => {
    const limit = (concurrency: number, avgRunMs: number, leaseMs = 30_000, runs = concurrency) =>
      autoPrefetchLimit({ concurrency, leaseMs, runs, avgRunMs });
    assert.equal(limit(50, 1, 30_000, 49), 0, 'before the 50th run: nothing ahead');
    assert.equal(limit(50, 100), 500, '50 slots of 100 ms jobs finish 500 a second');
    assert.equal(limit(50, 200), 250);
    assert.equal(limit(50, 3000), 16, 'floor(50 × 1000 / 3000)');
    assert.equal(limit(1, 1500), 0, 'a job longer than the budget: none held');
    assert.equal(limit(50, 1), 500, 'capped at 500');
    assert.equal(limit(1, 0), 500, 'a run of 0 ms counts as 0.05 ms, then the cap');
    assert.equal(limit(600, 1), 400, 'slots + held fit one stream: 1000 − 600');
    assert.equal(limit(1000, 1), 0, 'no room left on the stream');
    assert.equal(limit(10, 10, 1000), 100, 'a 1 s lease: a budget of 100 ms, 10 × 100 / 10');
    assert.equal(limit(10, 10, 20_000), 500, 'min(1000, 2000) ms: 1000');
  });

  test('the average weighs each run 0.1 after the first; the limit is split over the lanes, each capped', () => {
    const lanes = [
      { prefetch: 7, prefetchMax: 3, capacity: 1 },
      { prefetch: 7, prefetchMax: 250, capacity: 1 },
    ];
    let serverMax = 0;
    const auto = new AutoPrefetch(lanes, 2, 30_000, () => serverMax);
    assert.deepEqual(
      lanes.map((l) => l.prefetch),
      [0, 0],
      'none at first',
    );
    auto.ran(100);
    assert.equal(auto.limit, 0, 'one run of two slots');
    auto.ran(200);
    assert.equal(auto.avgRunMs, 110, '100 + 0.1 × (200 − 100)');
    assert.equal(auto.limit, 18, 'floor(2 × 1000 / 110)');
    assert.deepEqual(
      lanes.map((l) => l.prefetch),
      [0, 0],
      "the server's max_reserve_jobs not known yet: none held",
    );
    serverMax = 1000;
    auto.ran(110);
    assert.deepEqual(
      lanes.map((l) => l.prefetch),
      [3, 9],
      '9 each, the first capped at its most',
    );
    serverMax = 6;
    auto.ran(110);
    assert.deepEqual(
      lanes.map((l) => l.prefetch),
      [3, 5],
      'a lane’s slots and held jobs within the server’s max_reserve_jobs',
    );
    for (let i = 0; i < 60; i++) auto.ran(5000);
    assert.equal(auto.limit, 0, 'the jobs grew long: nothing more asked ahead');
    assert.deepEqual(
      lanes.map((l) => l.prefetch),
      [0, 0],
    );
  });
});

describe('prefetch auto: a Worker against a real server', () => {
  let t: TestServer;
  let client: SeppClient;
  const workers: Worker[] = [];
  const gates: (() => void)[] = [];
  before(async () => {
    t = await startTestServer({ clock: new FakeClock(Date.UTC(2026, 11, 7)) });
    client = SeppClient.connect(t.address);
  });
  after(async () => {
    for (const open of gates) open();
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
    await client.close();
    await t.dispose();
  });

  const leasedOf = async (queue: string) =>
    (await client.listQueues()).find((q) => q.name === queue)?.counts.leased;

  test('short jobs: held beyond the slots once the first runs finished; given back at close uncounted', async () => {
    const queue = 'auto-short';
    const ids: string[] = [];
    // Two quick jobs first, then ten that wait for the gate.
    for (let i = 0; i < 12; i++) ids.push((await client.enqueueJson(queue, 'j', { slow: i >= 2 })).id);
    const gate = deferred();
    gates.push(() => gate.resolve());
    const started: string[] = [];
    const worker = client.worker({
      clock: new FakeClock(Date.UTC(2026, 11, 7)),
      queues: [queue],
      concurrency: 2,
      fallback: async (job) => {
        started.push(job.id);
        if ((job.data as { slow: boolean }).slow) await gate.promise;
      },
    });
    worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
    workers.push(worker);
    await until(() => worker.running === 2 && worker.held === 8, 'two running and eight held');
    assert.equal(await leasedOf(queue), 10, 'more leased than its concurrency');
    assert.deepEqual(started, ids.slice(0, 4), 'held jobs have not started');
    const closed = worker.close();
    for (const id of ids.slice(4)) {
      await until(async () => (await client.getJob(id)).state === 'ready', `held job ${id} given back`);
      // Uncounted: the give-back keeps its attempt and grows the budget by one. Once: the close
      // stopped the stream's delivery first, so no job given back came back to this worker.
      const back = await client.getJob(id);
      assert.deepEqual([back.attempt, back.maxAttempts], [1, 6], 'given back once, uncounted');
    }
    gate.resolve();
    await closed;
  });

  test('jobs longer than the budget: the worker never holds one', async () => {
    const queue = 'auto-long';
    for (let i = 0; i < 6; i++) await client.enqueueJson(queue, 'j', {});
    const clock = new FakeClock(Date.UTC(2026, 11, 7));
    const leasedWhileRunning: (number | undefined)[] = [];
    const worker = client.worker({
      clock,
      queues: [queue],
      concurrency: 1,
      fallback: async (job) => {
        // 1.5 s by the worker's clock: longer than 1 slot × 1 s of budget.
        clock.advance(1500);
        // Whatever the worker asked for before now is leased by the time this is answered.
        await heardBack([job]);
        leasedWhileRunning.push(await leasedOf(queue));
      },
    });
    worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
    workers.push(worker);
    await nextEvents(worker, 'completed', 6);
    assert.deepEqual(leasedWhileRunning, [1, 1, 1, 1, 1, 1], 'only the running job leased');
    assert.equal(worker.held, 0);
    await worker.close();
  });
});
