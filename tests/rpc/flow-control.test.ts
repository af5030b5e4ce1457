/**
 * Flow control through the real server, with the real SDK, on both transports:
 * 20 Workers (one job each) on a queue with max_leased = 3; groups through the
 * protocol (enqueue, delivery, GetJob, ListQueues), and the settings as
 * ListQueues reports them.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Worker, WorkerJob } from '../../clients/typescript/src/index.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { until } from '../client/helpers.ts';
import { sampleValue, scrape } from '../helpers/prometheus.ts';
import { serverAndClient } from '../helpers/sdk-server.ts';

const toml = `
[queues.limited]
max_leased = 3

[queues.paced]
rate_limit_leases = 100
rate_limit_period_ms = "1s"
rate_limit_burst = 10

[queues.tenants]
group_max_leased = 1
`;

for (const transport of ['stream', 'unary'] as const) {
  describe(`flow control over ${transport === 'stream' ? 'Work streams' : 'unary Reserve'}`, () => {
    const clock = new FakeClock(Date.UTC(2026, 3, 1));
    const workers: Worker[] = [];

    // Before the server stops (after hooks run in order).
    after(() => Promise.all(workers.map((w) => w.close({ timeoutMs: 0 }))));
    const served = serverAndClient({ clock, toml }, { transport });

    const queueInfo = async (name: string) =>
      (await served.server.server.engine.listQueues()).find((q) => q.name === name);

    test('max_leased = 3 with 20 workers: never more than 3 leased, and 3 held while work waits', async () => {
      const jobs = 40;
      await served.client.enqueueBatch(
        Array.from({ length: jobs }, (_, i) => ({ queue: 'limited', type: 'w', json: { i } })),
      );
      const held: { job: WorkerJob; release: () => void }[] = [];
      const samples: number[] = [];
      for (let w = 0; w < 20; w++) {
        const worker = served.client.worker({
          queues: ['limited'],
          concurrency: 1,
          // Each worker holds only what it runs (prefetch 'auto', the default, would lease ahead).
          prefetch: 0,
          clock,
          workerId: `${transport}-${w}`,
          fallback: (job) => {
            // Sampled at every delivery: the server's leased count.
            void queueInfo('limited').then((q) => samples.push(q?.counts.leased ?? -1));
            return new Promise<void>((release) => held.push({ job, release }));
          },
        });
        worker.on('error', (error) => assert.fail(`worker error: ${error.message}`));
        workers.push(worker);
      }
      for (let done = 0; done < jobs; done++) {
        const expected = Math.min(3, jobs - done);
        // The limit is met again after every ended lease, and the other 17 wait, throttled.
        await until(
          async () =>
            held.length === expected &&
            (await queueInfo('limited'))?.counts.leased === expected &&
            (jobs - done <= 3 || (await queueInfo('limited'))?.throttledWorkers === 17),
          `${expected} leased and 17 throttled after ${done} jobs`,
        );
        held.shift()!.release();
      }
      await until(async () => (await queueInfo('limited'))?.counts.leased === 0, 'the last acks');
      assert.equal(samples.length, jobs);
      assert.ok(Math.max(...samples) <= 3, `leased at a delivery: ${Math.max(...samples)}`);
      assert.equal((await queueInfo('limited'))?.counts.ready, 0);
      await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 0 })));
    });

    test('groups over the protocol: enqueue, delivery, GetJob, ListQueues; group_max_leased holds', async () => {
      const ids: string[] = [];
      for (const group of ['acme', 'acme', 'globex']) {
        ids.push((await served.client.enqueueJson('tenants', 'w', {}, { group })).id);
      }
      const job = await served.client.getJob(ids[0]!);
      assert.equal(job.group, 'acme');
      const leased = await served.client.reserve({ queues: ['tenants'], maxJobs: 10 });
      assert.deepEqual(
        leased.map((j) => j.group),
        ['acme', 'globex'],
        'one per group: group_max_leased = 1',
      );
      const info = (await served.client.listQueues()).find((q) => q.name === 'tenants');
      assert.equal(info?.settings.groupMaxLeased, 1);
      assert.equal(info?.readyGroups, 1, 'acme still has a ready job');
      assert.equal(info?.readyGroupsCapped, false);
      for (const j of leased) await served.client.ack(j);
      const [last] = await served.client.reserve({ queues: ['tenants'] });
      assert.equal(last?.group, 'acme');
      if (last) await served.client.ack(last);
    });

    test('a bad group is refused with INVALID_NAME, naming the field', async () => {
      await assert.rejects(
        served.client.enqueueJson('tenants', 'w', {}, { group: 'no spaces' }),
        (error: Error) => {
          assert.match(error.message, /group "no spaces" may use only/);
          return true;
        },
      );
    });
  });
}

describe('flow-control settings over the protocol', () => {
  const served = serverAndClient({ toml });

  test('ListQueues reports each limit as configured, the burst resolved', async () => {
    const queues = await served.client.listQueues();
    const paced = queues.find((q) => q.name === 'paced');
    assert.deepEqual(paced?.settings.rateLimit, { leases: 100, periodMs: 1000, burst: 10 });
    assert.equal(paced?.settings.maxLeased, 0);
    assert.deepEqual(paced?.settings.groupRateLimit, { leases: 0, periodMs: 1000, burst: 0 });
    assert.equal(queues.find((q) => q.name === 'limited')?.settings.maxLeased, 3);
    assert.equal(paced?.throttledWorkers, 0);
  });

  test('/metrics: the limit, throttled reserves and groups with work, only for queues that use them', async () => {
    await served.client.enqueueBatch(
      ['x', 'y', 'y'].map((group) => ({ queue: 'tenants', type: 'w', json: {}, group })),
    );
    await served.client.enqueueBatch([1, 2, 3, 4].map((i) => ({ queue: 'limited', type: 'w', json: { i } })));
    await served.client.enqueue('plain', 'w', 'no limits here');
    const held = await served.client.reserve({ queues: ['limited'], maxJobs: 10 });
    assert.equal(held.length, 3);
    const abort = new AbortController();
    const waiting = served.client
      .reserve({ queues: ['limited'], waitMs: 60_000, signal: abort.signal })
      .catch(() => []);
    await until(
      async () =>
        (await served.server.server.engine.listQueues()).find((q) => q.name === 'limited')
          ?.throttledWorkers === 1,
      'the throttled reserve',
    );
    const { samples } = await scrape(served.server.metricsUrl);
    const queue = (name: string) => ({ sepp_queue: name });
    assert.equal(sampleValue(samples, 'sepp_queue_leased_limit', queue('limited')), 3);
    assert.equal(sampleValue(samples, 'sepp_queue_reserves_throttled', queue('limited')), 1);
    assert.equal(sampleValue(samples, 'sepp_queue_groups_ready', queue('tenants')), 2);
    assert.equal(sampleValue(samples, 'sepp_queue_reserves_throttled', queue('tenants')), 0);
    for (const name of [
      'sepp_queue_leased_limit',
      'sepp_queue_reserves_throttled',
      'sepp_queue_groups_ready',
    ]) {
      assert.equal(
        sampleValue(samples, name, queue('plain')),
        undefined,
        `${name} has no series for a queue without limits`,
      );
    }
    abort.abort();
    await waiting;
    for (const job of held) await served.client.ack(job);
  });
});
