/**
 * Reserve: the order jobs are handed out in, several queues, paused queues,
 * lease length, and long-polling (wake-up, time-out, abort, limits).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
import type { JobEvent, LeasedJob } from '../../src/engine/types.ts';
import type { CommitStats as BatchStats } from '../../src/store/store.ts';
import { barrier, expectCode, job, until, withEngine, withQueues } from '../helpers/engine.ts';

/** Guards against a hang when a wake-up is lost: a failure, not a timing assumption. */
const hangGuard = { timeout: 120_000 };

const idsOf = (jobs: LeasedJob[]) => jobs.map((j) => j.id);

/** Tracks whether a promise has settled yet. */
function track<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  return { promise, settled: () => settled };
}

test('order: priority high to low, then due time, then enqueue order', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const id = async (extra: Parameters<typeof job>[1]) => (await engine.enqueue(job('q', extra))).jobId;
    // t = 0
    const a = await id({ priority: 0 });
    const b = await id({ priority: 5 });
    const f = await id({ priority: 0, delayMs: 5 }); // due at t = 5
    clock.advance(1); // t = 1
    const c = await id({ priority: 5 });
    const e = await id({ priority: 0, runAtMs: clock.nowMs() - 60_000 }); // past: due now (t = 1)
    const h = await id({ priority: 0, runAtMs: clock.nowMs() - 1 });
    clock.advance(1); // t = 2
    const g = await id({ priority: 0 });
    const top = await id({ priority: 9 });
    clock.advance(8); // t = 10: f is promoted, due at 5
    await engine.runMaintenance();

    const expected = [top, b, c, a, e, h, g, f];
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 100 });
    assert.deepEqual(idsOf(leased), expected);
    assert.deepEqual(
      leased.map((j) => j.runAtMs - clock.nowMs()),
      [-8, -10, -9, -10, -9, -9, -8, -5],
    );
  });
});

test('order: one job at a time follows priority, then due time, then enqueue order', async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const priorities = [3, 1, 3, 0, 9, 1, 3];
    const enqueued: { id: string; priority: number; index: number }[] = [];
    for (let round = 0; round < 2; round++) {
      const results = await engine.enqueueBatch(priorities.map((priority) => job('q', { priority })));
      results.forEach((r, i) => {
        enqueued.push({ id: r.ok ? r.jobId : '', priority: priorities[i]!, index: enqueued.length });
      });
      clock.advance(1); // the second round is due one millisecond later
    }
    const expected = [...enqueued]
      .sort((x, y) => y.priority - x.priority || x.index - y.index)
      .map((x) => x.id);
    const got: string[] = [];
    for (;;) {
      const [next] = await engine.reserve({ queues: ['q'] });
      if (!next) break;
      got.push(next.id);
    }
    assert.deepEqual(got, expected);
  });
});

test('several queues: taken from in listed order, maxJobs spanning queues', async () => {
  await withEngine({}, async ({ engine }) => {
    const fill = async (queue: string, n: number) =>
      (await engine.enqueueBatch(Array.from({ length: n }, () => job(queue)))).map((r) =>
        r.ok ? r.jobId : '',
      );
    const q1 = await fill('q1', 2);
    const q2 = await fill('q2', 3);
    const q3 = await fill('q3', 1);
    const first = await engine.reserve({ queues: ['q2', 'nowhere', 'q1', 'q2', 'q3'], maxJobs: 4 });
    assert.deepEqual(idsOf(first), [...q2, q1[0]]);
    const second = await engine.reserve({ queues: ['q3', 'q1'], maxJobs: 10 });
    assert.deepEqual(idsOf(second), [q3[0], q1[1]]);
    assert.deepEqual(await engine.reserve({ queues: ['q1', 'q2', 'q3'], maxJobs: 10 }), []);
  });
});

test('maxJobs: 0 means 1; above limits.maxReserveJobs, or not a positive integer, is invalid_argument', async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.enqueueBatch([job('mj'), job('mj')]);
    assert.equal((await engine.reserve({ queues: ['mj'], maxJobs: 0 })).length, 1);
    const limit = defaultEngineLimits.maxReserveJobs;
    for (const maxJobs of [limit + 1, -1, 1.5]) {
      await expectCode(engine.reserve({ queues: ['mj'], maxJobs }), 'invalid_argument');
    }
    assert.equal((await engine.reserve({ queues: ['mj'], maxJobs: limit })).length, 1);
  });
});

test('a leased job carries what a worker needs', async () => {
  await withEngine({ options: withQueues({ q: { maxAttempts: 3 } }) }, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(
      job('q', { metadata: { a: 'b' }, idempotencyKey: 'k', contentType: 'text/plain' }),
    );
    const [leased] = await engine.reserve({ queues: ['q'], leaseMs: 5000, workerId: 'w-1' });
    assert.ok(leased);
    assert.equal(leased.id, jobId);
    assert.equal(leased.attempt, 1);
    assert.equal(leased.maxAttempts, 3);
    assert.equal(leased.leaseDeadlineMs, clock.nowMs() + 5000);
    assert.equal(leased.payload.toString(), 'x');
    assert.equal(leased.contentType, 'text/plain');
    assert.deepEqual(leased.metadata, { a: 'b' });
    assert.equal(leased.idempotencyKey, 'k');
    assert.equal(leased.lastError, null);
    const info = await engine.getJob(jobId);
    assert.equal(info.state, 'leased');
    assert.equal(info.workerId, 'w-1');
    assert.equal(info.leasedAtMs, clock.nowMs());
    assert.equal(info.leaseDeadlineMs, clock.nowMs() + 5000);
  });
});

test("lease: the requested length is clamped to the queue's maxLeaseMs; default is the queue's", async () => {
  const options = withQueues({ q: { defaultLeaseMs: 5000, maxLeaseMs: 10_000 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    await engine.enqueueBatch([job('q'), job('q'), job('q'), job('other')]);
    const now = clock.nowMs();
    const [byDefault] = await engine.reserve({ queues: ['q'] });
    const [long] = await engine.reserve({ queues: ['q'], leaseMs: 3_600_000 });
    const [short] = await engine.reserve({ queues: ['q'], leaseMs: 2000 });
    const [elsewhere] = await engine.reserve({ queues: ['other'], leaseMs: 48 * 3_600_000 });
    assert.equal(byDefault?.leaseDeadlineMs, now + 5000);
    assert.equal(long?.leaseDeadlineMs, now + 10_000);
    assert.equal(short?.leaseDeadlineMs, now + 2000);
    assert.equal(elsewhere?.leaseDeadlineMs, now + 12 * 3_600_000, 'the default maximum is 12 h');
  });
});

test('paused queues hand out nothing but accept enqueues; resume hands out again', async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.enqueue(job('a'));
    await engine.pauseQueue('a');
    const { jobId } = await engine.enqueue(job('a'));
    const { jobId: other } = await engine.enqueue(job('b'));
    assert.deepEqual(idsOf(await engine.reserve({ queues: ['a', 'b'], maxJobs: 5 })), [other]);
    const a = (await engine.listQueues()).find((q) => q.name === 'a');
    assert.equal(a?.paused, true);
    assert.equal(a?.counts.ready, 2);
    await engine.resumeQueue('a');
    const leased = await engine.reserve({ queues: ['a'], maxJobs: 5 });
    assert.equal(leased.length, 2);
    assert.equal(leased[1]?.id, jobId);
    assert.equal((await engine.listQueues()).find((q) => q.name === 'a')?.paused, false);
  });
});

test('pausing a queue nobody used is not_found and creates nothing, unless allowMissing creates it paused', async () => {
  await withEngine({}, async ({ engine }) => {
    await expectCode(engine.pauseQueue('later'), 'not_found');
    await expectCode(engine.resumeQueue('later'), 'not_found');
    assert.deepEqual(await engine.listQueues(), []);
    await engine.pauseQueue('later', undefined, { allowMissing: true });
    assert.deepEqual(
      (await engine.listQueues()).map((q) => [q.name, q.paused]),
      [['later', true]],
    );
    await engine.enqueue(job('later'));
    assert.deepEqual(await engine.reserve({ queues: ['later'] }), []);
    await expectCode(engine.pauseQueue('bad name'), 'invalid_argument');
  });
});

test('pause on a strict server refuses undeclared queues with not_found', async () => {
  await withEngine({ options: withQueues({ known: {} }, { strictQueues: true }) }, async ({ engine }) => {
    await expectCode(engine.pauseQueue('unknown'), 'not_found');
    await expectCode(engine.pauseQueue('unknown', undefined, { allowMissing: true }), 'not_found');
    await engine.pauseQueue('known');
  });
});

test('long-poll: a waiting reserve is woken by an enqueue committed later', hangGuard, async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.enqueue(job('q')); // the queue exists and has been drained
    await engine.reserve({ queues: ['q'] });
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 });
    await until(engine, () => engine.waitingReserves === 1);
    assert.equal((await engine.listQueues())[0]?.waitingWorkers, 1);
    const { jobId } = await engine.enqueue(job('q'));
    const [got] = await waiting;
    assert.equal(got?.id, jobId);
    assert.equal(engine.waitingReserves, 0);
    assert.equal((await engine.getJob(jobId)).state, 'leased');
  });
});

test(
  'long-poll: a waiting reserve takes the new job in the commit that made it ready, one commit for both',
  hangGuard,
  async () => {
    const batches: BatchStats[] = [];
    await withEngine({ deps: { onBatch: (stats) => batches.push(stats) } }, async ({ engine }) => {
      await engine.pauseQueue('q', undefined, { allowMissing: true });
      await engine.resumeQueue('q');
      const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000, maxJobs: 2 });
      await until(engine, () => engine.waitingReserves === 1);
      batches.length = 0;
      const enqueued = await engine.enqueueBatch([job('q'), job('q'), job('q')]);
      assert.deepEqual(
        idsOf(await waiting),
        enqueued.slice(0, 2).map((r) => (r.ok ? r.jobId : '')),
      );
      // The enqueue and the waiter's lease: two operations, one transaction, one fsync.
      assert.deepEqual(
        batches.map((b) => [b.operations, b.ok]),
        [[2, true]],
      );
      assert.equal((await engine.listQueues())[0]?.counts.leased, 2);
      assert.equal((await engine.listQueues())[0]?.counts.ready, 1);
    });
  },
);

test('long-poll: a reserve and an enqueue in the same batch, either order, meet', hangGuard, async () => {
  await withEngine({}, async ({ engine }) => {
    // Reserve first, on a queue that does not exist yet.
    const waiting = engine.reserve({ queues: ['fresh'], waitMs: 30_000 });
    const enqueued = engine.enqueue(job('fresh'));
    const [got] = await waiting;
    assert.equal(got?.id, (await enqueued).jobId);
    // Enqueue first, on another new queue, then a waiting reserve in the same batch.
    const enqueued2 = engine.enqueue(job('fresh2'));
    const waiting2 = engine.reserve({ queues: ['fresh2'], waitMs: 30_000 });
    const [got2] = await waiting2;
    assert.equal(got2?.id, (await enqueued2).jobId);
    assert.equal(engine.waitingReserves, 0);
  });
});

test('long-poll: one job wakes one waiter; the others keep waiting', hangGuard, async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.pauseQueue('q', undefined, { allowMissing: true });
    await engine.resumeQueue('q');
    const first = track(engine.reserve({ queues: ['q'], waitMs: 30_000, workerId: 'first' }));
    const second = track(engine.reserve({ queues: ['q'], waitMs: 30_000, workerId: 'second' }));
    await until(engine, () => engine.waitingReserves === 2);
    const { jobId } = await engine.enqueue(job('q'));
    const [got] = await first.promise;
    assert.equal(got?.id, jobId, 'waiters are served first come, first served');
    await barrier(engine);
    assert.equal(second.settled(), false);
    assert.equal(engine.waitingReserves, 1);
    const { jobId: next } = await engine.enqueue(job('q'));
    assert.equal((await second.promise)[0]?.id, next);
  });
});

test(
  'long-poll: jobs that become ready together wake as many waiters as they can serve',
  hangGuard,
  async () => {
    await withEngine({}, async ({ engine, clock }) => {
      // Resume, promotion and requeue each report several jobs in one wake-up.
      await engine.pauseQueue('q', undefined, { allowMissing: true });
      await engine.enqueueBatch([job('q'), job('q')]);
      await engine.enqueueBatch([job('q', { delayMs: 1000 }), job('q', { delayMs: 1000 })]);
      const wait = (workerId: string) => track(engine.reserve({ queues: ['q'], waitMs: 30_000, workerId }));
      const [a, b, c] = [wait('a'), wait('b'), wait('c')];
      await until(engine, () => engine.waitingReserves === 3);
      await engine.resumeQueue('q');
      assert.equal((await a.promise).length, 1);
      assert.equal((await b.promise).length, 1);
      await until(engine, () => engine.waitingReserves === 1);
      assert.equal(c.settled(), false);
      const d = wait('d');
      await until(engine, () => engine.waitingReserves === 2);
      clock.advance(1000);
      assert.equal((await c.promise).length, 1);
      assert.equal((await d.promise).length, 1);
    });
  },
);

test('long-poll: a waiter with maxJobs takes several jobs of one batch', hangGuard, async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.pauseQueue('q', undefined, { allowMissing: true });
    await engine.resumeQueue('q');
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000, maxJobs: 3 });
    await until(engine, () => engine.waitingReserves === 1);
    await engine.enqueueBatch([job('q'), job('q'), job('q'), job('q'), job('q')]);
    assert.equal((await waiting).length, 3);
    assert.equal((await engine.listQueues())[0]?.counts.ready, 2);
  });
});

test(
  'long-poll: times out with [] when the clock passes waitMs, capped at maxWaitMs',
  hangGuard,
  async () => {
    await withEngine({}, async ({ engine, clock }) => {
      const waiting = track(engine.reserve({ queues: ['q'], waitMs: 5000 }));
      await until(engine, () => engine.waitingReserves === 1);
      clock.advance(4999);
      await barrier(engine);
      assert.equal(waiting.settled(), false);
      clock.advance(1);
      assert.deepEqual(await waiting.promise, []);
      assert.equal(engine.waitingReserves, 0);

      const capped = track(engine.reserve({ queues: ['q'], waitMs: 10 * 60_000 }));
      await until(engine, () => engine.waitingReserves === 1);
      clock.advance(defaultEngineLimits.maxWaitMs - 1);
      await barrier(engine);
      assert.equal(capped.settled(), false);
      clock.advance(1);
      assert.deepEqual(await capped.promise, []);
      assert.equal(engine.waitingReserves, 0);
    });
  },
);

test('long-poll: waitMs 0 returns at once', async () => {
  await withEngine({}, async ({ engine }) => {
    assert.deepEqual(await engine.reserve({ queues: ['q'], waitMs: 0 }), []);
    assert.equal(engine.waitingReserves, 0);
  });
});

test(
  'long-poll: an aborted signal returns [] at once, frees the waiter, leases nothing',
  hangGuard,
  async () => {
    await withEngine({}, async ({ engine }) => {
      const controller = new AbortController();
      const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 }, controller.signal);
      await until(engine, () => engine.waitingReserves === 1);
      controller.abort();
      assert.deepEqual(await waiting, []);
      assert.equal(engine.waitingReserves, 0);
      const { jobId } = await engine.enqueue(job('q'));
      await barrier(engine);
      assert.equal((await engine.getJob(jobId)).state, 'ready');
      assert.equal((await engine.getJob(jobId)).attempt, 0);

      // Already aborted: nothing is leased even though a job is ready.
      assert.deepEqual(await engine.reserve({ queues: ['q'], waitMs: 30_000 }, controller.signal), []);
      // Aborted while its operation waits for the writer: nothing is leased either.
      const late = new AbortController();
      const racing = engine.reserve({ queues: ['q'] }, late.signal);
      late.abort();
      assert.deepEqual(await racing, []);
      assert.equal((await engine.getJob(jobId)).state, 'ready');
      assert.equal(engine.waitingReserves, 0);
    });
  },
);

test(
  'long-poll: a waiter aborted after the commit that leased it a job gets []; the lease expires and the next waiter gets the job',
  hangGuard,
  async () => {
    const controller = new AbortController();
    // Events are reported after the commit, before its callers hear of it: aborting here
    // hits the moment between the commit that leased the job for `first` (a hand-off in
    // the enqueue's commit) and its delivery. A lease taken for a call that is gone expires.
    const onEvent = (event: JobEvent) => {
      if (event.kind === 'enqueued') controller.abort();
    };
    await withEngine({ deps: { onEvent } }, async ({ engine, clock }) => {
      await engine.pauseQueue('q', undefined, { allowMissing: true });
      await engine.resumeQueue('q');
      const first = engine.reserve(
        { queues: ['q'], waitMs: 30_000, workerId: 'first', leaseMs: 10_000 },
        controller.signal,
      );
      const second = engine.reserve({ queues: ['q'], waitMs: 30_000, workerId: 'second' });
      await until(engine, () => engine.waitingReserves === 2);
      const { jobId } = await engine.enqueue(job('q'));
      assert.ok(controller.signal.aborted);
      assert.deepEqual(await first, []);
      assert.equal((await engine.getJob(jobId)).workerId, 'first');
      assert.equal(engine.waitingReserves, 1);
      clock.advance(10_000);
      const [got] = await second;
      assert.equal(got?.id, jobId);
      assert.equal(got?.attempt, 2);
      assert.equal((await engine.getJob(jobId)).workerId, 'second');
      assert.equal(engine.waitingReserves, 0);
    });
  },
);

test('long-poll: more waiters than limits.maxWaiters is resource_exhausted', hangGuard, async () => {
  const options = { limits: { ...defaultEngineLimits, maxWaiters: 2 } };
  await withEngine({ options }, async ({ engine, clock }) => {
    const a = engine.reserve({ queues: ['q'], waitMs: 1000 });
    const b = engine.reserve({ queues: ['r'], waitMs: 1000 });
    await until(engine, () => engine.waitingReserves === 2);
    const error = await expectCode(engine.reserve({ queues: ['q'], waitMs: 1000 }), 'resource_exhausted');
    assert.match(error.message, /max_waiters/);
    // A reserve that does not wait is still served.
    assert.deepEqual(await engine.reserve({ queues: ['q'] }), []);
    clock.advance(1000);
    assert.deepEqual(await a, []);
    assert.deepEqual(await b, []);
    const c = engine.reserve({ queues: ['q'], waitMs: 1000 });
    await until(engine, () => engine.waitingReserves === 1);
    clock.advance(1000);
    assert.deepEqual(await c, []);
  });
});

test(
  'long-poll on a paused queue: enqueues do not hand out, resume wakes the waiter',
  hangGuard,
  async () => {
    await withEngine({}, async ({ engine }) => {
      await engine.pauseQueue('q', undefined, { allowMissing: true });
      const waiting = track(engine.reserve({ queues: ['q'], waitMs: 30_000 }));
      await until(engine, () => engine.waitingReserves === 1);
      const { jobId } = await engine.enqueue(job('q'));
      await until(engine, () => engine.waitingReserves === 1);
      assert.equal(waiting.settled(), false);
      assert.equal((await engine.getJob(jobId)).state, 'ready');
      await engine.resumeQueue('q');
      assert.deepEqual(idsOf(await waiting.promise), [jobId]);
    });
  },
);

test('long-poll: a scheduled job wakes the waiter when it becomes due', hangGuard, async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q', { delayMs: 5000 }));
    const waiting = track(engine.reserve({ queues: ['q'], waitMs: 30_000 }));
    await until(engine, () => engine.waitingReserves === 1);
    clock.advance(4999);
    await engine.runMaintenance();
    assert.equal(waiting.settled(), false);
    clock.advance(1);
    assert.deepEqual(idsOf(await waiting.promise), [jobId]);
  });
});

test('long-poll: an expired lease wakes a waiter, who gets the next attempt', hangGuard, async () => {
  await withEngine({}, async ({ engine, clock }) => {
    const { jobId } = await engine.enqueue(job('q'));
    const [lost] = await engine.reserve({ queues: ['q'], leaseMs: 10_000 });
    assert.equal(lost?.attempt, 1);
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 });
    await until(engine, () => engine.waitingReserves === 1);
    clock.advance(10_000);
    const [again] = await waiting;
    assert.equal(again?.id, jobId);
    assert.equal(again?.attempt, 2);
    assert.equal(again?.lastError, 'lease expired');
  });
});

test('long-poll: a nack with no delay wakes a waiter', hangGuard, async () => {
  await withEngine({}, async ({ engine }) => {
    await engine.enqueue(job('q'));
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.ok(leased);
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 });
    await until(engine, () => engine.waitingReserves === 1);
    await engine.nack({
      jobId: leased.id,
      attempt: 1,
      error: 'boom',
      directive: { kind: 'delay', delayMs: 0 },
    });
    const [again] = await waiting;
    assert.equal(again?.id, leased.id);
    assert.equal(again?.attempt, 2);
    assert.equal(again?.lastError, 'boom');
  });
});

test('reserve validates its request', async () => {
  await withEngine({}, async ({ engine }) => {
    const limits = engine.limits;
    await expectCode(engine.reserve({ queues: [] }), 'invalid_argument');
    await expectCode(
      engine.reserve({ queues: Array.from({ length: limits.maxReserveQueues + 1 }, (_, i) => `q${i}`) }),
      'invalid_argument',
    );
    await expectCode(engine.reserve({ queues: ['bad name'] }), 'invalid_argument');
    await expectCode(
      engine.reserve({ queues: ['q'], maxJobs: limits.maxReserveJobs + 1 }),
      'invalid_argument',
    );
    await expectCode(engine.reserve({ queues: ['q'], maxJobs: -1 }), 'invalid_argument');
    await expectCode(engine.reserve({ queues: ['q'], leaseMs: -5 }), 'invalid_argument');
    await expectCode(engine.reserve({ queues: ['q'], waitMs: -1 }), 'invalid_argument');
    await expectCode(engine.reserve({ queues: ['q'], waitMs: 1.5 }), 'invalid_argument');
    await expectCode(engine.reserve({ queues: ['q'], workerId: 'w'.repeat(257) }), 'invalid_argument');
  });
});
