/** Leases and their settlements: order, fencing by attempt, expiry. */
import assert from 'node:assert/strict';
import { SeppError } from '../../../../src/engine/errors.ts';
import type { LeasedRow } from '../../../../src/store/rows.ts';
import { leaseAt, newJob, type StoreCase, storeJobs } from '../harness.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id).sort();

export const leaseCases: StoreCase[] = [
  {
    name: 'lease: the ready jobs without a group, by priority, then due time, then enqueue order',
    async run(h) {
      const jobs = [
        newJob('q', { priority: 1, run_at_ms: 500 }),
        newJob('q', { priority: 5, run_at_ms: 900 }),
        newJob('q', { priority: 5, run_at_ms: 100 }),
        newJob('q', { priority: 5, run_at_ms: 100 }),
        newJob('q', { priority: 9, state: 'scheduled', run_at_ms: 50 }),
        newJob('q', { priority: 9, group_key: 'g' }),
        newJob('other', { priority: 9 }),
      ];
      const [low, lateHigh, early1, early2] = jobs;
      await h.write((tx) => storeJobs(tx, jobs));
      const lease = (limit: number) =>
        h.write(function* (tx) {
          const rows = yield* tx.leases.leaseReady({ ...leaseAt(2000), queue: 'q', limit });
          yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: rows.length });
          return rows;
        });
      assert.deepEqual(
        ids(await lease(2)),
        ids([early1!, early2!]),
        'priority 5 first, the earlier due, FIFO',
      );
      assert.deepEqual(
        ids(await lease(5)),
        ids([lateHigh!, low!]),
        'then the rest; no scheduled, grouped or other',
      );
      assert.deepEqual(await lease(5), []);
    },
  },
  {
    name: 'lease: a payload comes back byte for byte: empty, every byte value, and long',
    async run(h) {
      const every = Uint8Array.from({ length: 256 }, (_, i) => i);
      const long = Uint8Array.from({ length: 5000 }, (_, i) => (i * 7) % 256);
      const jobs = [new Uint8Array(0), every, long].map((payload) => newJob('q', { payload }));
      await h.write((tx) => storeJobs(tx, jobs));
      const rows: LeasedRow[] = await h.write(function* (tx) {
        const leased = yield* tx.leases.leaseReady({ ...leaseAt(2000), queue: 'q', limit: 3 });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
        return leased;
      });
      const byId = new Map(rows.map((r) => [r.id, new Uint8Array(r.payload)]));
      assert.deepEqual(
        jobs.map((j) => byId.get(j.id)),
        jobs.map((j) => j.payload),
      );
    },
  },
  {
    name: 'lease: sets the attempt, the deadline (a job’s own lease_ms within the maximum) and the worker',
    async run(h) {
      const plain = newJob('q');
      const long = newJob('q', { lease_ms: 120_000 });
      const tooLong = newJob('q', { lease_ms: 10_000_000 });
      await h.write((tx) => storeJobs(tx, [plain, long, tooLong]));
      const rows: LeasedRow[] = await h.write(function* (tx) {
        const leased = yield* tx.leases.leaseReady({ ...leaseAt(2000, 'w-1'), queue: 'q', limit: 3 });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
        return leased;
      });
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.equal(byId.get(plain.id)?.lease_deadline_ms, 32_000);
      assert.equal(byId.get(long.id)?.lease_deadline_ms, 122_000);
      assert.equal(byId.get(tooLong.id)?.lease_deadline_ms, 602_000, 'capped at maxLeaseDeadlineMs');
      assert.ok(rows.every((r) => r.attempt === 1));
      assert.deepEqual(new Uint8Array(byId.get(plain.id)!.payload), plain.payload);
      const holders = await h.store.read((view) => view.leases.holders());
      assert.deepEqual(
        holders.map((x) => [x.worker_id, x.jobs, x.since_ms]),
        [['w-1', 3, 2000]],
      );
      assert.equal(await h.store.read((view) => view.leases.nextDeadlineMs()), 32_000);
    },
  },
  {
    name: 'lease: a hard timeout (the job’s own, else the queue’s) sets timeout_at_ms and caps the deadline; the expiry pass meets it',
    async run(h) {
      const own = newJob('q', { timeout_ms: 5000 });
      const byQueue = newJob('q');
      const longer = newJob('q', { timeout_ms: 60_000 });
      const plain = newJob('p');
      await h.write((tx) => storeJobs(tx, [own, byQueue, longer, plain]));
      const rows: LeasedRow[] = await h.write(function* (tx) {
        const leased = yield* tx.leases.leaseReady({ ...leaseAt(2000, 'w', 8000), queue: 'q', limit: 3 });
        const other = yield* tx.leases.leaseReady({ ...leaseAt(2000), queue: 'p', limit: 1 });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
        yield* tx.counts.adjust({ queue: 'p', from: 'ready', to: 'leased', jobs: other.length });
        return [...leased, ...other];
      });
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.deepEqual(
        [own, byQueue, longer, plain].map((j) => [
          byId.get(j.id)?.timeout_at_ms,
          byId.get(j.id)?.lease_deadline_ms,
        ]),
        [
          [7000, 7000],
          [10_000, 10_000],
          [62_000, 32_000],
          [null, 32_000],
        ],
        '[timeout_at_ms, lease_deadline_ms]: the lease ends at the timeout when that comes first',
      );
      const attempt = await h.store.read((view) => view.jobs.attempt(own.id));
      assert.equal(attempt?.timeout_at_ms, 7000);
      assert.equal(attempt?.worker_id, 'w');
      const expired = await h.write((tx) => tx.leases.expired({ nowMs: 10_000, limit: 10 }));
      assert.deepEqual(
        expired.map((r) => [r.id, r.timeout_at_ms]),
        [
          [own.id, 7000],
          [byQueue.id, 10_000],
        ],
      );
      const stored = await h.store.read((view) => view.jobs.get(own.id));
      assert.equal(stored?.timeout_ms, 5000);
    },
  },
  {
    name: 'settle: ack, complete, extend, progress, retry and fail are fenced by the attempt',
    async run(h) {
      const jobs = [newJob('q'), newJob('q'), newJob('q'), newJob('q')];
      await h.write((tx) => storeJobs(tx, jobs));
      await h.write(function* (tx) {
        const leased = yield* tx.leases.leaseReady({ ...leaseAt(2000), queue: 'q', limit: 4 });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
      });
      const [acked, completed, failed, many] = jobs;
      // A stale attempt matches nothing and changes nothing.
      assert.equal(await h.write((tx) => tx.leases.ack({ jobId: acked!.id, attempt: 2 })), undefined);
      const deleted = await h.write(function* (tx) {
        const row = yield* tx.leases.ack({ jobId: acked!.id, attempt: 1 });
        if (row !== undefined)
          yield* tx.counts.adjust({ queue: row.queue, from: 'leased', to: null, jobs: 1 });
        return row;
      });
      // With when its attempt was due and began (the job history's wait and run time).
      assert.deepEqual(deleted, {
        queue: 'q',
        type: 't',
        run_at_ms: 1000,
        leased_at_ms: 2000,
        worker_id: 'w',
      });
      assert.equal(await h.store.read((view) => view.jobs.get(acked!.id)), undefined);
      // Progress and extend of the live lease, refused for another attempt.
      const progress = await h.write((tx) =>
        tx.leases.reportProgress({ jobId: completed!.id, attempt: 1, percent: 40, json: null, nowMs: 2500 }),
      );
      assert.deepEqual(progress, { progress_percent: 40, progress_json: null });
      assert.equal(
        await h.write((tx) =>
          tx.leases.reportProgress({
            jobId: completed!.id,
            attempt: 7,
            percent: 50,
            json: null,
            nowMs: 2500,
          }),
        ),
        undefined,
      );
      await h.write((tx) => tx.leases.extend({ jobId: completed!.id, attempt: 1, leaseDeadlineMs: 90_000 }));
      await h.write((tx) => tx.leases.extend({ jobId: completed!.id, attempt: 3, leaseDeadlineMs: 1 }));
      assert.equal((await h.store.read((view) => view.jobs.get(completed!.id)))?.lease_deadline_ms, 90_000);
      await h.write(function* (tx) {
        yield* tx.leases.complete({
          jobId: completed!.id,
          attempt: 1,
          nowMs: 3000,
          result: bytes('done'),
          resultContentType: 'text/plain',
        });
        yield* tx.counts.adjust({ queue: 'q', from: 'leased', to: 'completed', jobs: 1 });
      });
      const done = await h.store.read((view) => view.jobs.get(completed!.id));
      assert.equal(done?.state, 'completed');
      assert.deepEqual(new Uint8Array(done!.result!), bytes('done'));
      assert.equal(done?.completed_at_ms, 3000);
      // A failed attempt: retried (scheduled), then failed for good.
      await h.write(function* (tx) {
        const row = yield* tx.jobs.attempt(failed!.id);
        assert.equal(row?.attempt, 1);
        yield* tx.leases.retry({
          seq: row!.seq,
          state: 'scheduled',
          runAtMs: 9000,
          lastError: 'e1',
          lastErrorClass: 'E1',
          errorsJson: '[]',
        });
        yield* tx.counts.adjust({ queue: 'q', from: 'leased', to: 'scheduled', jobs: 1 });
      });
      const retried = await h.store.read((view) => view.jobs.get(failed!.id));
      assert.deepEqual(
        [retried?.state, retried?.run_at_ms, retried?.lease_deadline_ms],
        ['scheduled', 9000, null],
      );
      await h.write(function* (tx) {
        yield* tx.leases.fail({
          seq: retried!.seq,
          deadReason: 'attempts_exhausted',
          nowMs: 9500,
          lastError: 'e2',
          lastErrorClass: null,
          errorsJson: '[]',
        });
        yield* tx.counts.adjust({ queue: 'q', from: 'scheduled', to: 'dead', jobs: 1 });
      });
      const dead = await h.store.read((view) => view.jobs.get(failed!.id));
      assert.deepEqual(
        [dead?.state, dead?.dead_reason, dead?.failed_at_ms],
        ['dead', 'attempts_exhausted', 9500],
      );
      // ackMany deletes the matching ones only.
      const gone = await h.write(function* (tx) {
        const deleted = yield* tx.leases.ackMany([
          { jobId: many!.id, attempt: 1 },
          { jobId: dead!.id, attempt: 1 },
        ]);
        yield* tx.counts.adjust({ queue: 'q', from: 'leased', to: null, jobs: deleted.length });
        return deleted;
      });
      assert.deepEqual(gone, [
        { id: many!.id, queue: 'q', type: 't', run_at_ms: 1000, leased_at_ms: 2000, worker_id: 'w' },
      ]);
    },
  },
  {
    name: 'expiry: leases past their deadline come earliest first; expired waiting jobs likewise',
    async run(h) {
      const jobs = [
        newJob('q', { lease_ms: 50_000 }),
        newJob('q'),
        newJob('q', { expires_at_ms: 4000 }),
        newJob('q', { expires_at_ms: 3000, state: 'scheduled', run_at_ms: 8000 }),
      ];
      await h.write(function* (tx) {
        yield* storeJobs(tx, jobs.slice(0, 2));
        const leased = yield* tx.leases.leaseReady({ ...leaseAt(1000), queue: 'q', limit: 2 });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
        yield* storeJobs(tx, jobs.slice(2));
      });
      const expired = (nowMs: number) => h.store.read((view) => view.leases.expired({ nowMs, limit: 10 }));
      assert.deepEqual(await expired(30_999), []);
      assert.deepEqual(
        (await expired(60_000)).map((r) => r.id),
        [jobs[1]!.id, jobs[0]!.id],
        'earliest deadline first',
      );
      assert.deepEqual(
        (await expired(60_000)).map((r) => r.attempt),
        [1, 1],
      );
      assert.equal(await h.store.read((view) => view.control.nextExpiryMs()), 3000);
      const waiting = await h.store.read((view) => view.control.expiredWaiting({ nowMs: 5000, limit: 10 }));
      assert.deepEqual(
        waiting.map((r) => [r.id, r.state, r.expires_at_ms]),
        [
          [jobs[3]!.id, 'scheduled', 3000],
          [jobs[2]!.id, 'ready', 4000],
        ],
      );
      await h.write(function* (tx) {
        yield* tx.control.expire({ seq: waiting[0]!.seq, nowMs: 5000, error: 'expired', undoLease: false });
        yield* tx.counts.adjust({ queue: 'q', from: 'scheduled', to: 'dead', jobs: 1 });
      });
      const dead = await h.store.read((view) => view.jobs.get(jobs[3]!.id));
      assert.deepEqual([dead?.state, dead?.dead_reason, dead?.last_error], ['dead', 'expired', 'expired']);
    },
  },
  {
    name: 'engine: a stale attempt is lease_lost, an ended lease not_found; an expired lease is retried',
    async run(h) {
      const { engine, clock } = await h.engine();
      const { jobId } = await engine.enqueue({ queue: 'q', type: 't', payload: bytes('x') });
      const [first] = await engine.reserve({ queues: ['q'], leaseMs: 10_000 });
      clock.advance(10_000);
      await engine.runMaintenance();
      const [second] = await engine.reserve({ queues: ['q'] });
      assert.equal(second?.id, jobId);
      assert.equal(second?.attempt, 2, 'the attempt is the fencing token');
      const stale = await engine.ack({ jobId, attempt: first!.attempt }).catch((e: unknown) => e);
      assert.ok(stale instanceof SeppError && stale.code === 'lease_lost');
      await engine.extend({ jobId, attempt: 2, leaseMs: 5000 });
      await engine.ack({ jobId, attempt: 2 });
      const ended = await engine.nack({ jobId, attempt: 2, error: 'late' }).catch((e: unknown) => e);
      assert.ok(ended instanceof SeppError && ended.code === 'not_found');
    },
  },
  ...(['undo', 'give back'] as const).map(undoCase),
  {
    name: 'engine: an undone lease counts no attempt, frees max_leased and group_max_leased, wakes a long-poll',
    async run(h) {
      const { engine } = await h.engine({ options: { queues: { q: { maxLeased: 1, groupMaxLeased: 1 } } } });
      const { jobId } = await engine.enqueue({
        queue: 'q',
        type: 't',
        payload: bytes('x'),
        group: 'g',
        maxAttempts: 1,
      });
      await engine.enqueue({ queue: 'q', type: 't', payload: bytes('y'), group: 'g' });
      const [first] = await engine.reserve({ queues: ['q'], workerId: 'w-1' });
      assert.deepEqual([first?.id, first?.attempt], [jobId, 1]);
      // Held back by max_leased until the lease is undone, then handed the job.
      const waiting = engine.reserve({ queues: ['q'], waitMs: 60_000 });
      const throttled = async () => (await engine.listQueues()).find((x) => x.name === 'q')?.throttledWorkers;
      for (let barriers = 0; (await throttled()) !== 1; barriers++) {
        assert.ok(barriers < 20, 'the long-poll registers as throttled');
        await engine.ackBatch([]);
      }
      assert.equal(
        await engine.undoLeases([
          { jobId, attempt: 1 },
          { jobId: 'job-none', attempt: 1 },
        ]),
        1,
      );
      const [second] = await waiting;
      assert.deepEqual(
        [second?.id, second?.attempt],
        [jobId, 1],
        'the same attempt: the first was not counted',
      );
      const info = await engine.getJob(jobId);
      assert.deepEqual([info.state, info.attempt, info.errors, info.lastError], ['leased', 1, [], null]);
      // Fenced: the first lease's attempt is the live one again, an older one undoes nothing.
      assert.equal(await engine.undoLeases([{ jobId, attempt: 0 }]), 0);
      // Its one attempt is still there to fail: then it is dead, attempts exhausted.
      await engine.nack({ jobId, attempt: 1, error: 'boom', directive: { kind: 'delay', delayMs: 0 } });
      assert.deepEqual(
        [(await engine.getJob(jobId)).state, (await engine.getJob(jobId)).deadReason],
        ['dead', 'attempts_exhausted'],
      );
      assert.equal(await engine.undoLeases([{ jobId, attempt: 1 }]), 0, 'not leased: left alone');
      const q = (await engine.listQueues()).find((x) => x.name === 'q');
      assert.deepEqual([q?.counts.leased, q?.counts.ready, q?.counts.dead], [0, 1, 1]);
    },
  },
];

/**
 * An undone lease (Leases.undoLeases: its answer never sent) and a given-back one
 * (Leases.giveBackLeases: its worker held it) alike: ready at the old place, fenced; they
 * differ only in the attempt.
 */
function undoCase(act: 'undo' | 'give back'): StoreCase {
  return {
    name:
      act === 'undo'
        ? 'undo: a lease undone is ready at its old place on its old attempt; fenced, a cancel asked left alone'
        : 'give back: as undo, but the attempt kept and the budget one larger; fenced, a cancel asked left alone',
    async run(h) {
      const plain = newJob('q', { max_attempts: 1, timeout_ms: 5000 });
      const grouped = newJob('q', { group_key: 'g' });
      const stopping = newJob('q');
      const moved = newJob('q');
      await h.write((tx) => storeJobs(tx, [plain, grouped, stopping, moved]));
      await h.write(function* (tx) {
        const leased = [
          ...(yield* tx.leases.leaseReady({ ...leaseAt(2000, 'w-1'), queue: 'q', limit: 3 })),
          ...(yield* tx.leases.leaseGroupAt({
            ...leaseAt(2000, 'w-1'),
            queue: 'q',
            priority: 0,
            groupKey: 'g',
            limit: 1,
          })),
        ];
        assert.equal(leased.length, 4);
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
        const row = yield* tx.jobs.attempt(stopping.id);
        yield* tx.control.requestCancel({ seq: row!.seq, nowMs: 2100, by: null });
      });
      // Enqueued after the lease: the undone job is ahead of it again.
      const later = newJob('q');
      await h.write((tx) => storeJobs(tx, [later]));
      const undo = () =>
        h.write(function* (tx) {
          const keys = [
            { jobId: plain.id, attempt: 1 },
            { jobId: grouped.id, attempt: 1 },
            { jobId: stopping.id, attempt: 1 },
            { jobId: moved.id, attempt: 2 },
            { jobId: 'job-none', attempt: 1 },
          ];
          const undone = yield* act === 'undo' ? tx.leases.undoLeases(keys) : tx.leases.giveBackLeases(keys);
          yield* tx.counts.adjust({ queue: 'q', from: 'leased', to: 'ready', jobs: undone.length });
          return undone;
        });
      const undone = await undo();
      assert.deepEqual(ids(undone), ids([plain, grouped]));
      // What the engine tells and gives back (its event's type, its group's rate-limit token).
      assert.deepEqual(
        [...undone].sort((x, y) => x.id.localeCompare(y.id)).map((r) => [r.id, r.queue, r.type, r.group_key]),
        [plain, grouped]
          .map((job) => [job.id, 'q', job.type, job.group_key])
          .sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      );
      const row = (id: string) => h.store.read((view) => view.jobs.get(id));
      for (const job of [plain, grouped]) {
        const back = await row(job.id);
        assert.deepEqual(
          [
            back?.state,
            back?.attempt,
            back?.attempt_base,
            back?.lease_deadline_ms,
            back?.leased_at_ms,
            back?.worker_id,
            back?.timeout_at_ms,
          ],
          ['ready', ...(act === 'undo' ? [0, 0] : [1, 1]), null, null, null, null],
          act === 'undo' ? 'on the attempt it had before' : 'the attempt kept, one more in its budget',
        );
        assert.deepEqual(
          [back?.run_at_ms, back?.last_error, back?.errors_json],
          [1000, null, null],
          'no failure',
        );
      }
      assert.equal((await row(grouped.id))?.group_key, 'g');
      assert.equal(await h.store.read((view) => view.flow.leasedInGroup({ queue: 'q', groupKey: 'g' })), 0);
      // Another attempt's lease and a job asked to stop are left as they were.
      assert.deepEqual([(await row(moved.id))?.state, (await row(moved.id))?.attempt], ['leased', 1]);
      assert.deepEqual([(await row(stopping.id))?.state, (await row(stopping.id))?.attempt], ['leased', 1]);
      // Undone once: the same keys match nothing now.
      assert.deepEqual(await undo(), []);
      const again = await h.write(function* (tx) {
        const leased = yield* tx.leases.leaseReady({ ...leaseAt(3000), queue: 'q', limit: 1 });
        yield* tx.counts.adjust({ queue: 'q', from: 'ready', to: 'leased', jobs: leased.length });
        return leased;
      });
      assert.deepEqual(
        again.map((r) => [r.id, r.attempt, r.attempt_base + r.max_attempts]),
        [act === 'undo' ? [plain.id, 1, 1] : [plain.id, 2, 2]],
        act === 'undo' ? 'first in line again, on attempt 1 of 1' : 'first in line again, on attempt 2 of 2',
      );
    },
  };
}
