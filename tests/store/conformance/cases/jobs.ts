/** Storing jobs: order, reads, idempotency keys and what an enqueue's uniqueness means. */
import assert from 'node:assert/strict';
import { SeppError } from '../../../../src/engine/errors.ts';
import type { NewJobRow } from '../../../../src/store/rows.ts';
import { newJob, type StoreCase, storeJobs } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const jobCases: StoreCase[] = [
  {
    name: 'jobs: rows are stored in the order given, read back whole, and counted',
    async run(h) {
      const jobs = [
        newJob('q', { priority: 3, metadata_json: '{"a":"1"}' }),
        newJob('q', { state: 'scheduled', run_at_ms: 9000 }),
        newJob('other', { group_key: 'g', idempotency_key: 'k' }),
      ];
      await h.write((tx) => storeJobs(tx, jobs));
      const rows = await h.store.read(function* (view) {
        const found = [];
        for (const job of jobs) found.push(yield* view.jobs.get(job.id));
        return found;
      });
      const seqs = rows.map((row) => row?.seq ?? -1);
      assert.deepEqual(
        [...seqs].sort((a, b) => a - b),
        seqs,
        'seq follows the order given',
      );
      for (const [i, row] of rows.entries()) {
        const job = jobs[i]!;
        assert.ok(row !== undefined);
        assert.equal(row.id, job.id);
        assert.equal(row.state, job.state);
        assert.equal(row.priority, job.priority);
        assert.deepEqual(new Uint8Array(row.payload), job.payload);
        assert.equal(row.metadata_json, job.metadata_json);
        assert.equal(row.group_key, job.group_key);
        assert.equal(row.attempt, 0);
      }
      const counts = await h.store.read((view) => view.counts.all());
      const of = (queue: string, state: string) =>
        counts.find((c) => c.queue === queue && c.state === state)?.jobs ?? 0;
      assert.deepEqual([of('q', 'ready'), of('q', 'scheduled'), of('other', 'ready')], [1, 1, 1]);
      assert.equal(await h.store.read((view) => view.counts.total()), 3);
      assert.equal(await h.store.read((view) => view.counts.unfinished('q')), 2);
      assert.equal(await h.store.read((view) => view.jobs.get('no-such-job')), undefined);
      const summaries = await h.store.read((view) => view.jobs.summaries(seqs));
      assert.deepEqual(
        summaries.map((s) => [s.id, s.payload_bytes]).sort(),
        jobs.map((j) => [j.id, j.payload.byteLength]).sort(),
      );
    },
  },
  {
    name: 'jobs: every field read back as given, whether a batch has optional fields in no row, some or all',
    async run(h) {
      const optional: Partial<NewJobRow> = {
        metadata_json: '{"m":"1"}',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        tracestate: 'k=v',
        idempotency_key: 'key',
        lease_ms: 7000,
        expires_at_ms: 99_000,
        group_key: 'g',
        timeout_ms: 8000,
      };
      const batches = [
        [newJob('q'), newJob('q', { state: 'scheduled', run_at_ms: 5000 })],
        // One optional field per job, after a job with none (and before one).
        [
          newJob('q'),
          ...Object.entries(optional).map(([field, value]) => newJob('q', { [field]: value })),
          newJob('q'),
        ],
        [newJob('q', optional), newJob('q', { ...optional, dependency_flags: 0 })],
        // Creators (a key's jobs) without and with optional fields, next to a job without one,
        // and next to a job of a flow.
        [newJob('q', { created_by: 'k1' }), newJob('q')],
        [newJob('q'), newJob('q', { ...optional, idempotency_key: 'key2', created_by: 'k2' })],
        [newJob('q', { created_by: 'k3' }), newJob('q', { flow_name: 'step', created_by: null })],
      ];
      for (const batch of batches) await h.write((tx) => storeJobs(tx, batch));
      for (const job of batches.flat()) {
        const row = await h.store.read((view) => view.jobs.get(job.id));
        assert.ok(row !== undefined, job.id);
        for (const [field, value] of Object.entries(job)) {
          // Not in a JobRow: the flags are the dependencies' cases', lease_ms the lease case's
          // (through a lease), flow_name the flow cases'; created_by is read below.
          if (['dependency_flags', 'lease_ms', 'flow_name', 'created_by'].includes(field)) continue;
          const stored: unknown =
            field === 'payload' ? new Uint8Array(row.payload) : row[field as keyof typeof row];
          assert.deepEqual(stored, value, `${job.id}.${field}`);
        }
      }
      const ids = batches.flat().map((job) => job.id);
      const targets = await h.store.read((view) => view.dependencies!.targets(ids));
      assert.deepEqual(
        new Map(targets.map((t) => [t.id, t.created_by])),
        new Map(batches.flat().map((job) => [job.id, job.created_by ?? null])),
      );
    },
  },
  {
    name: 'idempotency keys: remembered for a window, released only by the job they name, swept when due',
    async run(h) {
      const [a, b] = [newJob('q', { idempotency_key: 'k' }), newJob('q', { idempotency_key: 'k' })];
      await h.write(function* (tx) {
        yield* storeJobs(tx, [a!, b!]);
        yield* tx.keys.remember({ queue: 'q', key: 'k', jobId: a!.id, expiresAtMs: 5000 });
      });
      const remembered = () => h.store.read((view) => view.keys.remembered({ queue: 'q', key: 'k' }));
      assert.deepEqual(await remembered(), { job_id: a!.id, expires_at_ms: 5000 });
      // The newest job holding the key, whatever the window says.
      assert.equal(await h.store.read((view) => view.keys.newestJob({ queue: 'q', key: 'k' })), b!.id);
      assert.equal(await h.store.read((view) => view.keys.activeJob({ queue: 'q', key: 'k' })), b!.id);
      // Releasing for another job changes nothing; for its own job the key goes.
      await h.write((tx) => tx.keys.release({ queue: 'q', key: 'k', jobId: b!.id }));
      assert.equal((await remembered())?.job_id, a!.id);
      await h.write((tx) => tx.keys.remember({ queue: 'q', key: 'k', jobId: b!.id, expiresAtMs: 6000 }));
      assert.deepEqual(await remembered(), { job_id: b!.id, expires_at_ms: 6000 }, 'remember replaces');
      assert.equal(await h.write((tx) => tx.keys.sweep({ nowMs: 5999, limit: 10 })), 0);
      assert.equal(await h.write((tx) => tx.keys.sweep({ nowMs: 6000, limit: 10 })), 1);
      assert.equal(await remembered(), undefined);
    },
  },
  {
    name: 'enqueue: a key is a duplicate within its window and while its job is unfinished, unique-while-active only then',
    async run(h) {
      const { engine, clock } = await h.engine({
        options: { queues: { w: { dedupWindowMs: 10_000 }, u: { dedupWindowMs: 0 } } },
      });
      const first = await engine.enqueue({ queue: 'w', type: 't', payload: bytes('1'), idempotencyKey: 'k' });
      const again = await engine.enqueue({ queue: 'w', type: 't', payload: bytes('2'), idempotencyKey: 'k' });
      assert.deepEqual(again, { ok: true, jobId: first.jobId, deduplicated: true });
      const [leased] = await engine.reserve({ queues: ['w'] });
      await engine.ack({ jobId: leased!.id, attempt: leased!.attempt });
      // Completed (and deleted): the window still remembers the key.
      assert.equal(
        (await engine.enqueue({ queue: 'w', type: 't', payload: bytes('3'), idempotencyKey: 'k' })).jobId,
        first.jobId,
      );
      clock.advance(10_000);
      const fresh = await engine.enqueue({ queue: 'w', type: 't', payload: bytes('4'), idempotencyKey: 'k' });
      assert.equal(fresh.deduplicated, false, 'a new job once the window passed');

      const active = {
        queue: 'u',
        type: 't',
        payload: bytes('x'),
        idempotencyKey: 'one',
        uniqueWhileActive: true,
      };
      const held = await engine.enqueue(active);
      assert.equal((await engine.enqueue(active)).jobId, held.jobId, 'a duplicate while the job waits');
      const [running] = await engine.reserve({ queues: ['u'] });
      assert.equal((await engine.enqueue(active)).jobId, held.jobId, 'and while it runs');
      await engine.ack({ jobId: running!.id, attempt: running!.attempt });
      assert.notEqual((await engine.enqueue(active)).jobId, held.jobId, 'free once it completed');

      // In one batch: the second job with a key is the first's duplicate.
      const batch = await engine.enqueueBatch([
        { queue: 'w', type: 't', payload: bytes('a'), idempotencyKey: 'batch' },
        { queue: 'w', type: 't', payload: bytes('b'), idempotencyKey: 'batch' },
      ]);
      assert.ok(batch[0]?.ok && batch[1]?.ok);
      assert.equal(batch[1].jobId, batch[0].jobId);
      assert.equal(batch[1].deduplicated, true);
      // All or nothing: a rejection stores none of the batch.
      const atomic = await engine.enqueueAtomic([
        { queue: 'w', type: 't', payload: bytes('c') },
        { queue: 'bad name', type: 't', payload: bytes('d') },
      ]);
      assert.equal(atomic.committed, false);
      assert.equal((await engine.listQueues()).find((q) => q.name === 'w')?.counts.ready, 2);
    },
  },
  {
    name: 'enqueue: debounce — a waiting job absorbs later enqueues with its key up to its cap; a leased one does not',
    async run(h) {
      const { engine, clock } = await h.engine();
      const t0 = clock.nowMs();
      const debounced = (payload: string) => ({
        queue: 'q',
        type: 't',
        payload: bytes(payload),
        debounceKey: 'doc',
        debounceMs: 1000,
        debounceMaxMs: 1500,
      });
      const first = await engine.enqueue(debounced('1'));
      clock.advance(400);
      const second = await engine.enqueue(debounced('2'));
      assert.deepEqual(second, { ok: true, jobId: first.jobId, deduplicated: false, debounced: true });
      let info = await engine.getJob(first.jobId);
      assert.deepEqual(
        [
          Buffer.from(info.payload).toString(),
          info.state,
          info.runAtMs,
          info.debounceKey,
          info.debounceUntilMs,
        ],
        ['2', 'scheduled', t0 + 1400, 'doc', t0 + 1500],
      );
      clock.advance(400);
      await engine.enqueue(debounced('3'));
      info = await engine.getJob(first.jobId);
      assert.equal(info.runAtMs, t0 + 1500, 'never past the cap');
      clock.advance(700);
      await engine.runMaintenance();
      const [leased] = await engine.reserve({ queues: ['q'] });
      assert.equal(leased?.id, first.jobId);
      assert.equal(Buffer.from(leased!.payload).toString(), '3');
      const fresh = await engine.enqueue(debounced('4'));
      assert.notEqual(fresh.jobId, first.jobId, 'a leased job absorbs nothing');
      assert.equal((await engine.listQueues()).find((q) => q.name === 'q')?.counts.scheduled, 1);
    },
  },
  {
    name: 'enqueue: max_depth counts the queue from the store, this batch included',
    async run(h) {
      const { engine } = await h.engine({ options: { queues: { d: { maxDepth: 2 } } } });
      const results = await engine.enqueueBatch(
        [1, 2, 3].map((i) => ({ queue: 'd', type: 't', payload: bytes(String(i)) })),
      );
      assert.deepEqual(
        results.map((r) => (r.ok ? 'ok' : r.reason)),
        ['ok', 'ok', 'queue_full'],
      );
      const refused = await engine.enqueue({ queue: 'd', type: 't', payload: bytes('4') }).catch((e) => e);
      assert.ok(refused instanceof SeppError && refused.code === 'resource_exhausted');
    },
  },
];
