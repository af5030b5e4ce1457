/**
 * Flow control, queue limits: max_leased (concurrency across every worker) and
 * the rate limit (a token bucket on the injected clock), with the throttled
 * long-poll that waits for a lease to end or a token to come due, and both
 * limits right after a restart with leases outstanding.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Engine } from '../../src/engine/engine.ts';
import { noRateLimit, type RateLimitSettings } from '../../src/engine/settings.ts';
import type { JobEvent, LeasedJob } from '../../src/engine/types.ts';
import { job, type TestEngine, until, withEngine, withQueues } from '../helpers/engine.ts';

const hangGuard = { timeout: 300_000 };
/** Fast steps: semantics, not durability, are under test where thousands of commits run. */
const scratch = { durability: 'relaxed' as const };

const rate = (leases: number, periodMs: number, burst = 0): RateLimitSettings => ({
  leases,
  periodMs,
  burst,
});

async function leasedNow(t: TestEngine, queue: string): Promise<number> {
  return (await t.engine.listQueues()).find((q) => q.name === queue)?.counts.leased ?? 0;
}

/**
 * `workers` loops of reserve(1) → ack on `queue`, each long-polling; they stop
 * when `stop()` is called (and their wait is aborted).
 */
function startWorkers(
  engine: Engine,
  queue: string,
  workers: number,
  onJob: (job: LeasedJob) => Promise<void> | void = () => {},
): { stop: () => Promise<void>; handled: () => number } {
  const controller = new AbortController();
  let handled = 0;
  const loops = Array.from({ length: workers }, async (_, w) => {
    while (!controller.signal.aborted) {
      const [leased] = await engine.reserve(
        { queues: [queue], waitMs: 3_600_000, workerId: `w${w}` },
        controller.signal,
      );
      if (leased === undefined) continue;
      await onJob(leased);
      await engine.ack({ jobId: leased.id, attempt: leased.attempt });
      handled++;
    }
  });
  return {
    handled: () => handled,
    stop: async () => {
      controller.abort();
      await Promise.all(loops);
    },
  };
}

test(
  'max_leased: never more than the limit leased, and a waiting reserve takes a slot as soon as a lease ends',
  hangGuard,
  async () => {
    await withEngine({ options: withQueues({ q: { maxLeased: 3 } }) }, async (t) => {
      const { engine } = t;
      await engine.enqueueBatch(Array.from({ length: 10 }, () => job('q')));
      const first = await engine.reserve({ queues: ['q'], maxJobs: 10 });
      assert.equal(first.length, 3, 'a reserve of 10 gets the 3 the limit allows');
      assert.deepEqual(
        await engine.reserve({ queues: ['q'] }),
        [],
        'at the limit a reserve without wait gets nothing',
      );

      const waiting = engine.reserve({ queues: ['q'], maxJobs: 5, waitMs: 60_000 });
      await until(engine, () => engine.waitingReserves === 1);
      const [info] = await engine.listQueues();
      assert.equal(info?.throttledWorkers, 1, 'ListQueues shows the reserve as throttled');
      assert.equal(info?.waitingWorkers, 1);
      await engine.ack({ jobId: first[0]!.id, attempt: 1 });
      const woken = await waiting;
      assert.equal(woken.length, 1, 'the ended lease frees exactly one slot');
      assert.equal(await leasedNow(t, 'q'), 3);
      assert.equal((await engine.listQueues())[0]?.throttledWorkers, 0);

      // A nack (retry) and a lease expiry end leases too.
      const again = engine.reserve({ queues: ['q'], waitMs: 60_000 });
      await until(engine, () => engine.waitingReserves === 1);
      await engine.nack({
        jobId: first[1]!.id,
        attempt: 1,
        error: 'x',
        directive: { kind: 'delay', delayMs: 0 },
      });
      assert.equal((await again).length, 1);
      const afterExpiry = engine.reserve({ queues: ['q'], waitMs: 3_600_000 });
      await until(engine, () => engine.waitingReserves === 1);
      t.clock.advance(31_000); // every lease (default 30 s) expires
      await engine.runMaintenance();
      assert.equal((await afterExpiry).length, 1);
      assert.ok((await leasedNow(t, 'q')) <= 3);
    });
  },
);

test(
  'max_leased = 3 with 20 workers: sampled at every lease never above 3, and 3 held while work waits',
  hangGuard,
  async () => {
    const samples: number[] = [];
    let t!: TestEngine;
    const onEvent = (event: JobEvent) => {
      // Read in the commit's hook (the store answers at once); delivered a microtask later.
      if (event.kind === 'reserved') void leasedNow(t, 'q').then((n) => samples.push(n));
    };
    await withEngine(
      { ...scratch, options: withQueues({ q: { maxLeased: 3 } }), deps: { onEvent } },
      async (opened) => {
        t = opened;
        const { engine } = t;
        const jobs = 120;
        await engine.enqueueBatch(Array.from({ length: jobs }, () => job('q')));
        // Workers hold their job until the test lets them go, so the state between leases can be checked.
        const held: (() => void)[] = [];
        const workers = startWorkers(
          engine,
          'q',
          20,
          () => new Promise<void>((release) => held.push(release)),
        );
        for (let done = 0; done < jobs; done++) {
          const waitingWork = jobs - done > 3;
          // Every lease the limit allows is taken before anything else happens: 3 held, 17 throttled.
          await until(
            engine,
            () => held.length === Math.min(3, jobs - done) && engine.waitingReserves === 20 - held.length,
            200,
          );
          assert.equal(await leasedNow(t, 'q'), held.length);
          if (waitingWork) assert.equal((await engine.listQueues())[0]?.throttledWorkers, 17);
          held.shift()!();
        }
        await until(engine, () => workers.handled() === jobs, 200);
        await workers.stop();
        assert.equal(samples.length > 0, true);
        assert.ok(Math.max(...samples) <= 3, `leased at a lease: ${Math.max(...samples)}`);
        assert.equal(Math.max(...samples), 3);
      },
    );
  },
);

/**
 * Drains a queue with `limit` with 20 workers for `seconds` of fake time, one
 * millisecond at a time; returns the leases made in each whole second.
 */
async function leasesPerSecond(limit: RateLimitSettings, seconds: number): Promise<number[]> {
  const counts = new Map<number, number>();
  let t!: TestEngine;
  const onEvent = (event: JobEvent) => {
    if (event.kind !== 'reserved') return;
    const second = Math.floor(t.clock.nowMs() / 1000);
    counts.set(second, (counts.get(second) ?? 0) + event.count);
  };
  const workers = 20;
  let perSecond: number[] = [];
  await withEngine(
    { ...scratch, options: withQueues({ q: { rateLimit: limit } }), deps: { onEvent } },
    async (opened) => {
      t = opened;
      const { engine, clock } = t;
      for (let made = 0; made < limit.leases * seconds + limit.burst; made += 1000) {
        await engine.enqueueBatch(Array.from({ length: 1000 }, () => job('q')));
      }
      const startMs = clock.nowMs();
      const running = startWorkers(engine, 'q', workers);
      const quiet = () => engine.waitingReserves === workers;
      await until(engine, quiet, 200);
      for (let ms = 1; ms < seconds * 1000; ms++) {
        clock.advance(1);
        // Whatever the token made possible happens before time moves on.
        await until(engine, quiet, 200);
      }
      await running.stop();
      perSecond = Array.from({ length: seconds }, (_, s) => counts.get(Math.floor(startMs / 1000) + s) ?? 0);
    },
  );
  return perSecond;
}

test(
  'rate limit 200 leases/s, burst 1, 20 workers, 5 s of injected time: exactly 200 in every second',
  hangGuard,
  async () => {
    assert.deepEqual(await leasesPerSecond(rate(200, 1000, 1), 5), [200, 200, 200, 200, 200]);
  },
);

test(
  'rate limit 200 leases/s with burst 50: 50 at once, then one every 5 ms (249, then 200 a second)',
  hangGuard,
  async () => {
    assert.deepEqual(await leasesPerSecond(rate(200, 1000, 50), 3), [249, 200, 200]);
  },
);

test(
  'rate limit: a reserve with no token waits for the token timer, not a busy loop',
  hangGuard,
  async () => {
    let commits = 0;
    const deps = { onBatch: () => commits++ };
    await withEngine(
      { options: withQueues({ q: { rateLimit: rate(2, 1000, 1) } }), deps },
      async ({ engine, clock }) => {
        await engine.enqueueBatch(Array.from({ length: 5 }, () => job('q')));
        assert.equal((await engine.reserve({ queues: ['q'], maxJobs: 5 })).length, 1, 'burst 1: one at once');
        const waiting = engine.reserve({ queues: ['q'], maxJobs: 5, waitMs: 60_000 });
        await until(engine, () => engine.waitingReserves === 1);
        assert.equal((await engine.listQueues())[0]?.throttledWorkers, 1);
        // The engine's first maintenance pass is due at start; let it run before counting.
        clock.advance(0);
        for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
        // Nothing is tried while no token is due: no commit over 499 ms of fake time.
        const before = commits;
        clock.advance(499);
        for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
        assert.equal(commits, before, 'no lease was tried before the token was due');
        assert.equal(engine.waitingReserves, 1);
        clock.advance(1); // t = 500 ms: the next token
        assert.equal((await waiting).length, 1);
      },
    );
  },
);

test(
  'limits hold right after a restart with leases outstanding (max_leased, rate bucket)',
  hangGuard,
  async () => {
    const options = withQueues({ q: { maxLeased: 2 }, r: { rateLimit: rate(1, 60_000, 2) } });
    await withEngine({ options }, async (opened) => {
      let t = opened;
      await t.engine.enqueueBatch(Array.from({ length: 5 }, () => job('q')));
      await t.engine.enqueueBatch(Array.from({ length: 5 }, () => job('r')));
      const held = await t.engine.reserve({ queues: ['q'], maxJobs: 5 });
      assert.equal(held.length, 2);
      assert.equal((await t.engine.reserve({ queues: ['r'], maxJobs: 5 })).length, 2, 'the burst of 2');
      t = await t.reopen();
      assert.deepEqual(
        await t.engine.reserve({ queues: ['q'], maxJobs: 5 }),
        [],
        'the 2 leases from before count',
      );
      assert.deepEqual(
        await t.engine.reserve({ queues: ['r'], maxJobs: 5 }),
        [],
        'the spent tokens stay spent',
      );
      await t.engine.ack({ jobId: held[0]!.id, attempt: 1 });
      assert.equal(
        (await t.engine.reserve({ queues: ['q'], maxJobs: 5 })).length,
        1,
        'an ended lease frees a slot',
      );
      t.clock.advance(59_999);
      assert.deepEqual(await t.engine.reserve({ queues: ['r'], maxJobs: 5 }), [], 'one token per 60 s');
      t.clock.advance(1);
      assert.equal((await t.engine.reserve({ queues: ['r'], maxJobs: 5 })).length, 1);
      return t;
    });
  },
);

test('no limits configured: leases go exactly as before (queue order, no throttled waiters)', async () => {
  await withEngine({}, async ({ engine }) => {
    const ids = [];
    for (const priority of [1, 5, 3]) ids.push((await engine.enqueue(job('q', { priority }))).jobId);
    const got = await engine.reserve({ queues: ['q'], maxJobs: 10 });
    assert.deepEqual(
      got.map((j) => j.id),
      [ids[1], ids[2], ids[0]],
    );
    assert.deepEqual(
      got.map((j) => j.group),
      [null, null, null],
    );
    assert.equal((await engine.listQueues())[0]?.throttledWorkers, 0);
    assert.equal((await engine.listQueues())[0]?.readyGroups, 0);
    assert.deepEqual((await engine.listQueues())[0]?.settings.rateLimit, noRateLimit);
  });
});
