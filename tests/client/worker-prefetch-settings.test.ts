/**
 * What the Worker's default, `prefetch: 'auto'`, changes about queue settings, as
 * clients/typescript/REFERENCE.md (**Prefetch**) and docs/python.md say: once its first
 * `concurrency` runs were short, a Worker leases jobs ahead of its slots whatever the queue's
 * limits, so held jobs take a `max_leased` allowance from another worker's free slots, held
 * jobs leased at a rate limit's pace start back to back, and a child enqueued on the
 * parent's own queue can be held behind the parent. The workers' clocks never move, so
 * every run counts as short.
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

  const start = (options: { queues: string[]; concurrency: number; prefetch?: number }, run: JobHandler) => {
    const worker = served.client.worker({ ...options, clock: new FakeClock(clock.nowMs()), fallback: run });
    worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
    workers.push(worker);
    return worker;
  };
  const queueInfo = async (name: string) =>
    (await served.server.server.engine.listQueues()).find((q) => q.name === name);
  // Completed jobs are not kept (completed_retention_ms = 0): done is nothing ready or leased.
  const allSettled = (info: Awaited<ReturnType<typeof queueInfo>>) =>
    info?.counts.ready === 0 && info.counts.leased === 0;

  test('max_leased counts held jobs: one worker holds the allowance, another with free slots waits', async () => {
    const gate = deferred();
    gates.push(() => gate.resolve());
    // Two quick jobs teach the worker its runs are short, then six that wait for the gate.
    for (let i = 0; i < 8; i++) await served.client.enqueueJson('capped', 'j', { slow: i >= 2 });
    const holder = start({ queues: ['capped'], concurrency: 2 }, async (job) => {
      if ((job.data as { slow: boolean }).slow) await gate.promise;
    });
    await until(() => holder.running === 2 && holder.held === 2, 'two running and two held');
    const idle = start({ queues: ['capped'], concurrency: 2, prefetch: 0 }, () => undefined);
    await until(async () => (await queueInfo('capped'))?.throttledWorkers === 2, 'both workers held back');
    const info = await queueInfo('capped');
    assert.equal(info?.counts.leased, 4, 'the allowance, taken');
    assert.equal(info?.counts.ready, 2, 'jobs wait');
    assert.equal(idle.running, 0, 'two free slots, no job: two of the four leases are not running');
    gate.resolve();
    await until(async () => allSettled(await queueInfo('capped')), 'all done');
  });

  test('a rate limit counts leases: held jobs leased at its pace start back to back', async () => {
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
    await until(() => startedAtMs.length === 1 && worker.running === 0, 'the first job ran');
    for (let second = 1; second <= 4; second++) {
      // A step at a time: the server sets the timer of its next token once the last lease committed.
      await until(
        async () => {
          clock.advance(10);
          return (await queueInfo('paced'))?.counts.leased === second;
        },
        `lease ${second + 1}`,
      );
    }
    // Three leased at the limit's pace, held behind the slow job.
    await until(() => worker.held === 3, 'three held');
    gate.resolve();
    await until(() => startedAtMs.length === 5, 'all started');
    // The limit allows one start a second (burst 1); the server's clock has not moved.
    assert.equal(new Set(startedAtMs.slice(2)).size, 1, `three starts in one millisecond: ${startedAtMs}`);
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
    assert.equal((await served.client.getJob(childId)).state, 'leased', 'no other worker can take it');
    assert.deepEqual(started, ['quick', 'parent'], 'the child has not started');
    gate.resolve();
    await until(() => started.length === 3, 'the child starts once its parent returned');
  });
});
