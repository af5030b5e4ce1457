/** Job control: cancel (waiting jobs at once, leased ones by request), and the bulk forms by slices. */
import assert from 'node:assert/strict';
import { SeppError } from '../../../../src/engine/errors.ts';
import { newJob, type StoreCase, storeJobs } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

export const controlCases: StoreCase[] = [
  {
    name: 'cancel in the store: waiting jobs at once, a leased one by a request that its end completes',
    async run(h) {
      const jobs = [newJob('q', { type: 'a' }), newJob('q', { type: 'b', group_key: 'g' }), newJob('q')];
      await h.write((tx) => storeJobs(tx, jobs));
      const [waiting, grouped, leased] = jobs;
      const leasedRow = await h.write(function* (tx) {
        const row = yield* tx.jobs.control(waiting!.id);
        yield* tx.control.cancelWaiting({ seq: row!.seq, nowMs: 2000, by: 'key:ops' });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'cancelled', jobs: 1 });
        const rows = yield* tx.leases.leaseReady({
          queue: 'q',
          limit: 5,
          nowMs: 2000,
          leaseDeadlineMs: 32_000,
          maxLeaseDeadlineMs: 600_000,
          workerId: 'w',
          timeoutMs: null,
        });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: rows.length });
        return rows[0];
      });
      assert.equal(leasedRow?.id, leased!.id);
      const cancelled = await h.store.read((view) => view.jobs.get(waiting!.id));
      assert.deepEqual(
        [cancelled?.state, cancelled?.cancelled_at_ms, cancelled?.cancelled_by],
        ['cancelled', 2000, 'key:ops'],
      );
      // A request on the leased job: it stays leased, and an ack of it matches nothing.
      await h.write(function* (tx) {
        const row = yield* tx.jobs.control(leased!.id);
        yield* tx.control.requestCancel({ seq: row!.seq, nowMs: 2500, by: null });
      });
      assert.equal((await h.store.read((view) => view.jobs.get(leased!.id)))?.state, 'leased');
      assert.equal(await h.write((tx) => tx.leases.ack({ jobId: leased!.id, attempt: 1 })), undefined);
      await h.write(function* (tx) {
        const row = yield* tx.jobs.attempt(leased!.id);
        assert.equal(row?.cancelled_at_ms, 2500);
        yield* tx.leases.finishCancelled({ seq: row!.seq, lastError: 'stopped', errorsJson: null });
        yield* tx.counts.adjust({ queue: 'q', from: 'leased', to: 'cancelled', jobs: 1 });
      });
      const ended = await h.store.read((view) => view.jobs.get(leased!.id));
      assert.deepEqual([ended?.state, ended?.last_error], ['cancelled', 'stopped']);
      // The bulk form changes the slice's candidates that are still in the state and pass its filters.
      const seqs = await h.store.read(function* (view) {
        const all = [];
        for (const job of jobs) all.push((yield* view.jobs.get(job.id))!.seq);
        return all;
      });
      const slice = {
        seqs,
        state: 'ready',
        errorText: null,
        metadata: null,
        groupKey: 'g',
        enqueuedFromMs: null,
        enqueuedBeforeMs: null,
        deadReason: null,
        retriesOnly: false,
        errorGroup: null,
        keyShapes: null,
      };
      assert.equal(await h.store.read((view) => view.bulk.countMatching(slice)), 1);
      assert.equal(await h.store.read((view) => view.bulk.countMatching({ ...slice, groupKey: null })), 1);
      const rows = await h.write(function* (tx) {
        const changed = yield* tx.bulk.cancelWaiting({ ...slice, nowMs: 3000, by: null });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'cancelled', jobs: changed.length });
        return changed;
      });
      assert.deepEqual(
        rows.map((r) => [r.id, r.type, r.attempt]),
        [[grouped!.id, 'b', 0]],
      );
    },
  },
  {
    name: 'engine: a cancelled leased job is never completed nor retried; its key is free again',
    async run(h) {
      const { engine } = await h.engine();
      const { jobId } = await engine.enqueue({
        queue: 'q',
        type: 't',
        payload: bytes('x'),
        idempotencyKey: 'k',
      });
      const [lease] = await engine.reserve({ queues: ['q'] });
      assert.deepEqual(await engine.cancel(jobId), { previousState: 'leased', state: 'leased' });
      const refused = await engine.ack({ jobId, attempt: lease!.attempt }).catch((e: unknown) => e);
      assert.ok(refused instanceof SeppError && refused.code === 'job_cancelled');
      assert.equal((await engine.getJob(jobId)).state, 'cancelled');
      const again = await engine.enqueue({ queue: 'q', type: 't', payload: bytes('y'), idempotencyKey: 'k' });
      assert.notEqual(again.jobId, jobId);
      assert.deepEqual(await engine.cancelJobs({ queue: 'q' }), { cancelled: 1, cancelRequested: 0 });
      assert.equal(await engine.countCancellable({ queue: 'q' }), 0);
    },
  },
];
