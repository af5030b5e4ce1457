/**
 * What leasing ahead changes about queue settings, as clients/typescript/REFERENCE.md
 * (**Prefetch**) and docs/python.md say. The default, `prefetch: 'auto'`, holds nothing once
 * a job says its queue has a flow limit (LeasedJob.flowLimited): on a `max_leased` queue the
 * allowance goes to whichever worker has free slots, and under a rate limit jobs start at the
 * limit's pace, not back to back. A number is taken as given: held jobs then take the
 * allowance from another worker's free slots. On a queue without limits `'auto'` still holds,
 * so a child enqueued on the parent's own queue can be held behind the parent. The workers'
 * clocks never move, so every run counts as short (`'auto'` would hold the most it may).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { JobHandler, Worker } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';
import { deferred, until } from './helpers.ts';

const toml = `
[queues.capped]
max_leased = 4

[queues.paced]
rate_limit_leases = 1
rate_limit_period_ms = "1s"
rate_limit_burst = 1
`;

describe("prefetch 'auto' and the queue's settings", () => {
  const clock = new FakeClock(Date.UTC(2026, 11, 7));
  const workers: Worker[] = [];
  const gates: (() => void)[] = [];
  after(() => {
    for (const open of gates) open();
    return Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
  });
  const served = serverAndClient({ clock, toml });

  /** What the workers said at `info`. */
  const said: string[] = [];
  const logger = { info: (line: string) => said.push(line), warn: console.warn, error: console.error };
  const start = (options: { queues: string[]; concurrency: number; prefetch?: number }, run: JobHandler) => {
    const worker = served.client.worker({
      ...options,
      clock: new FakeClock(clock.nowMs()),
      fallback: run,
      logger,
    });
    worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
    workers.push(worker);
    return worker;
  };
  const queueInfo = async (name: string) =>
    (await served.server.server.engine.listQueues()).find((q) => q.name === name);
  // Completed jobs are not kept (completed_retention_ms = 0): done is nothing ready or leased.
  const allSettled = (info: Awaited<ReturnType<typeof queueInfo>>) =>
    info?.counts.ready === 0 && info.counts.leased === 0;

  test("max_leased, prefetch 'auto': the worker holds none, and another worker's free slots run the rest", async () => {
    const gate = deferred();
    gates.push(() => gate.resolve());
    // Two quick jobs (which would teach the worker its runs are short), then six that wait for the gate.
    for (let i = 0; i < 8; i++) await served.client.enqueueJson('capped', 'j', { slow: i >= 2 });
    const handler: JobHandler = async (job) => {
      if ((job.data as { slow: boolean }).slow) await gate.promise;
    };
    const first = start({ queues: ['capped'], concurrency: 2 }, handler);
    await until(() => first.running === 2, 'two running');
    assert.equal(first.prefetchLimit, 0, 'its first job said the queue has flow limits');
    const stopped = said.filter((line) => line.includes(first.workerId));
    assert.equal(stopped.length, 1, 'said once');
    assert.match(
      stopped[0]!,
      /prefetch 'auto' holds no jobs ahead from now on: queue capped has flow limits/,
    );
    const second = start({ queues: ['capped'], concurrency: 2 }, handler);
    await until(() => second.running === 2, "the allowance's other two run on the second worker");
    const info = await queueInfo('capped');
    assert.equal(info?.counts.leased, 4);
    assert.equal(info?.counts.ready, 2);
    assert.deepEqual([first.held, second.held, second.prefetchLimit], [0, 0, 0]);
    gate.resolve();
    await until(async () => allSettled(await queueInfo('capped')), 'all done');
    // Out of the next test's way (same queue).
    await Promise.all([first.close(), second.close()]);
  });

  test('max_leased, a number: one worker holds part of the allowance, another with free slots waits', async () => {
    const gate = deferred();
    gates.push(() => gate.resolve());
    // Two quick jobs teach the worker its runs are short, then six that wait for the gate.
    for (let i = 0; i < 8; i++) await served.client.enqueueJson('capped', 'j', { slow: i >= 2 });
    const holder = start({ queues: ['capped'], concurrency: 2, prefetch: 2 }, async (job) => {
      if ((job.data as { slow: boolean }).slow) await gate.promise;
    });
    await until(() => holder.running === 2 && holder.held === 2, 'two running and two held');
    const idle = start({ queues: ['capped'], concurrency: 2, prefetch: 0 }, () => undefined);
    // The holder asks for nothing more (its slots and prefetch are full); the other waits.
    await until(
      async () => (await queueInfo('capped'))?.throttledWorkers === 1,
      'the other worker held back',
    );
    const info = await queueInfo('capped');
    assert.equal(info?.counts.leased, 4, 'the allowance, taken');
    assert.equal(info?.counts.ready, 2, 'jobs wait');
    assert.equal(idle.running, 0, 'two free slots, no job: two of the four leases are not running');
    gate.resolve();
    await until(async () => allSettled(await queueInfo('capped')), 'all done');
  });

  test("a rate limit, prefetch 'auto': nothing is leased while the slot is busy, so no burst", async () => {
    const gate = deferred();
    gates.push(() => gate.resolve());
    // One quick job, one that waits for the gate, three quick ones: one lease per second.
    const kinds = ['quick', 'slow', 'quick', 'quick', 'quick'];
    for (const kind of kinds) await served.client.enqueueJson('paced', 'j', { kind });
    const startedAtMs: number[] = [];
    const worker = start({ queues: ['paced'], concurrency: 1 }, async (job) => {
      startedAtMs.push(clock.nowMs());
      if ((job.data as { kind: string }).kind === 'slow') await gate.promise;
    });
    let heldMost = 0;
    // A step at a time: the server sets the timer of its next token once the last lease committed.
    const step = (ms: number) => {
      clock.advance(ms);
      heldMost = Math.max(heldMost, worker.held);
    };
    await until(() => {
      step(10);
      return startedAtMs.length === 2;
    }, 'the slow job started');
    assert.equal(worker.prefetchLimit, 0, 'its first job said the queue has a rate limit');
    // Three seconds of tokens while the slot is busy: with prefetch, three would be leased and held.
    const busyUntilMs = clock.nowMs() + 3000;
    await until(() => {
      step(10);
      return clock.nowMs() >= busyUntilMs;
    }, 'three seconds');
    assert.equal((await queueInfo('paced'))?.counts.leased, 1, 'only the running job is leased');
    gate.resolve();
    await until(() => {
      step(10);
      return startedAtMs.length === 5;
    }, 'all started');
    assert.equal(heldMost, 0);
    assert.equal(new Set(startedAtMs.slice(2)).size, 3, `three starts at three times: ${startedAtMs}`);
    await until(async () => allSettled(await queueInfo('paced')), 'all done');
  });

  test("a child on the parent's own queue is held behind its parent, leased and not started", async () => {
    const gate = deferred();
    gates.push(() => gate.resolve());
    await served.client.enqueueJson('family', 'quick', {});
    await served.client.enqueueJson('family', 'parent', {});
    let childId = '';
    const started: string[] = [];
    const worker = start({ queues: ['family'], concurrency: 1 }, async (job) => {
      started.push(job.type);
      if (job.type !== 'parent') return;
      childId = (await served.client.enqueueJson('family', 'child', {})).id;
      // A parent that waited for its child here (client.waitFor) would wait until its timeout.
      await gate.promise;
    });
    await until(() => worker.held === 1, 'the child held');
    assert.ok(worker.prefetchLimit > 0, 'no flow limits: auto holds');
    assert.equal((await served.client.getJob(childId)).state, 'leased', 'no other worker can take it');
    assert.deepEqual(started, ['quick', 'parent'], 'the child has not started');
    gate.resolve();
    await until(() => started.length === 3, 'the child starts once its parent returned');
  });
});
