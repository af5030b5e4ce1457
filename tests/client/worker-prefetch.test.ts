/**
 * A Worker's `prefetch`: jobs leased beyond `concurrency` wait in the worker
 * until a slot frees. Their leases are extended like running ones (checked
 * with the injected clock past the first lease's end), a cancel or a hard
 * timeout drops a held job unstarted, credit for held jobs is granted in
 * chunks of half the prefetch, and `close()` gives every held job back to the queue at once
 * (a give-back: no attempt counted).
 *
 * They run on both stores (tests/store/postgres-suites.test.ts imports them on
 * PostgreSQL), so they wait for the server's answers, never for a number of event-loop
 * turns: PostgreSQL answers over the network, after clock steps an in-process SQLite
 * store would have answered before.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SeppClient, type Worker, type WorkerJob, type WorkerOptions } from '@sepp-queue/client';
import { FakeClock } from '../../src/engine/clock.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { deferred, heardBack, nextEvents, until } from './helpers.ts';

const leaseMs = 30_000;

/** Enqueues `count` jobs of type `j` on `queue`; returns their ids in order. */
async function enqueueJobs(client: SeppClient, queue: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await client.enqueueJson(queue, 'j', { i })).id);
  return ids;
}

for (const transport of ['stream', 'unary'] as const) {
  describe(`Worker: prefetch (${transport})`, () => {
    let t: TestServer;
    let client: SeppClient;
    const clock = new FakeClock(Date.UTC(2026, 11, 6));
    const workers: Worker[] = [];
    /** Every handler's gate, opened at the end so a failed test cannot hold the close. */
    const gates: (() => void)[] = [];

    before(async () => {
      t = await startTestServer({ clock });
      client = SeppClient.connect(t.address, { transport });
    });
    after(async () => {
      for (const open of gates) open();
      await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
      await client.close();
      await t.dispose();
    });

    /** A worker of one slot whose handler records each job it starts and waits for `gate`. */
    const start = (queue: string, options: Partial<WorkerOptions> = {}) => {
      const started: string[] = [];
      const gate = deferred();
      gates.push(() => gate.resolve());
      const worker = client.worker({
        clock,
        leaseMs,
        queues: [queue],
        concurrency: 1,
        prefetch: 2,
        fallback: async (job) => {
          started.push(job.id);
          await gate.promise;
        },
        ...options,
      });
      worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
      workers.push(worker);
      return { worker, started, gate };
    };

    /**
     * Waits as `until` does for what a server timer does once the clock moved, firing each
     * round the timers due at the clock's time. On PostgreSQL the server answers over the
     * network: a write still in flight as the clock moved sets its next timer (a maintenance
     * pass, a token) after the step, due at once, which the fake clock fires only at its next
     * advance — here one of 0 ms, as a real clock would at once.
     */
    const untilNow = (check: () => boolean | Promise<boolean>, what: string) =>
      until(() => {
        clock.advance(0);
        return check();
      }, what);

    const countsOf = async (queue: string) =>
      (await client.listQueues()).find((q) => q.name === queue)?.counts;

    test('holds up to `prefetch` leased jobs beyond its slots and runs them as slots free', async () => {
      const queue = `prefetch-hold-${transport}`;
      const ids = await enqueueJobs(client, queue, 5);
      const { worker, started, gate } = start(queue);
      await until(() => worker.running === 1 && worker.held === 2, 'one running and two held');
      assert.deepEqual(started, [ids[0]], 'held jobs have not started');
      const counts = await countsOf(queue);
      assert.equal(counts?.leased, 3, 'one slot + two held are leased');
      assert.equal(counts?.ready, 2, 'no more than that');
      const done = nextEvents(worker, 'completed', 5);
      gate.resolve();
      await done;
      assert.deepEqual(started, ids, 'every job ran, in the queue order');
      assert.equal(worker.held, 0);
    });

    test('a held job’s lease is extended while it waits, so it starts on a live lease', async () => {
      const queue = `prefetch-extend-${transport}`;
      const first = await client.enqueueJson(queue, 'j', {});
      const second = await client.enqueueJson(queue, 'j', {});
      const { worker, gate } = start(queue, { prefetch: 1 });
      await until(() => worker.running === 1 && worker.held === 1, 'one running, one held');
      let heldExtends = 0;
      worker.on('extended', (job) => {
        if (job.id === second.id) heldExtends++;
      });
      // Past the first lease's end, a third of a lease at a time (the lease keeper's period).
      for (let i = 1; i <= 4; i++) {
        clock.advance(leaseMs / 3);
        await until(() => heldExtends >= i, `the held lease's extend ${i}`);
      }
      const held = await client.getJob(second.id);
      assert.equal(held.state, 'leased');
      assert.ok((held.leaseDeadline?.getTime() ?? 0) > clock.nowMs(), 'the held lease is still live');
      const done = nextEvents(worker, 'completed', 2);
      gate.resolve();
      await done;
      for (const id of [first.id, second.id]) {
        const job = await client.getJob(id);
        assert.equal(job.state, 'completed');
        assert.equal(job.attempt, 1, 'no lease ran out');
      }
    });

    // On the Work stream a slot frees as its handler returns, in the same turn of the event loop,
    // so the held job's turn comes before any extend can be answered. (On unary calls the slot
    // frees once the ack is answered, by when the extend is answered too.)
    if (transport === 'stream') {
      test('a held job whose lease ran out unextended is dropped, not started', async () => {
        const queue = `prefetch-expired-${transport}`;
        await client.enqueueJson(queue, 'j', {});
        const second = await client.enqueueJson(queue, 'j', {});
        const starts: string[] = [];
        const { worker, gate } = start(queue, { prefetch: 1 });
        worker.on('started', (job) => starts.push(`${job.id}@${job.attempt}`));
        const lost: string[] = [];
        worker.on('leaseLost', (job, error) => lost.push(`${job.id}@${job.attempt} ${error.code}`));
        await until(() => worker.running === 1 && worker.held === 1, 'one running, one held');
        // A whole lease in one step: the extends are sent, but unanswered when the slot frees.
        clock.advance(leaseMs);
        gate.resolve();
        await until(() => worker.held === 0, 'the held job taken out');
        assert.ok(!starts.includes(`${second.id}@1`), 'the held job did not start on its ended lease');
        assert.deepEqual(lost, [`${second.id}@1 lease_lost`], 'its leaseLost event, as for a running job');
        // Its lease ends (an extend still in flight may have moved it one lease on): the server retries it.
        clock.advance(leaseMs + 1);
        await untilNow(async () => (await client.getJob(second.id)).state === 'completed', 'the retry run');
        assert.equal((await client.getJob(second.id)).attempt, 2);
        assert.ok(starts.includes(`${second.id}@2`));
      });
    }

    test('pausing the queue leaves held jobs to start; it stops only new leases', async () => {
      const queue = `prefetch-pause-${transport}`;
      const ids = await enqueueJobs(client, queue, 4);
      const { worker, started, gate } = start(queue);
      await until(() => worker.running === 1 && worker.held === 2, 'one running and two held');
      await client.queues.pause(queue);
      const done = nextEvents(worker, 'completed', 3);
      gate.resolve();
      await done;
      assert.deepEqual(started, ids.slice(0, 3), 'the held jobs ran after the pause');
      assert.equal((await client.getJob(ids[3]!)).state, 'ready', 'the paused queue leased nothing more');
      await client.queues.resume(queue);
      await until(() => started.length === 4, 'the last job once resumed');
    });

    test('a child job of the queue can be held behind the parent that waits for it', async () => {
      const queue = `prefetch-child-${transport}`;
      const ran: string[] = [];
      let childId = '';
      const parentWaits = deferred();
      gates.push(() => parentWaits.resolve());
      const { worker } = start(queue, {
        prefetch: 1,
        handlers: {
          // Stands for `await client.waitFor(child.id)`, which would wait for good.
          parent: async () => {
            childId = (await client.enqueueJson(queue, 'child', {})).id;
            await parentWaits.promise;
          },
          child: () => void ran.push('held one'),
        },
      });
      await client.enqueueJson(queue, 'parent', {});
      await until(() => worker.held === 1, 'the child held behind its parent');
      const other = client.worker({
        clock,
        leaseMs,
        queues: [queue],
        handlers: { child: () => void ran.push('other worker') },
      });
      workers.push(other);
      let childExtends = 0;
      worker.on('extended', (job) => {
        if (job.id === childId) childExtends++;
      });
      // A lease and more passes: the held child's lease is extended, and the idle worker gets nothing.
      for (let i = 1; i <= 4; i++) {
        clock.advance(leaseMs / 3);
        await until(() => childExtends >= i, `the held child's extend ${i}`);
      }
      assert.equal((await client.getJob(childId)).state, 'leased');
      assert.deepEqual(ran, [], 'the child waits behind its parent');
      parentWaits.resolve();
      await until(() => ran.length === 1, 'the child once its parent ended');
      assert.deepEqual(ran, ['held one']);
    });

    test('a held job counts against group_max_leased: an idle worker gets none of the group', async () => {
      const queue = `prefetch-group-${transport}`;
      await client.enqueueJson(queue, 'j', {});
      const held = await client.enqueueJson(queue, 'j', {}, { group: 'g' });
      const waiting = await client.enqueueJson(queue, 'j', {}, { group: 'g' });
      await client.queues.setSettings(queue, { group_max_leased: 1 });
      const a = start(queue, { prefetch: 1 });
      await until(() => a.worker.running === 1 && a.worker.held === 1, 'one running, one held');
      assert.equal((await client.getJob(held.id)).state, 'leased', 'the group’s one lease is the held job');
      let heldExtends = 0;
      a.worker.on('extended', (job) => {
        if (job.id === held.id) heldExtends++;
      });
      const b = start(queue, { prefetch: 0 });
      for (let i = 1; i <= 3; i++) {
        clock.advance(leaseMs / 3);
        await until(() => heldExtends >= i, `the held job's extend ${i}`);
      }
      assert.equal(b.worker.running, 0, 'the idle worker gets nothing');
      assert.equal((await client.getJob(waiting.id)).state, 'ready');
      a.gate.resolve();
      b.gate.resolve();
      await until(
        async () => (await client.getJob(waiting.id)).state === 'completed',
        'the group’s next job',
      );
    });

    test('a rate limit counts leases: held jobs can start faster than it', async () => {
      const queue = `prefetch-rate-${transport}`;
      await enqueueJobs(client, queue, 4);
      await client.queues.setSettings(queue, {
        rate_limit_leases: 1,
        rate_limit_period_ms: '1s',
        rate_limit_burst: 1,
      });
      const { worker, gate } = start(queue, { prefetch: 3 });
      const startedAtMs: number[] = [];
      worker.on('started', () => startedAtMs.push(clock.nowMs()));
      // One lease a second, held behind the running job. The clock moves once the limit holds the
      // worker's next reserve back: the server answers at its own pace (PostgreSQL: over the network).
      const leased = () => worker.running + worker.held;
      for (let n = 2; n <= 4; n++) {
        await until(
          async () => (await client.listQueues()).find((q) => q.name === queue)?.throttledWorkers === 1,
          `the reserve after lease ${n - 1} held back by the limit`,
        );
        await until(() => leased() === n - 1, `lease ${n - 1} at the worker`);
        assert.equal((await countsOf(queue))?.leased, n - 1, 'the limit held the leases to one a second');
        clock.advance(1000);
        await untilNow(() => leased() === n, `lease ${n}, a second later`);
      }
      gate.resolve();
      await until(() => startedAtMs.length === 4, 'every job started');
      const lastSecond = startedAtMs.filter((ms) => ms > clock.nowMs() - 1000);
      assert.ok(lastSecond.length >= 3, `${lastSecond.length} starts in the last second, the limit 1`);
    });

    test('a cancel drops a held job without running it', async () => {
      const queue = `prefetch-cancel-${transport}`;
      const first = await client.enqueueJson(queue, 'j', {});
      const second = await client.enqueueJson(queue, 'j', {});
      const { worker, started, gate } = start(queue, { prefetch: 1 });
      const cancelled: string[] = [];
      worker.on('cancelled', (job) => cancelled.push(job.id));
      await until(() => worker.held === 1, 'the second job held');
      await client.cancelJob(second.id);
      if (transport === 'unary') clock.advance(leaseMs / 3); // heard at the next extend
      await untilNow(async () => (await client.getJob(second.id)).state === 'cancelled', 'the cancel');
      assert.equal(worker.held, 0);
      const done = nextEvents(worker, 'completed');
      gate.resolve();
      await done;
      assert.deepEqual(started, [first.id], 'the cancelled job never started');
      assert.deepEqual(cancelled, [second.id], 'its cancelled event, as for a running job');
    });

    test('a held job past its hard timeout is dropped without running', async () => {
      const queue = `prefetch-timeout-${transport}`;
      const first = await client.enqueueJson(queue, 'j', {});
      const timeoutMs = 5000;
      const late = await client.enqueueJson(
        queue,
        'j',
        {},
        { executionTimeoutMs: timeoutMs, maxAttempts: 1 },
      );
      const { worker, started, gate } = start(queue, { prefetch: 1 });
      const timedOut: string[] = [];
      worker.on('timedOut', (job) => timedOut.push(job.id));
      await until(() => worker.held === 1, 'the second job held');
      // Its timeout counts from its lease; on unary calls the worker hears of it at the next extend.
      clock.advance(transport === 'stream' ? timeoutMs : leaseMs / 3);
      await untilNow(() => worker.held === 0, 'the held job dropped');
      const dead = await client.getJob(late.id);
      assert.equal(dead.state, 'dead');
      assert.equal(dead.deadReason, 'timeout');
      const done = nextEvents(worker, 'completed');
      gate.resolve();
      await done;
      assert.deepEqual(started, [first.id], 'the timed-out job never started');
      assert.deepEqual(timedOut, [late.id], 'its timedOut event, as for a running job');
    });

    test('close() gives every held job back at once, its attempt not counted, the last attempt too', async () => {
      const queue = `prefetch-close-${transport}`;
      const running = await client.enqueueJson(queue, 'j', {});
      const given = await client.enqueueJson(queue, 'j', {}, { maxAttempts: 3 });
      const last = await client.enqueueJson(queue, 'j', {}, { maxAttempts: 1 });
      const { worker, started, gate } = start(queue);
      await until(() => worker.running === 1 && worker.held === 2, 'one running and two held');
      const closed = worker.close();
      for (const [{ id }, maxAttempts] of [
        [given, 3],
        [last, 1],
      ] as const) {
        await until(async () => (await client.getJob(id)).state === 'ready', 'the held job given back');
        const back = await client.getJob(id);
        assert.deepEqual(
          [back.attempt, back.maxAttempts - back.attempt],
          [1, maxAttempts],
          'a give-back counts no attempt: its number stays (never reused), its budget grows by one',
        );
        assert.equal(back.lastError, null, 'no failure kept');
      }
      assert.equal(worker.held, 0);
      gate.resolve();
      await closed;
      assert.deepEqual(started, [running.id], 'only the running job ran');
      // Given back once: the stream stopped delivering first, so none came back to the closing worker.
      for (const [{ id }, maxAttempts] of [
        [given, 3],
        [last, 1],
      ] as const) {
        const back = await client.getJob(id);
        assert.deepEqual([back.state, back.attempt, back.maxAttempts], ['ready', 1, maxAttempts + 1]);
      }
    });
  });
}

describe('Worker: prefetch refills held jobs in chunks (stream)', () => {
  test('credit for held jobs waits for half the prefetch; idle slots get theirs at once', async () => {
    const t = await startTestServer();
    const client = SeppClient.connect(t.address);
    const queue = 'prefetch-refill';
    for (let i = 0; i < 10; i++) await client.enqueueJson(queue, 'j', { i });
    const gates = new Map<string, { job: WorkerJob; open: () => void }>();
    const worker = client.worker({
      queues: [queue],
      concurrency: 1,
      prefetch: 4,
      fallback: (job) => new Promise<void>((open) => gates.set(job.id, { job, open })),
    });
    worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
    const finishOne = async () => {
      const [id, { open }] = [...gates][0] ?? assert.fail('no job running');
      gates.delete(id);
      const done = nextEvents(worker, 'completed');
      open();
      await done;
      // The held job that took the slot reports: credit the worker sent before is leased by now.
      await heardBack([...gates.values()].map(({ job }) => job));
    };
    try {
      await until(() => worker.running === 1 && worker.held === 4, 'one running and four held');
      await finishOne();
      // One held job started; one job's credit is less than the refill (2): none asked for yet.
      assert.equal((await client.listQueues()).find((q) => q.name === queue)?.counts.leased, 4);
      assert.equal(worker.held, 3);
      await finishOne();
      await until(() => worker.held === 4, 'the held jobs refilled by a lease of two');
    } finally {
      for (const { open } of gates.values()) open();
      await worker.close({ timeoutMs: 0 });
      await client.close();
      await t.dispose();
    }
  });
});

describe('Worker: held jobs across a server restart (stream)', () => {
  test('held leases stay valid, and the new stream asks for no more than the free places', async () => {
    const clock = new FakeClock(Date.UTC(2026, 11, 6));
    let t = await startTestServer({ clock });
    const client = SeppClient.connect(t.address);
    const queue = 'prefetch-restart';
    const ids = await enqueueJobs(client, queue, 4);
    const gate = deferred();
    const starts: string[] = [];
    const worker = client.worker({
      clock,
      leaseMs,
      queues: [queue],
      workerId: 'prefetch-restart',
      concurrency: 1,
      prefetch: 2,
      reconnect: { baseDelayMs: 100, maxDelayMs: 100 },
      fallback: async (job) => {
        starts.push(`${job.id}@${job.attempt}`);
        await gate.promise;
      },
    });
    const errors: string[] = [];
    worker.on('error', (error) => errors.push(error.message));
    const extended = new Set<string>();
    worker.on('extended', (job) => extended.add(job.id));
    const mine = async () => (await client.listWorkers()).find((w) => w.workerId === 'prefetch-restart');
    try {
      await until(() => worker.running === 1 && worker.held === 2, 'one running and two held');
      t = await t.restartOnSamePort();
      await until(() => errors.length > 0, 'the worker to notice the restart');
      // The reconnect's backoff (at most 100 ms), on the worker's clock.
      await until(async () => {
        if ((await mine())?.transport === 'work_stream') return true;
        clock.advance(100);
        return false;
      }, 'a Work stream again');
      // Past the first leases' end, a third of a lease at a time: every lease is extended on the new server.
      for (let i = 0; i < 4; i++) {
        extended.clear();
        clock.advance(leaseMs / 3);
        await until(() => extended.size === 3, `the three leases extended (${i})`);
      }
      assert.equal(worker.held, 2);
      assert.equal((await mine())?.jobsHeld, 3, 'the running and the held leases, under the worker id');
      const counts = (await client.listQueues()).find((q) => q.name === queue)?.counts;
      assert.deepEqual([counts?.leased, counts?.ready], [3, 1], 'no credit beyond the free places');
      const done = nextEvents(worker, 'completed', 4);
      gate.resolve();
      await done;
      assert.deepEqual(
        starts,
        ids.map((id) => `${id}@1`),
        'each job ran once, on its first lease',
      );
    } finally {
      gate.resolve();
      await worker.close({ timeoutMs: 0 });
      await client.close();
      await t.dispose();
    }
  });
});

describe('Worker option prefetch', () => {
  test('is an integer from 0 to 1000, and slots + prefetch fit one stream’s credit', async () => {
    const client = SeppClient.connect('127.0.0.1:1');
    const options = { queues: ['q'], handlers: {}, autostart: false } as const;
    for (const prefetch of [-1, 1.5, 1001, Number.NaN]) {
      assert.throws(
        () => client.worker({ ...options, prefetch }),
        /prefetch must be 'auto' or an integer from 0 to 1000/,
      );
    }
    assert.throws(
      () => client.worker({ ...options, concurrency: 600, prefetch: 500, streams: 1 }),
      /concurrency \+ prefetch is 1100 on one of 1 streams.*limits\.max_reserve_jobs/,
    );
    const fits = client.worker({ ...options, concurrency: 1000, prefetch: 1000 });
    await fits.close();
    await client.close();
  });

  test('by default a Worker opens as few Work streams as fit 1000 slots and held jobs each', async () => {
    const t = await startTestServer();
    const client = SeppClient.connect(t.address);
    const waiting = async (queue: string) =>
      (await client.listQueues()).find((q) => q.name === queue)?.waitingWorkers ?? 0;
    try {
      // concurrency + prefetch → streams: 50 → 1, 1000 → 1, 1500 → 2, 2000 → 2; a given `streams` wins.
      const cases = [
        { queue: 'streams-50', concurrency: 50, prefetch: 0, streams: 1 },
        { queue: 'streams-1000', concurrency: 600, prefetch: 400, streams: 1 },
        { queue: 'streams-1500', concurrency: 1000, prefetch: 500, streams: 2 },
        { queue: 'streams-2000', concurrency: 1000, prefetch: 1000, streams: 2 },
        { queue: 'streams-given', concurrency: 50, prefetch: 0, streams: 4, given: 4 },
      ];
      for (const { queue, concurrency, prefetch, streams, given } of cases) {
        await client.enqueue(queue, 'later', undefined, { delayMs: 3_600_000 });
        const worker = client.worker({
          queues: [queue],
          concurrency,
          prefetch,
          ...(given === undefined ? {} : { streams: given }),
          fallback: () => undefined,
        });
        try {
          await until(async () => (await waiting(queue)) === streams, `${streams} Work streams on ${queue}`);
          // The worker opens all its streams as it starts, before these calls on the same
          // connection: the server has seen every subscribe by the time it answers.
          const [listed, ...others] = (await client.listWorkers()).filter(
            (w) => w.transport === 'work_stream' && w.queues.includes(queue),
          );
          assert.deepEqual([listed?.connections, others.length], [streams, 0], queue);
          assert.equal(await waiting(queue), streams, queue);
        } finally {
          await worker.close();
        }
      }
    } finally {
      await client.close();
      await t.dispose();
    }
  });
});
