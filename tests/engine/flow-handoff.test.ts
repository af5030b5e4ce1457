/**
 * Flow control and the long-poll hand-off: reserves that wait on an empty queue
 * (so not throttled) take new jobs in the enqueue's commit (`WaiterRegistry.handOff`);
 * that lease must obey max_leased, the rate limit and the group limits like any
 * other. A waiter a limit still holds back takes nothing and waits on, throttled,
 * until what lifts the limit wakes it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import type { LeasedJob } from '../../src/engine/types.ts';
import { job, type TestEngine, until, withEngine, withQueues } from '../helpers/engine.ts';

const hangGuard = { timeout: 120_000 };

async function queueInfo(t: TestEngine, queue: string) {
  const info = (await t.engine.listQueues()).find((q) => q.name === queue);
  assert.ok(info, `queue ${queue} is listed`);
  return info;
}

/** `count` reserves of one job each, long-polling on `queue`; `got()` lists what each received so far. */
function waiters(engine: Engine, queue: string, count: number) {
  const got: (LeasedJob[] | undefined)[] = Array.from({ length: count }, () => undefined);
  const controller = new AbortController();
  const calls = got.map((_, i) =>
    engine
      .reserve({ queues: [queue], waitMs: 600_000, workerId: `w${i}` }, controller.signal)
      .then((jobs) => {
        got[i] = jobs;
      }),
  );
  return {
    leased: () => got.filter((jobs) => jobs !== undefined).flat(),
    stop: async () => {
      controller.abort();
      await Promise.all(calls);
    },
  };
}

test(
  'hand-off and max_leased: waiters on an empty queue take no more new jobs than the limit allows',
  hangGuard,
  async () => {
    await withEngine({ options: withQueues({ q: { maxLeased: 2 } }) }, async (t) => {
      const { engine } = t;
      const w = waiters(engine, 'q', 4);
      await until(engine, () => engine.waitingReserves === 4);
      assert.equal((await queueInfo(t, 'q')).throttledWorkers, 0, 'nothing ready: they wait, not throttled');
      // One batch of 4 ready jobs: 4 waiters are claimed, the limit lets 2 lease.
      await engine.enqueueBatch(Array.from({ length: 4 }, () => job('q')));
      await until(engine, () => w.leased().length === 2 && engine.waitingReserves === 2);
      let info = await queueInfo(t, 'q');
      assert.equal(info.counts.leased, 2, 'the hand-off leased up to max_leased, not past it');
      assert.equal(info.counts.ready, 2);
      assert.equal(info.throttledWorkers, 2, 'the two held back wait again, throttled');
      // An ended lease lifts the limit for one of them.
      const [first] = w.leased();
      await engine.ack({ jobId: first!.id, attempt: first!.attempt });
      await until(engine, () => w.leased().length === 3);
      info = await queueInfo(t, 'q');
      assert.equal(info.counts.leased, 2);
      assert.equal(info.throttledWorkers, 1);
      await w.stop();
    });
  },
);

test('hand-off and the rate limit: new jobs go to waiters only as tokens allow', hangGuard, async () => {
  const rateLimit = { leases: 1, periodMs: 1000, burst: 1 };
  await withEngine({ options: withQueues({ q: { rateLimit } }) }, async (t) => {
    const { engine, clock } = t;
    const w = waiters(engine, 'q', 3);
    await until(engine, () => engine.waitingReserves === 3);
    await engine.enqueueBatch(Array.from({ length: 3 }, () => job('q')));
    await until(engine, () => w.leased().length === 1 && engine.waitingReserves === 2);
    assert.equal((await queueInfo(t, 'q')).counts.leased, 1, 'burst 1: one lease, the hand-off took no more');
    assert.equal((await queueInfo(t, 'q')).throttledWorkers, 2);
    clock.advance(999);
    await until(engine, () => engine.waitingReserves === 2);
    assert.equal(w.leased().length, 1, 'no token before 1 s');
    clock.advance(1);
    await until(engine, () => w.leased().length === 2);
    assert.equal((await queueInfo(t, 'q')).counts.leased, 2);
    await w.stop();
  });
});

test(
  'hand-off and group_max_leased: a second job of a busy group is not handed off; another group is',
  hangGuard,
  async () => {
    await withEngine({ options: withQueues({ q: { groupMaxLeased: 1 } }) }, async (t) => {
      const { engine } = t;
      const w = waiters(engine, 'q', 2);
      await until(engine, () => engine.waitingReserves === 2);
      await engine.enqueueBatch([job('q', { group: 'acme' }), job('q', { group: 'acme' })]);
      await until(engine, () => w.leased().length === 1 && engine.waitingReserves === 1);
      assert.equal((await queueInfo(t, 'q')).counts.leased, 1, 'one of acme at a time');
      assert.equal((await queueInfo(t, 'q')).throttledWorkers, 1);
      await engine.enqueue(job('q', { group: 'globex' }));
      await until(engine, () => w.leased().length === 2);
      assert.deepEqual(
        w
          .leased()
          .map((leased) => leased.group)
          .sort(),
        ['acme', 'globex'],
      );
      await w.stop();
    });
  },
);
