/**
 * Bulk operations in the store: each action on a slice of candidates changes
 * only those still in the slice's state that pass every residual filter; and
 * through the engine, an operation over many slices changes every match once
 * and leaves one audit entry with its count.
 */
import assert from 'node:assert/strict';
import { FakeClock } from '../../../../src/engine/clock.ts';
import type { BulkSlice } from '../../../../src/store/job-control.ts';
import { newJob, type StoreCase, storeJobs } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

const anyResidual = {
  errorText: null,
  metadata: null,
  groupKey: null,
  enqueuedFromMs: null,
  enqueuedBeforeMs: null,
  deadReason: null,
  retriesOnly: false,
  errorGroup: null,
  keyShapes: null,
} as const;

export const bulkCases: StoreCase[] = [
  {
    name: 'bulk in the store: each action changes the slice’s jobs still in its state that pass its filters',
    async run(h) {
      assert.equal(await h.store.read((view) => view.bulk.lastSeq()), 0);
      const jobs = [
        newJob('q', { type: 'a', metadata_json: '{"tenant":"t1"}', enqueued_at_ms: 1000 }),
        newJob('q', { type: 'a', metadata_json: '{"tenant":"t2"}', enqueued_at_ms: 2000, group_key: 'g' }),
        newJob('q', { type: 'b', state: 'scheduled', run_at_ms: 90_000, enqueued_at_ms: 3000 }),
        newJob('q', { type: 'b', state: 'scheduled', run_at_ms: 90_000, enqueued_at_ms: 4000 }),
        newJob('q', { type: 'c', enqueued_at_ms: 5000 }),
      ];
      await h.write((tx) => storeJobs(tx, jobs));
      const seqs = await h.store.read(function* (view) {
        const all: number[] = [];
        for (const job of jobs) all.push((yield* view.jobs.get(job.id))!.seq);
        return all;
      });
      assert.equal(await h.store.read((view) => view.bulk.lastSeq()), Math.max(...seqs));
      assert.equal(
        await h.store.read((view) => view.bulk.countOfType({ queue: 'q', state: 'ready', type: 'a' })),
        2,
      );
      const ready: BulkSlice = { ...anyResidual, seqs, state: 'ready' };
      const count = (slice: BulkSlice) => h.store.read((view) => view.bulk.countMatching(slice));
      assert.equal(await count(ready), 3);
      assert.equal(await count({ ...ready, metadata: { key: 'tenant', value: 't2' } }), 1);
      assert.equal(await count({ ...ready, groupKey: 'g' }), 1);
      assert.equal(await count({ ...ready, enqueuedFromMs: 2000, enqueuedBeforeMs: 5000 }), 1);
      assert.equal(await count({ ...ready, seqs: [] }), 0);

      // Priority of the ready jobs enqueued from 2000 on; a second pass changes none (already that priority).
      const from2000 = { ...ready, enqueuedFromMs: 2000 };
      assert.equal(await h.write((tx) => tx.bulk.setPriority({ ...from2000, priority: 7 })), 2);
      assert.equal(await h.write((tx) => tx.bulk.setPriority({ ...from2000, priority: 7 })), 0);
      assert.equal((await h.store.read((view) => view.jobs.get(jobs[4]!.id)))?.priority, 7);

      // Run now: the scheduled ones enqueued before 4000, with a priority.
      const scheduled: BulkSlice = { ...anyResidual, seqs, state: 'scheduled', enqueuedBeforeMs: 4000 };
      const ran = await h.write(function* (tx) {
        const n = yield* tx.bulk.runNow({ ...scheduled, nowMs: 6000, priority: 3 });
        yield* tx.counts.adjust({ queue: 'q', from: 'scheduled', to: 'ready', jobs: n });
        return n;
      });
      assert.equal(ran, 1);
      const nowReady = await h.store.read((view) => view.jobs.get(jobs[2]!.id));
      assert.deepEqual([nowReady?.state, nowReady?.run_at_ms, nowReady?.priority], ['ready', 6000, 3]);

      // A cancel request on the leased job; the slice's waiting jobs of tenant t1 cancelled.
      const leased = await h.write(function* (tx) {
        const rows = yield* tx.leases.leaseReady({
          queue: 'q',
          limit: 1,
          nowMs: 6000,
          leaseDeadlineMs: 36_000,
          maxLeaseDeadlineMs: 600_000,
          workerId: 'w',
          timeoutMs: null,
        });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: rows.length });
        return rows[0]!;
      });
      const leasedSlice: BulkSlice = { ...anyResidual, seqs, state: 'leased' };
      assert.equal(await count(leasedSlice), 1);
      const requested = await h.write((tx) =>
        tx.bulk.requestCancel({ ...leasedSlice, nowMs: 7000, by: 'key:ops' }),
      );
      assert.deepEqual(
        requested.map((r) => [r.id, r.attempt, r.worker_id]),
        [[leased.id, 1, 'w']],
      );
      assert.equal(await count(leasedSlice), 0, 'a leased job with a request no longer counts');
      assert.deepEqual(
        await h.write((tx) => tx.bulk.requestCancel({ ...leasedSlice, nowMs: 7000, by: null })),
        [],
      );

      const cancelled = await h.write(function* (tx) {
        const rows = yield* tx.bulk.cancelWaiting({
          ...ready,
          metadata: { key: 'tenant', value: 't2' },
          nowMs: 7000,
          by: null,
        });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'cancelled', jobs: rows.length });
        return rows;
      });
      assert.deepEqual(
        cancelled.map((r) => r.id),
        [jobs[1]!.id],
      );

      // Requeue the cancelled one; delete the rest of what is ready (never the leased one).
      const requeued = await h.write(function* (tx) {
        const n = yield* tx.bulk.requeue({ ...anyResidual, seqs, state: 'cancelled', nowMs: 8000 });
        yield* tx.counts.adjust({ queue: 'q', from: 'cancelled', to: 'ready', jobs: n });
        return n;
      });
      assert.equal(requeued, 1);
      const again = await h.store.read((view) => view.jobs.get(jobs[1]!.id));
      assert.deepEqual([again?.state, again?.run_at_ms, again?.cancelled_at_ms], ['ready', 8000, null]);
      const readyNow = await count(ready);
      const deleted = await h.write(function* (tx) {
        const rows = yield* tx.bulk.delete(ready);
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: null, jobs: rows.length });
        return rows;
      });
      assert.equal(deleted.length, readyNow);
      assert.ok(!deleted.some((r) => r.id === leased.id));
      assert.equal((await h.store.read((view) => view.jobs.get(leased.id)))?.state, 'leased');
    },
  },
  {
    name: 'engine: bulk operations over many slices change every match once, each with one audit entry',
    async run(h) {
      const { engine, clock } = await h.engine();
      const n = 700;
      for (let from = 0; from < n; from += 350) {
        await engine.enqueueBatch(
          Array.from({ length: 350 }, (_, i) => ({
            queue: 'q',
            type: (from + i) % 2 === 0 ? 'even' : 'odd',
            payload: bytes('x'),
            metadata: { tenant: (from + i) % 7 === 0 ? 't7' : 'other' },
            ...((from + i) % 5 === 0 ? { delayMs: 60_000 } : {}),
          })),
        );
      }
      const scheduled = n / 5;
      assert.deepEqual(
        await engine.countBulk('update', { queue: 'q', states: ['scheduled'] }, { runNow: true }),
        {
          matched: scheduled,
          exact: true,
          examined: 0,
        },
      );
      const audit = { actor: 'key:ops', action: 'jobs.update', target: 'queue:q' };
      const ran = await engine.runBulk({
        action: 'update',
        filter: { queue: 'q', states: ['scheduled'] },
        changes: { runNow: true, priority: 4 },
        audit,
      });
      assert.deepEqual([ran.state, ran.changed], ['done', scheduled]);
      // Dead letters with two errors; a requeue of those whose error contains one text, in any case.
      clock.advance(1000);
      for (;;) {
        const leased = await engine.reserve({ queues: ['q'], maxJobs: 100 });
        if (leased.length === 0) break;
        for (const j of leased) {
          await engine.nack({
            jobId: j.id,
            attempt: j.attempt,
            error: j.type === 'odd' ? 'SMTP timeout' : 'mailbox full',
            directive: { kind: 'dead_letter' },
          });
        }
      }
      const requeueAudit = { actor: 'key:ops', action: 'dead_letters.requeue_all', target: 'queue:q' };
      const requeued = await engine.requeueDeadLetters(
        { queue: 'q', all: true, errorText: 'smtp' },
        requeueAudit,
      );
      assert.equal(requeued, n / 2);
      const deleted = await engine.runBulk({
        action: 'delete',
        filter: { queue: 'q', states: ['dead'], metadata: { key: 'tenant', value: 't7' } },
        audit: { actor: 'key:ops', action: 'jobs.delete', target: 'queue:q' },
      });
      const t7Even = Array.from({ length: n }, (_, i) => i).filter((i) => i % 7 === 0 && i % 2 === 0).length;
      assert.equal(deleted.changed, t7Even);
      const cancelled = await engine.cancelJobs({ queue: 'q', type: 'odd' });
      assert.deepEqual(cancelled, { cancelled: n / 2, cancelRequested: 0 });
      const [q] = await engine.listQueues();
      assert.deepEqual([q?.counts.ready, q?.counts.dead, q?.counts.cancelled], [0, n / 2 - t7Even, n / 2]);
      for (const [action, changed] of [
        ['jobs.update', scheduled],
        ['dead_letters.requeue_all', n / 2],
        ['jobs.delete', t7Even],
      ] as const) {
        const entries = (await engine.listAudit({ action })).items;
        assert.equal(entries.length, 1, action);
        assert.deepEqual([entries[0]?.details.changed, entries[0]?.details.done], [changed, true], action);
      }
    },
  },
  {
    name: 'bulk request keys in the store: one row holds a key of an actor until its window ends',
    async run(h) {
      const claim = (actor: string, operationId: string, nowMs: number, requestKey = 'k1') =>
        h.write((tx) =>
          tx.bulk.claimKey({
            actor,
            requestKey,
            operationId,
            requestJson: `{"op":"${operationId}"}`,
            nowMs,
            validFromMs: nowMs - 1000,
          }),
        );
      const first = { operation_id: 'op-1', request_json: '{"op":"op-1"}', started_at_ms: 5000 };
      assert.deepEqual(await claim('key:a', 'op-1', 5000), first);
      // Within the window the first start holds the key; another actor's key of the same name is its own.
      assert.deepEqual(await claim('key:a', 'op-2', 5500), first);
      assert.equal((await claim('key:b', 'op-3', 5600)).operation_id, 'op-3');
      // After the window the key is free again: a new start takes it over.
      assert.deepEqual(await claim('key:a', 'op-4', 6001), {
        operation_id: 'op-4',
        request_json: '{"op":"op-4"}',
        started_at_ms: 6001,
      });
      // A later start deletes expired rows of other keys (key:b's, started at 5600): it is free then too.
      await claim('key:c', 'op-5', 9000, 'other');
      assert.equal((await claim('key:b', 'op-6', 9001)).operation_id, 'op-6');
    },
  },
  {
    name: 'engine: a repeated keyed start answers with the first operation, one audit entry; another request is refused',
    async run(h) {
      let { engine, clock } = await h.engine();
      await engine.enqueueBatch(
        Array.from({ length: 20 }, () => ({ queue: 'q', type: 't', payload: bytes('x') })),
      );
      const audit = { actor: 'key:ops', action: 'jobs.delete', target: 'queue:q' };
      const request = {
        action: 'delete' as const,
        filter: { queue: 'q', states: ['ready' as const] },
        audit,
        requestKey: 'retry-1',
      };
      // The first and its repeat while it starts, and a repeat after it ended: one operation.
      const [a, b] = await Promise.all([engine.startBulk(request), engine.startBulk(request)]);
      assert.equal(b.id, a.id);
      const ended = await engine.runBulk(request);
      assert.deepEqual([ended.id, ended.state, ended.changed], [a.id, 'done', 20]);
      assert.equal(engine.listBulkOperations().length, 1);
      const entries = (await engine.listAudit({ action: 'jobs.delete' })).items;
      assert.deepEqual(
        entries.map((e) => e.details.operationId),
        [a.id],
      );
      // The same key with another filter, or another audit action: invalid_argument, nothing started.
      await assert.rejects(
        engine.startBulk({ ...request, filter: { queue: 'q', states: ['dead'] } }),
        (e: unknown) =>
          (e as { code?: string }).code === 'invalid_argument' && /another request/.test(String(e)),
      );
      await assert.rejects(engine.startBulk({ ...request, audit: { ...audit, action: 'queue.purge' } }), {
        code: 'invalid_argument',
      });
      // Another actor's key of the same name is its own; a key outside the bounds is refused.
      const other = await engine.startBulk({ ...request, audit: { ...audit, actor: 'key:other' } });
      assert.notEqual(other.id, a.id);
      await assert.rejects(engine.startBulk({ ...request, requestKey: 'no spaces' }), {
        code: 'invalid_argument',
      });
      await assert.rejects(engine.startBulk({ ...request, requestKey: 'k'.repeat(129) }), {
        code: 'invalid_argument',
      });
      // After a restart the key still holds, but the operation is gone: failed_precondition, nothing started.
      const restartedAtMs = clock.nowMs();
      ({ engine, clock } = await h.engine({ clock }));
      await assert.rejects(engine.startBulk(request), (e: unknown) => {
        const { code, message } = e as { code?: string; message: string };
        return code === 'failed_precondition' && message.includes(a.id);
      });
      assert.equal(engine.listBulkOperations().length, 0);
      // After the key's window (24 hours; a server restarted that much later) the key starts a new operation.
      ({ engine } = await h.engine({ clock: new FakeClock(restartedAtMs + 24 * 60 * 60 * 1000 + 1) }));
      const again = await engine.runBulk(request);
      assert.notEqual(again.id, a.id);
      assert.equal((await engine.listAudit({ action: 'jobs.delete' })).items.length, 3);
    },
  },
];
