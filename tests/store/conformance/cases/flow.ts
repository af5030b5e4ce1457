/** Lease order across groups and the limits: the engine's semantics, over the store's seeks. */
import assert from 'node:assert/strict';
import type { StoreCase } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const flowCases: StoreCase[] = [
  {
    name: 'queues.find: a queue by name with its paused and groups marks; undefined for none',
    async run(h) {
      await h.write(function* (tx) {
        yield* tx.queues.create({ name: 'q', createdAtMs: 1, settingsJson: '{}' });
        yield* tx.queues.create({ name: 'r', createdAtMs: 1, settingsJson: '{}' });
        yield* tx.queues.setPaused({ name: 'q', paused: true });
        yield* tx.queues.markGrouped('r');
      });
      const found = await h.store.read(function* (view) {
        return [yield* view.queues.find('q'), yield* view.queues.find('r'), yield* view.queues.find('nope')];
      });
      assert.deepEqual(found, [
        { paused: true, has_groups: false },
        { paused: false, has_groups: true },
        undefined,
      ]);
    },
  },
  {
    name: 'groups: leases take turns across groups (no group first), then share out; priority comes first',
    async run(h) {
      const { engine } = await h.engine();
      const jobs = [
        ...['a', 'a', 'a', 'a'].map((group, i) => ({ group, i })),
        ...['b', 'b'].map((group, i) => ({ group, i })),
        { group: undefined, i: 0 },
      ];
      for (const { group, i } of jobs) {
        await engine.enqueue({
          queue: 'q',
          type: 't',
          payload: bytes(`${group ?? '-'}${i}`),
          ...(group === undefined ? {} : { group }),
        });
      }
      await engine.enqueue({ queue: 'q', type: 't', payload: bytes('urgent'), group: 'c', priority: 9 });
      const order = (await engine.reserve({ queues: ['q'], maxJobs: 8 })).map((j) =>
        new TextDecoder().decode(j.payload),
      );
      assert.deepEqual(
        order.slice(0, 4),
        ['urgent', '-0', 'a0', 'b0'],
        'priority, then one turn of the ring',
      );
      assert.deepEqual(order.slice(4).sort(), ['a1', 'a2', 'a3', 'b1']);
    },
  },
  {
    name: 'limits: max_leased and group_max_leased hold, counted in the store, and free up as leases end',
    async run(h) {
      const { engine } = await h.engine({ options: { queues: { q: { maxLeased: 3, groupMaxLeased: 1 } } } });
      for (const group of ['a', 'a', 'b', 'b', 'c', 'd']) {
        await engine.enqueue({ queue: 'q', type: 't', payload: bytes(group), group });
      }
      const first = await engine.reserve({ queues: ['q'], maxJobs: 10 });
      assert.equal(first.length, 3, 'max_leased');
      assert.equal(new Set(first.map((j) => j.group)).size, 3, 'one per group');
      assert.deepEqual(await engine.reserve({ queues: ['q'], maxJobs: 10 }), []);
      await engine.ack({ jobId: first[0]!.id, attempt: first[0]!.attempt });
      const next = await engine.reserve({ queues: ['q'], maxJobs: 10 });
      assert.equal(next.length, 1);
      assert.ok(!first.slice(1).some((j) => j.group === next[0]?.group), 'not a group that is at its limit');
      const q = (await engine.listQueues()).find((x) => x.name === 'q');
      assert.equal(q?.counts.leased, 3);
      assert.ok((q?.readyGroups ?? 0) >= 1);
    },
  },
  {
    name: 'rate limit: the bucket is kept in the store and holds across a restart',
    async run(h) {
      const options = { queues: { q: { rateLimit: { leases: 2, periodMs: 1000, burst: 2 } } } };
      const { engine, clock } = await h.engine({ options });
      for (let i = 0; i < 5; i++) await engine.enqueue({ queue: 'q', type: 't', payload: bytes(String(i)) });
      assert.equal((await engine.reserve({ queues: ['q'], maxJobs: 5 })).length, 2, 'the burst');
      const again = await h.engine({ options, clock });
      assert.equal(
        (await again.engine.reserve({ queues: ['q'], maxJobs: 5 })).length,
        0,
        'no token after a restart',
      );
      clock.advance(500);
      assert.equal(
        (await again.engine.reserve({ queues: ['q'], maxJobs: 5 })).length,
        1,
        'one token per 500 ms',
      );
    },
  },
  {
    name: 'priority aging: the oldest ready job of each priority compared by effective priority (readyHeads)',
    async run(h) {
      const { engine, clock } = await h.engine({ options: { queues: { q: { priorityAgingMs: 1000 } } } });
      const enqueue = async (priority: number) =>
        (await engine.enqueue({ queue: 'q', type: 't', payload: new Uint8Array(), priority })).jobId;
      const p1 = await enqueue(1);
      clock.advance(3000);
      const p3 = await enqueue(3);
      clock.advance(3000);
      const [p8a, p8b, p2] = [await enqueue(8), await enqueue(8), await enqueue(2)];
      // Effective: p8 8, p1 1 + 6 = 7, p3 3 + 3 = 6, p2 2.
      const heads = await h.store.read((view) => view.flow.readyHeads({ queue: 'q', limit: 1 }));
      assert.deepEqual(heads.map((r) => r.priority).sort(), [1, 2, 3, 8]);
      const leased = await engine.reserve({ queues: ['q'], maxJobs: 4 });
      assert.deepEqual(
        leased.map((j) => j.id),
        [p8a, p8b, p1, p3],
      );
      assert.equal((await engine.reserve({ queues: ['q'] }))[0]?.id, p2);
    },
  },
];
