/**
 * Flow control, groups: fair turns across the groups of a queue (within a
 * priority), the jobs without a group as one more member of the ring, per-group
 * limits (group_max_leased, a per-group rate), their restart behaviour, and the
 * validation of the group name.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  defaultEngineLimits,
  defaultQueueSettings,
  type RateLimitSettings,
} from '../../src/engine/settings.ts';
import type { LeasedJob } from '../../src/engine/types.ts';
import { job, until, withEngine, withQueues } from '../helpers/engine.ts';

const hangGuard = { timeout: 300_000 };
const rate = (leases: number, periodMs: number, burst = 0): RateLimitSettings => ({
  leases,
  periodMs,
  burst,
});
const groupsOf = (jobs: LeasedJob[]) => jobs.map((j) => j.group);

async function fill(
  engine: import('../../src/engine/engine.ts').Engine,
  queue: string,
  group: string | undefined,
  jobs: number,
  extra: Parameters<typeof job>[1] = {},
) {
  for (let done = 0; done < jobs; done += 1000) {
    const n = Math.min(1000, jobs - done);
    const results = await engine.enqueueBatch(
      Array.from({ length: n }, () => job(queue, { ...extra, ...(group === undefined ? {} : { group }) })),
    );
    assert.ok(results.every((r) => r.ok));
  }
}

test(
  "fairness: group A with 10,000 ready jobs, then B with 10: B's 10 go within the next 20 leases",
  hangGuard,
  async () => {
    await withEngine({ durability: 'relaxed' }, async ({ engine }) => {
      await fill(engine, 'q', 'A', 10_000);
      assert.equal(
        (await engine.reserve({ queues: ['q'], maxJobs: 5 })).length,
        5,
        'A is served while alone',
      );
      await fill(engine, 'q', 'B', 10);
      const leased: LeasedJob[] = [];
      for (let i = 0; i < 20; i++) leased.push(...(await engine.reserve({ queues: ['q'] })));
      assert.deepEqual(
        groupsOf(leased),
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 'B' : 'A')),
        'turns alternate from the group after the last one served',
      );
      assert.equal(groupsOf(leased).filter((g) => g === 'B').length, 10);
      const [info] = await engine.listQueues();
      assert.equal(info?.readyGroups, 1, 'only A has ready jobs left');
      assert.equal(info?.readyGroupsCapped, false);
    });
  },
);

test('fairness in one big reserve: turns first, then the rest shared evenly', async () => {
  await withEngine({}, async ({ engine }) => {
    await fill(engine, 'q', 'A', 50);
    await fill(engine, 'q', 'B', 3);
    await fill(engine, 'q', 'C', 50);
    const got = await engine.reserve({ queues: ['q'], maxJobs: 30 });
    const count = (g: string) => groupsOf(got).filter((x) => x === g).length;
    assert.deepEqual(groupsOf(got).slice(0, 3), ['A', 'B', 'C'], 'one each first');
    assert.equal(count('B'), 3, 'B gives all it has');
    assert.equal(count('A'), 14);
    assert.equal(count('C'), 13);
    // Within a group, jobs go in the queue's order (enqueue order here).
    const ids = got.filter((j) => j.group === 'A').map((j) => j.enqueuedAtMs);
    assert.deepEqual(
      ids,
      [...ids].sort((x, y) => x - y),
    );
  });
});

test('groups: priority first, turns within a priority; jobs without a group are one member of the ring', async () => {
  await withEngine({}, async ({ engine }) => {
    await fill(engine, 'q', 'A', 3, { priority: 1 });
    await fill(engine, 'q', undefined, 3, { priority: 1 });
    await fill(engine, 'q', 'B', 3, { priority: 1 });
    await fill(engine, 'q', 'Z', 2, { priority: 5 });
    const got: (string | null)[] = [];
    for (;;) {
      const [next] = await engine.reserve({ queues: ['q'] });
      if (next === undefined) break;
      got.push(next.group);
    }
    assert.deepEqual(got, ['Z', 'Z', null, 'A', 'B', null, 'A', 'B', null, 'A', 'B']);
  });
});

test(
  'group_max_leased = 1 holds per group with 10 workers, and every group with work keeps one lease',
  hangGuard,
  async () => {
    await withEngine(
      { durability: 'relaxed', options: withQueues({ q: { groupMaxLeased: 1 } }) },
      async (t) => {
        const { engine, db } = t;
        for (const g of ['A', 'B', 'C']) await fill(engine, 'q', g, 20);
        const perGroup = db.prepare<[], { group_key: string; n: number }>(
          "SELECT group_key, count(*) AS n FROM jobs WHERE state = 'leased' GROUP BY group_key",
        );
        const controller = new AbortController();
        const held: { job: LeasedJob; release: () => void }[] = [];
        let maxPerGroup = 0;
        const workers = Array.from({ length: 10 }, async () => {
          while (!controller.signal.aborted) {
            const [leased] = await engine.reserve({ queues: ['q'], waitMs: 3_600_000 }, controller.signal);
            if (leased === undefined) continue;
            for (const row of perGroup.all()) maxPerGroup = Math.max(maxPerGroup, row.n);
            await new Promise<void>((release) => held.push({ job: leased, release }));
            await engine.ack({ jobId: leased.id, attempt: leased.attempt });
          }
        });
        // Released oldest first, the groups drain at one pace: each keeps its one lease while it has jobs.
        for (let done = 0; done < 60; done++) {
          await until(engine, () => held.length > 0 && engine.waitingReserves === 10 - held.length, 200);
          const leasedGroups = held.map((h) => h.job.group).sort();
          assert.deepEqual(leasedGroups, [...new Set(leasedGroups)], 'at most one lease per group');
          assert.equal(held.length, Math.min(3, 60 - done), 'every group with work holds its one lease');
          held.shift()!.release();
        }
        controller.abort();
        for (const h of held) h.release();
        await Promise.all(workers);
        assert.equal(maxPerGroup, 1);
        assert.equal((await engine.listQueues())[0]?.counts.ready, 0);
      },
    );
  },
);

test('group_max_leased and a per-group rate hold right after a restart with leases outstanding', async () => {
  const options = withQueues({ q: { groupMaxLeased: 1, groupRateLimit: rate(1, 60_000, 1) } });
  await withEngine({ options }, async (opened) => {
    let t = opened;
    await fill(t.engine, 'q', 'A', 3);
    await fill(t.engine, 'q', 'B', 3);
    const first = await t.engine.reserve({ queues: ['q'], maxJobs: 10, leaseMs: 3_600_000 });
    assert.deepEqual(groupsOf(first), ['A', 'B']);
    t = await t.reopen();
    assert.deepEqual(
      await t.engine.reserve({ queues: ['q'], maxJobs: 10 }),
      [],
      'both groups are at their limit',
    );
    await t.engine.ack({ jobId: first[0]!.id, attempt: 1 });
    assert.deepEqual(
      await t.engine.reserve({ queues: ['q'], maxJobs: 10 }),
      [],
      "A's slot is free, its token is not",
    );
    t.clock.advance(60_000);
    assert.deepEqual(groupsOf(await t.engine.reserve({ queues: ['q'], maxJobs: 10 })), ['A']);
    return t;
  });
});

test(
  'a per-group rate: each group gets its own tokens, and a throttled reserve is woken by the next one',
  hangGuard,
  async () => {
    await withEngine(
      { options: withQueues({ q: { groupRateLimit: rate(1, 1000, 1) } }) },
      async ({ engine, clock }) => {
        await fill(engine, 'q', 'A', 5);
        await fill(engine, 'q', 'B', 5);
        assert.deepEqual(groupsOf(await engine.reserve({ queues: ['q'], maxJobs: 10 })), ['A', 'B']);
        const waiting = engine.reserve({ queues: ['q'], maxJobs: 10, waitMs: 60_000 });
        await until(engine, () => engine.waitingReserves === 1);
        assert.equal((await engine.listQueues())[0]?.throttledWorkers, 1);
        clock.advance(999);
        for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
        assert.equal(engine.waitingReserves, 1, 'no token yet');
        clock.advance(1);
        assert.deepEqual(groupsOf(await waiting), ['A', 'B']);
      },
    );
  },
);

test('group names follow the rules of queue names; rejected jobs store nothing', async () => {
  await withEngine({}, async ({ engine }) => {
    const results = await engine.enqueueBatch([
      job('q', { group: 'tenant:42' }),
      job('q', { group: '' }),
      job('q', { group: 'has space' }),
      job('q', { group: 'x'.repeat(defaultEngineLimits.maxNameLength + 1) }),
    ]);
    assert.equal(results[0]?.ok, true);
    for (const r of results.slice(1)) {
      assert.equal(r.ok, false);
      if (!r.ok) {
        assert.equal(r.reason, 'invalid_name');
        assert.match(r.message, /^group /);
      }
    }
    const id = results[0]?.ok ? results[0].jobId : '';
    assert.equal((await engine.getJob(id)).group, 'tenant:42');
    assert.equal((await engine.reserve({ queues: ['q'] }))[0]?.group, 'tenant:42');
  });
});

test('rate-limit buckets that are full again are forgotten by maintenance; a missing bucket is a full one', async () => {
  const options = withQueues({ q: { groupRateLimit: rate(1, 1000, 1), rateLimit: rate(100, 1000) } });
  await withEngine({ options }, async ({ engine, clock, db }) => {
    const buckets = () => db.prepare<[], number>('SELECT count(*) FROM flow_buckets').pluck().get();
    await fill(engine, 'q', 'A', 3);
    await fill(engine, 'q', 'B', 3);
    assert.equal((await engine.reserve({ queues: ['q'], maxJobs: 10, leaseMs: 3_600_000 })).length, 2);
    assert.equal(buckets(), 3, "the queue's bucket and one per group");
    clock.advance(61_000); // past the next sweep; every bucket has been full for a while
    await engine.runMaintenance();
    assert.equal(buckets(), 0);
    assert.deepEqual(groupsOf(await engine.reserve({ queues: ['q'], maxJobs: 10 })), ['A', 'B']);
  });
});

test("a job's own lease_ms holds through the flow-controlled lease too (grouped, ungrouped, limited)", async () => {
  const options = withQueues({ q: { maxLeased: 10, defaultLeaseMs: 30_000, maxLeaseMs: 3_600_000 } });
  await withEngine({ options }, async ({ engine, clock }) => {
    await fill(engine, 'q', 'A', 1, { leaseMs: 600_000 });
    await fill(engine, 'q', undefined, 1, { leaseMs: 7_200_000 });
    await fill(engine, 'q', 'B', 1);
    const nowMs = clock.nowMs();
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 3 });
    const deadlineOf = (group: string | null) => leased.find((j) => j.group === group)?.leaseDeadlineMs;
    assert.equal(deadlineOf('A'), nowMs + 600_000, "a grouped job's own lease, longer than the reserve's");
    assert.equal(deadlineOf(null), nowMs + 3_600_000, "an ungrouped job's own lease, capped at max_lease_ms");
    assert.equal(deadlineOf('B'), nowMs + 30_000, 'a job without one gets the default');
  });
});

test('a deleted queue that had groups, used again with groups, still takes turns after a restart', async () => {
  const queueDefaults = { ...defaultQueueSettings, rateLimit: rate(1, 60_000, 1) };
  await withEngine({ options: { queueDefaults } }, async (opened) => {
    let t = opened;
    const first = await t.engine.enqueue(job('g', { group: 'acme' }));
    assert.equal((await t.engine.reserve({ queues: ['g'] })).length, 1, 'the one token, spent');
    await t.engine.ack({ jobId: first.jobId, attempt: 1 });
    await t.engine.deleteQueue('g');
    const buckets = t.db.prepare("SELECT count(*) FROM flow_buckets WHERE queue = 'g'").pluck().get();
    assert.equal(buckets, 0, 'its rate-limit buckets went with it');
    await t.engine.enqueue(job('g', { group: 'acme' }));
    const [again] = await t.engine.reserve({ queues: ['g'] });
    assert.ok(again, 'a new queue: a full bucket');
    await t.engine.ack({ jobId: again.id, attempt: again.attempt });
    await t.engine.enqueue(job('g', { group: 'globex' }));
    t = await t.reopen();
    t.clock.advance(60_000);
    const [leased] = await t.engine.reserve({ queues: ['g'] });
    assert.equal(leased?.group, 'globex', 'the grouped job is leased: the queue is known to have groups');
    return t;
  });
});
