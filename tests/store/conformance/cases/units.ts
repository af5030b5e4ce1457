/** The contract of write and read units: atomicity, after-commit hooks, follow-ups, order, close. */
import assert from 'node:assert/strict';
import type { Op } from '../../../../src/store/op.ts';
import type { StoreTx } from '../../../../src/store/store.ts';
import { newJob, type StoreCase, storeJobs } from '../harness.ts';

export const unitCases: StoreCase[] = [
  {
    name: 'units: relaxed, full and default units commit alike, alone and in one batch (durability per queue)',
    async run(h) {
      const [relaxed, full, plain, mixed] = [newJob('q'), newJob('q'), newJob('q'), newJob('q')];
      const unit = (job: ReturnType<typeof newJob>, modes: readonly ('default' | 'full' | 'relaxed')[]) =>
        function* (tx: StoreTx) {
          for (const mode of modes) tx.durability(mode);
          yield* storeJobs(tx, [job]);
          return job.id;
        };
      // Alone (a batch of relaxed units only), then three at once (one batch with a full unit in it).
      assert.equal(await h.write(unit(relaxed!, ['relaxed'])), relaxed!.id);
      assert.deepEqual(
        await Promise.all([
          h.write(unit(full!, ['full'])),
          h.write(unit(plain!, [])),
          h.write(unit(mixed!, ['relaxed', 'default'])),
        ]),
        [full!.id, plain!.id, mixed!.id],
      );
      const stored = await h.store.read(function* (view) {
        const rows = [];
        for (const job of [relaxed, full, plain, mixed]) rows.push(yield* view.jobs.get(job!.id));
        return rows;
      });
      assert.deepEqual(
        stored.map((row) => row?.id),
        [relaxed!.id, full!.id, plain!.id, mixed!.id],
      );
    },
  },
  {
    name: 'units: a unit that throws changes nothing and fails alone; the others commit',
    async run(h) {
      const [kept, lost, after] = [newJob('q'), newJob('q'), newJob('q')];
      const hooks: string[] = [];
      const first = h.write(function* (tx) {
        yield* storeJobs(tx, [kept!]);
        tx.afterCommit(() => hooks.push('first'));
        return 'first';
      });
      const failing = h.write(function* (tx): Op<string> {
        yield* storeJobs(tx, [lost!]);
        tx.afterCommit(() => hooks.push('failing'));
        throw new Error('refused');
      });
      const third = h.write(function* (tx) {
        yield* storeJobs(tx, [after!]);
        return 'third';
      });
      assert.equal(await first, 'first');
      await assert.rejects(failing, /refused/);
      assert.equal(await third, 'third');
      assert.deepEqual(hooks, ['first'], 'the failed unit registered no effect');
      const stored = await h.store.read(function* (view) {
        return [
          yield* view.jobs.get(kept!.id),
          yield* view.jobs.get(lost!.id),
          yield* view.jobs.get(after!.id),
        ];
      });
      assert.deepEqual(
        stored.map((row) => row?.id),
        [kept!.id, undefined, after!.id],
      );
    },
  },
  {
    name: 'units: each sees what the units before it wrote; hooks run before the caller is answered',
    async run(h) {
      const job = newJob('q');
      let hookRan = false;
      const written = h.write(function* (tx) {
        yield* storeJobs(tx, [job]);
        tx.afterCommit(() => {
          hookRan = true;
        });
      });
      const seen = h.write((tx) => tx.jobs.get(job.id));
      await written;
      assert.equal(hookRan, true, 'after the commit, before the answer');
      assert.equal((await seen)?.id, job.id, 'a later unit sees the earlier one');
    },
  },
  {
    name: 'units: a follow-up runs after its unit and commits with it; a failed unit’s is refused',
    async run(h) {
      const [base, added] = [newJob('q'), newJob('q')];
      let followUp: Promise<string> | undefined;
      await h.write(function* (tx) {
        yield* storeJobs(tx, [base!]);
        followUp = tx.followUp(function* (inner: StoreTx): Op<string> {
          assert.equal((yield* inner.jobs.get(base!.id))?.id, base!.id, 'sees its unit');
          yield* storeJobs(inner, [added!]);
          return 'followed';
        });
      });
      assert.equal(await followUp, 'followed');
      assert.equal((await h.store.read((view) => view.jobs.get(added!.id)))?.id, added!.id);
      let refused: Promise<void> | undefined;
      await assert.rejects(
        h.write(function* (tx): Op<void> {
          yield* storeJobs(tx, [newJob('q')]);
          refused = tx.followUp(function* (inner) {
            yield* storeJobs(inner, [newJob('q')]);
          });
          throw new Error('the unit fails');
        }),
        /the unit fails/,
      );
      await assert.rejects(refused!, /the unit fails/);
    },
  },
  {
    name: 'units: a read is one consistent view; close writes what is queued and refuses what comes after',
    async run(h) {
      const store = h.store;
      const jobs = [newJob('q'), newJob('q')];
      const queued = store.write((tx) => storeJobs(tx, jobs));
      await store.close();
      await queued;
      await assert.rejects(store.write((tx) => tx.jobs.get('x')));
      const reopened = await h.restart();
      const view = await reopened.read(function* (v) {
        return { total: yield* v.counts.total(), rows: (yield* v.counts.all()).filter((c) => c.jobs > 0) };
      });
      assert.deepEqual(view, { total: 2, rows: [{ queue: 'q', state: 'ready', jobs: 2 }] });
    },
  },
];
