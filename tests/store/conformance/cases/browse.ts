/** Operators' lists and search: bounded index reads, through the engine and the store's browse reads. */
import assert from 'node:assert/strict';
import { tickKey } from '../../../../src/engine/schedules/validate.ts';
import { newJob, type StoreCase, storeJobs } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const browseCases: StoreCase[] = [
  {
    name: 'browse in the store: types by seek, seqs of a range both ways, residual filters, ids',
    async run(h) {
      const jobs = [
        newJob('q', { type: 'b' }),
        newJob('q', { type: 'a', metadata_json: '{"tenant":"x"}' }),
        newJob('q', { type: 'b', group_key: 'g', enqueued_at_ms: 5000 }),
        newJob('q', { type: 'c', state: 'scheduled', run_at_ms: 7000 }),
      ];
      await h.write((tx) => storeJobs(tx, jobs));
      const seqOf = new Map(
        (await h.store.read((view) => view.jobs.summaries([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))).map((s) => [
          s.id,
          s.seq,
        ]),
      );
      const types = await h.store.read(function* (view) {
        const found: string[] = [];
        let after = '';
        for (;;) {
          const next = yield* view.browse.typeAfter({ queue: 'q', state: 'ready', afterType: after });
          if (next === undefined) return found;
          found.push(next);
          after = next;
        }
      });
      assert.deepEqual(types, ['a', 'b']);
      const bSeqs = [seqOf.get(jobs[0]!.id)!, seqOf.get(jobs[2]!.id)!];
      const range = { queue: 'q', state: 'ready', type: 'b', fromSeq: 0, descending: false };
      assert.deepEqual(await h.store.read((view) => view.browse.seqs({ ...range, limit: 10 })), bSeqs);
      assert.deepEqual(
        await h.store.read((view) =>
          view.browse.scanSeqs({ ...range, fromSeq: Number.MAX_SAFE_INTEGER, descending: true, scan: 1 }),
        ),
        [bSeqs[1]],
      );
      const filtered = await h.store.read((view) =>
        view.browse.filter({
          seqs: [...seqOf.values()],
          errorText: null,
          metadata: { key: 'tenant', value: 'x' },
          typePrefix: null,
          groupKey: null,
          enqueuedBeforeMs: null,
          deadReason: null,
          keyShapes: null,
        }),
      );
      assert.deepEqual(filtered, [seqOf.get(jobs[1]!.id)]);
      // Age: enqueued before 5000 (the third job was enqueued at 5000, the rest at 1000).
      const older = await h.store.read((view) =>
        view.browse.filter({
          seqs: [...seqOf.values()],
          errorText: null,
          metadata: null,
          typePrefix: 'b',
          groupKey: null,
          enqueuedBeforeMs: 5000,
          deadReason: null,
          keyShapes: null,
        }),
      );
      assert.deepEqual(older, [seqOf.get(jobs[0]!.id)]);
      const ofReason = await h.store.read((view) =>
        view.browse.filter({
          seqs: [...seqOf.values()],
          errorText: null,
          metadata: null,
          typePrefix: null,
          groupKey: null,
          enqueuedBeforeMs: null,
          deadReason: 'lease_expired',
          keyShapes: null,
        }),
      );
      assert.deepEqual(ofReason, [], 'no job here is a dead letter');
      const due = await h.store.read((view) =>
        view.browse.scanDue({
          queue: 'q',
          retries: false,
          fromDueMs: -1,
          fromSeq: -1,
          descending: false,
          scan: 10,
        }),
      );
      assert.deepEqual(due, [{ seq: seqOf.get(jobs[3]!.id), run_at_ms: 7000 }]);
      const prefix = jobs[0]!.id.slice(0, 10);
      const byPrefix = await h.store.read((view) =>
        view.browse.idsBetween({ lo: prefix, hi: `${prefix}~`, limit: 10 }),
      );
      assert.deepEqual(
        byPrefix,
        [...jobs.map((j) => j.id)]
          .filter((id) => id.startsWith(prefix))
          .sort()
          .reverse(),
      );
    },
  },
  {
    name: 'browse in the store: leased jobs by type, their types and counts, apart from the other states',
    async run(h) {
      // On PostgreSQL leased jobs are not in jobs_by_state_type: these reads go through jobs_leased.
      const jobs = [
        newJob('q', { type: 'a' }),
        newJob('q', { type: 'b' }),
        newJob('q', { type: 'a' }),
        newJob('q', { type: 'c' }),
        newJob('q', { type: 'b' }),
        newJob('r', { type: 'a' }),
      ];
      await h.write((tx) => storeJobs(tx, jobs));
      const lease = (queue: string, limit: number) =>
        h.write(function* (tx) {
          const rows = yield* tx.leases.leaseReady({
            queue,
            limit,
            nowMs: 2000,
            leaseDeadlineMs: 32_000,
            maxLeaseDeadlineMs: 600_000,
            workerId: 'w',
            timeoutMs: null,
          });
          yield* tx.counts.adjust({ queue, from: 'ready', to: 'leased', jobs: rows.length });
          return rows.map((row) => row.id);
        });
      assert.deepEqual(await lease('q', 3), [jobs[0]!.id, jobs[1]!.id, jobs[2]!.id]);
      assert.deepEqual(await lease('r', 1), [jobs[5]!.id]);
      const seqs = new Map(
        (await h.store.read((view) => view.jobs.summaries([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))).map((s) => [
          s.id,
          s.seq,
        ]),
      );
      const [a1, b1, a2] = [0, 1, 2].map((i) => seqs.get(jobs[i]!.id)!) as [number, number, number];
      const typesOf = (queue: string, state: string) =>
        h.store.read(function* (view) {
          const found: string[] = [];
          let after = '';
          for (;;) {
            const next = yield* view.browse.typeAfter({ queue, state, afterType: after });
            if (next === undefined) return found;
            found.push(next);
            after = next;
          }
        });
      assert.deepEqual(await typesOf('q', 'leased'), ['a', 'b']);
      assert.deepEqual(await typesOf('q', 'ready'), ['b', 'c'], 'leased jobs are not listed as ready');
      assert.deepEqual(await typesOf('r', 'leased'), ['a']);
      const typeFrom = (fromType: string) =>
        h.store.read((view) =>
          view.browse.typeFrom({ queue: 'q', state: 'leased', fromType, belowType: '\u{10ffff}' }),
        );
      assert.equal(await typeFrom('a\u0000'), 'b');
      assert.equal(await typeFrom('b'), 'b');
      assert.equal(await typeFrom('c'), undefined);
      const range = { queue: 'q', state: 'leased', type: 'a', fromSeq: 0, descending: false };
      assert.deepEqual(await h.store.read((view) => view.browse.seqs({ ...range, limit: 10 })), [a1, a2]);
      const newest = { fromSeq: Number.MAX_SAFE_INTEGER, descending: true };
      assert.deepEqual(await h.store.read((view) => view.browse.seqs({ ...range, ...newest, limit: 1 })), [
        a2,
      ]);
      assert.deepEqual(
        await h.store.read((view) => view.browse.scanSeqs({ ...range, fromSeq: a1, scan: 5 })),
        [a2],
      );
      assert.deepEqual(await h.store.read((view) => view.browse.seqsAnyType({ ...range, limit: 10 })), [
        a1,
        b1,
        a2,
      ]);
      assert.deepEqual(
        await h.store.read((view) =>
          view.browse.seqsAnyType({ ...range, fromSeq: a2, descending: true, limit: 10 }),
        ),
        [b1, a1],
      );
      // The one range of a state across its types, in enqueue order: how a list reads the states
      // the store keeps in no index by type (PostgreSQL's leased jobs).
      const unindexedByType: string[] = [];
      const across = (p: {
        queues?: string[];
        state?: string;
        type?: string;
        typePrefix?: string;
        scan?: number;
        newest?: boolean;
      }) =>
        h.store.read((view) => {
          unindexedByType.push(...view.browse.unindexedByType);
          return view.browse.scanSeqsAcrossTypes({
            queues: p.queues ?? ['q'],
            state: p.state ?? 'leased',
            type: p.type ?? null,
            typePrefix: p.typePrefix ?? '',
            ...(p.newest === true ? newest : { fromSeq: 0, descending: false }),
            scan: p.scan ?? 10,
          });
        });
      assert.deepEqual(await across({}), [a1, b1, a2]);
      assert.deepEqual(await across({ scan: 2 }), [a1, b1]);
      assert.deepEqual(await across({ newest: true }), [a2, b1, a1]);
      assert.deepEqual(await across({ type: 'a', newest: true }), [a2, a1]);
      assert.deepEqual(await across({ typePrefix: 'b' }), [b1]);
      const r1 = seqs.get(jobs[5]!.id)!;
      assert.deepEqual(await across({ queues: ['q', 'r'], newest: true }), [r1, a2, b1, a1]);
      assert.deepEqual(await across({ queues: ['r', 'nowhere'], type: 'a' }), [r1]);
      assert.deepEqual(await across({ queues: [] }), []);
      assert.deepEqual(await across({ typePrefix: 'c' }), [], 'the c job is ready, not leased');
      assert.deepEqual(await across({ state: 'ready' }), [seqs.get(jobs[3]!.id), seqs.get(jobs[4]!.id)]);
      assert.ok(
        unindexedByType.every((state) => state === 'leased'),
        'only leased jobs may be left out of the index',
      );
      const count = (state: string, type: string) =>
        h.store.read((view) => view.bulk.countOfType({ queue: 'q', state, type }));
      assert.deepEqual(
        [
          await count('leased', 'a'),
          await count('leased', 'b'),
          await count('ready', 'b'),
          await count('ready', 'a'),
        ],
        [2, 1, 1, 0],
      );
    },
  },
  {
    name: 'engine: a queue with over 10,000 leased jobs of several types lists them all in order, and a bulk cancel reaches them',
    async run(h) {
      // More leased jobs than PostgreSQL's reads once kept per snapshot (10,000), of three types,
      // stored and leased through the store, not 10,000 calls.
      const total = 10_050;
      const jobs = Array.from({ length: total }, (_, i) => newJob('big', { type: ['c', 'a', 'b'][i % 3]! }));
      // And one leased job of another queue, stored between the first and the rest of them.
      const other = newJob('other', { type: 'a' });
      await h.write((tx) => storeJobs(tx, [jobs[0]!, other, ...jobs.slice(1)]));
      const farMs = Date.UTC(2100, 0, 1);
      await h.write(function* (tx) {
        for (const queue of ['big', 'other']) {
          const rows = yield* tx.leases.leaseReady({
            queue,
            limit: total,
            nowMs: 2000,
            leaseDeadlineMs: farMs,
            maxLeaseDeadlineMs: farMs,
            workerId: 'w',
            timeoutMs: null,
          });
          yield* tx.counts.adjust({ queue, from: 'ready', to: 'leased', jobs: rows.length });
        }
      });
      const { engine } = await h.engine();
      const ids = jobs.map((j) => j.id);
      const pages = async (
        page: (cursor: string | undefined) => Promise<{ items: { id: string }[]; nextCursor: string | null }>,
      ) => {
        const listed: string[] = [];
        let cursor: string | undefined;
        do {
          const got = await page(cursor);
          listed.push(...got.items.map((j) => j.id));
          cursor = got.nextCursor ?? undefined;
        } while (cursor !== undefined);
        return listed;
      };
      const pageSize = 1000;
      const browse = (query: { typePrefix?: string }) =>
        pages((cursor) =>
          engine.browseJobs({
            queue: 'big',
            state: 'leased',
            pageSize,
            ...query,
            ...(cursor ? { cursor } : {}),
          }),
        );
      assert.deepEqual(await browse({}), ids, 'every leased job, oldest first, across the pages');
      const newest = await engine.browseJobs({
        queue: 'big',
        state: 'leased',
        pageSize,
        order: 'newest_first',
      });
      assert.deepEqual(
        newest.items.map((j) => j.id),
        ids.slice(-pageSize).reverse(),
      );
      const ofB = jobs.filter((j) => j.type === 'b').map((j) => j.id);
      assert.deepEqual(await browse({ typePrefix: 'b' }), ofB);
      // Every queue's leased jobs, merged in enqueue order.
      const everyQueue = await engine.browseJobs({ state: 'leased', pageSize: 3 });
      assert.deepEqual(
        everyQueue.items.map((j) => j.id),
        [ids[0], other.id, ids[1]],
      );
      assert.equal(everyQueue.total, total + 1);
      const listed = await pages((cursor) =>
        engine.listJobs({ queue: 'big', state: 'leased', pageSize, ...(cursor ? { cursor } : {}) }),
      );
      assert.deepEqual(listed, ids);
      const firstPage = await engine.listJobs({ queue: 'big', state: 'leased', type: 'a', pageSize: 2 });
      assert.deepEqual(
        firstPage.items.map((j) => j.id),
        [ids[1], ids[4]],
      );
      // A bulk cancel of the leased jobs of one type asks each to stop (they stay leased).
      const filter = { queue: 'big', states: ['leased' as const], type: 'b' };
      assert.deepEqual(await engine.countJobs(filter), {
        matched: ofB.length,
        exact: true,
        examined: ofB.length,
      });
      assert.deepEqual(await engine.cancelJobs(filter), { cancelled: 0, cancelRequested: ofB.length });
      assert.deepEqual(await engine.countJobs({ queue: 'big', states: ['leased'], typePrefix: '' }), {
        matched: total - ofB.length,
        exact: true,
        examined: total,
      });
    },
  },
  {
    name: 'engine: an age filter (enqueued before) — the list, its count and the bulk action agree',
    async run(h) {
      const { engine, clock } = await h.engine();
      const enqueuedAt: number[] = [];
      for (const queue of ['a', 'b', 'a', 'b', 'a']) {
        await engine.enqueue({ queue, type: 'send', payload: bytes(queue) });
        enqueuedAt.push(clock.nowMs());
        clock.advance(1000);
      }
      const jobs = (await engine.browseJobs({ state: 'ready' })).items;
      const before = enqueuedAt[3]!; // the first three jobs are older
      const listed = await engine.browseJobs({ state: 'ready', enqueuedBeforeMs: before, pageSize: 2 });
      assert.deepEqual([listed.items.length, listed.total], [2, null]);
      const next = await engine.browseJobs({
        state: 'ready',
        enqueuedBeforeMs: before,
        pageSize: 2,
        cursor: listed.nextCursor!,
      });
      const older = [...listed.items, ...next.items].map((j) => j.id).sort();
      assert.deepEqual(
        older,
        jobs
          .filter((j) => j.enqueuedAtMs < before)
          .map((j) => j.id)
          .sort(),
      );
      assert.equal(older.length, 3);
      const filter = { states: ['ready' as const], enqueuedBeforeMs: before };
      assert.deepEqual(await engine.countJobs(filter), { matched: 3, exact: true, examined: 5 });
      assert.equal((await engine.runBulk({ action: 'cancel', filter })).changed, 3);
      const cancelled = (await engine.browseJobs({ state: 'cancelled' })).items.map((j) => j.id).sort();
      assert.deepEqual(cancelled, older);
      // Dead letters by reason and age: a residual filter of the dead list.
      const dead = await engine.browseJobs({ state: 'dead', deadReason: 'dead_lettered' });
      assert.deepEqual(dead.items, []);
      await assert.rejects(engine.browseJobs({ state: 'ready', deadReason: 'dead_lettered' }), /state dead/);
      await assert.rejects(engine.browseJobs({ enqueuedBeforeMs: -5 }), /enqueued_before_ms/);
    },
  },
  {
    name: "engine: a schedule's jobs by their keys — the list, its count and the bulk action agree",
    async run(h) {
      const { engine } = await h.engine();
      const t = Date.UTC(2026, 0, 1);
      const enqueue = async (idempotencyKey?: string) =>
        (
          await engine.enqueue({
            queue: 'mail',
            type: 'digest',
            payload: bytes('x'),
            ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
          })
        ).jobId;
      const made = [await enqueue(tickKey('day_1', t)), await enqueue(tickKey('day_1', t, true))];
      // Same queue and type, but not day_1's: no key, another schedule whose name starts with
      // "day_1:" (one that looks like a tick too), and `_` that a LIKE pattern would take as any character.
      await enqueue();
      await enqueue(tickKey('day_1:2026', t));
      await enqueue(tickKey('day_1:x', t, true));
      await enqueue(tickKey('dayX1', t));
      await enqueue(`schedule:day_1:${new Date(t).toISOString()}!`);
      const listed = await engine.browseJobs({ schedule: 'day_1', pageSize: 1 });
      assert.equal(listed.items.length, 1);
      const rest = await engine.browseJobs({ schedule: 'day_1', pageSize: 1, cursor: listed.nextCursor! });
      const ids = [...listed.items, ...rest.items].map((j) => j.id);
      assert.deepEqual(ids.sort(), [...made].sort());
      assert.equal(rest.nextCursor, null);
      const filter = { schedule: 'day_1' };
      assert.deepEqual(await engine.countJobs(filter), { matched: 2, exact: true, examined: 7 });
      assert.equal((await engine.runBulk({ action: 'cancel', filter })).changed, 2);
      const cancelled = (await engine.browseJobs({ state: 'cancelled' })).items.map((j) => j.id);
      assert.deepEqual(cancelled.sort(), [...made].sort());
      assert.equal((await engine.browseJobs({ schedule: 'nobody' })).items.length, 0);
      await assert.rejects(engine.browseJobs({ schedule: 'no such/name' }), /schedule/);
      await assert.rejects(async () => engine.countJobs({ schedule: '%' }), /schedule/);
    },
  },
  {
    name: 'engine: browse pages both ways with totals, search finds by id, a piece of one, and a key',
    async run(h) {
      const { engine } = await h.engine();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          (
            await engine.enqueue({
              queue: 'q',
              type: 'send',
              payload: bytes(String(i)),
              idempotencyKey: `key-${i}`,
            })
          ).jobId,
        );
      }
      const first = await engine.browseJobs({ queue: 'q', state: 'ready', pageSize: 2 });
      assert.deepEqual(
        first.items.map((j) => j.id),
        ids.slice(0, 2),
      );
      assert.equal(first.total, 5);
      const second = await engine.browseJobs({
        queue: 'q',
        state: 'ready',
        pageSize: 2,
        cursor: first.nextCursor!,
      });
      assert.deepEqual(
        second.items.map((j) => j.id),
        ids.slice(2, 4),
      );
      const back = await engine.browseJobs({
        queue: 'q',
        state: 'ready',
        pageSize: 2,
        cursor: second.prevCursor!,
      });
      assert.deepEqual(
        back.items.map((j) => j.id),
        ids.slice(0, 2),
      );
      assert.deepEqual(
        (await engine.searchJobs(ids[3]!)).items.map((j) => [j.id, j.matchedBy]),
        [[ids[3], 'id']],
      );
      const byKey = await engine.searchJobs('key-4');
      assert.deepEqual(
        byKey.items.map((j) => [j.id, j.matchedBy]),
        [[ids[4], 'idempotency_key']],
      );
      assert.equal(byKey.storedJobs, 5);
      const tail = ids[2]!.slice(-12);
      assert.ok((await engine.searchJobs(tail)).items.some((j) => j.id === ids[2]));
      const listed = await engine.listJobs({ queue: 'q', state: 'ready', pageSize: 3 });
      assert.deepEqual([listed.items.length, listed.total], [3, 5]);
      assert.deepEqual(await engine.findJobByIdempotencyKey('q', 'key-1'), { jobId: ids[1], stored: true });
    },
  },
];
