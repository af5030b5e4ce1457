/**
 * Ended batches are swept and batches are listed (task batchlife), on every store: the
 * maintenance sweep deletes a batch ended longer ago than limits.batch_retention_ms and
 * its member rows (never one before, never one not ended), a bounded chunk per call;
 * GetBatch of a swept batch names the setting, and a member job that outlives its batch
 * says no batch. ListBatches pages newest first, by state and owner.
 */
import assert from 'node:assert/strict';
import type { Engine } from '../../../../src/engine/engine.ts';
import { SeppError } from '../../../../src/engine/errors.ts';
import type { BatchListQuery } from '../../../../src/engine/workflow-types.ts';
import type { StoreCase } from '../harness.ts';

const DAY_MS = 86_400_000;
const payload = new TextEncoder().encode('{}');
const member = (queue: string) => ({ queue, type: 'm', payload });

/** A batch whose members are all cancelled at once: it ends now, with `members` member rows. */
async function endedBatch(engine: Engine, queue: string, members: number, owner = ''): Promise<string> {
  const { batch } = await engine.createBatch({
    owner,
    jobs: Array.from({ length: members }, () => member(queue)),
    seal: true,
  });
  await engine.cancelBatch(batch.id);
  return batch.id;
}

/** Every page of a listing, by id. */
async function listAll(engine: Engine, query: BatchListQuery): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await engine.listBatches({ ...query, ...(cursor === undefined ? {} : { cursor }) });
    assert.ok(page.batches.length <= (query.pageSize ?? 100));
    ids.push(...page.batches.map((b) => b.id));
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  return ids;
}

export const batchRetentionCases: StoreCase[] = [
  {
    name: 'batches: an ended batch is swept after limits.batch_retention_ms, not before; open ones never',
    async run(h) {
      const { engine, clock } = await h.engine();
      const sealedOpen = await engine.createBatch({ jobs: [member('br')], seal: true });
      const ended = await endedBatch(engine, 'br', 2);
      const survivor = (await engine.getBatch(ended)).members[0]!.jobId;
      assert.equal((await engine.getJob(survivor)).batchId, ended);

      clock.advance(7 * DAY_MS - 1);
      await engine.runMaintenance();
      assert.equal(
        (await engine.getBatch(ended)).batch.state,
        'ended',
        'kept until the retention has passed',
      );

      // The sweep runs once a minute.
      clock.advance(60_001);
      await engine.runMaintenance();
      const gone = await assert.rejects(engine.getBatch(ended), (error: unknown) => {
        assert.ok(error instanceof SeppError);
        assert.equal(error.code, 'not_found');
        assert.match(error.message, /ended more than 7d ago and swept \(limits\.batch_retention_ms\)/);
        return true;
      });
      assert.equal(gone, undefined);
      // The member job (cancelled jobs are kept 14 days) outlives its batch and names none.
      const job = await engine.getJob(survivor);
      assert.equal(job.state, 'cancelled');
      assert.equal(job.batchId, undefined);
      // A batch not ended is kept however old.
      assert.equal((await engine.getBatch(sealedOpen.batch.id)).batch.state, 'sealed');
      assert.deepEqual(await listAll(engine, {}), [sealedOpen.batch.id]);
    },
  },
  {
    name: 'batches: the sweep deletes a bounded chunk per call, members before their batch, oldest first',
    async run(h) {
      // The engine's own sweep (7 days) takes none: the store's is called with its time here.
      const { engine, clock } = await h.engine();
      const first = await endedBatch(engine, 'bc', 2);
      clock.advance(1);
      const second = await endedBatch(engine, 'bc', 2);
      clock.advance(1);
      const third = await endedBatch(engine, 'bc', 0);
      clock.advance(1);
      const beforeMs = clock.nowMs();
      const sweep = () =>
        h.write(function* (tx) {
          return yield* tx.dependencies!.sweepBatches({ beforeMs, limit: 3 });
        });
      // 4 member rows: a full chunk of 3 leaves every batch for later.
      assert.deepEqual(await sweep(), { members: 3, batches: 0 });
      assert.equal((await engine.getBatch(first)).batch.id, first);
      // The last member, then the batches with no member left, 3 at most.
      assert.deepEqual(await sweep(), { members: 1, batches: 3 });
      for (const id of [first, second, third]) {
        await assert.rejects(
          engine.getBatch(id),
          (e: unknown) => e instanceof SeppError && e.code === 'not_found',
        );
      }
      assert.deepEqual(await sweep(), { members: 0, batches: 0 });
    },
  },
  {
    name: 'batches: ListBatches pages newest first, by state and by owner',
    async run(h) {
      const { engine, clock } = await h.engine();
      const ids: Record<string, string> = {};
      ids.open = (await engine.createBatch({ owner: 'etl' })).batch.id;
      clock.advance(1);
      ids.sealed = (await engine.createBatch({ owner: 'etl', jobs: [member('bl')], seal: true })).batch.id;
      clock.advance(1);
      ids.ended = await endedBatch(engine, 'bl', 1, 'etl');
      clock.advance(1);
      ids.other = (await engine.createBatch({ owner: 'billing' })).batch.id;
      clock.advance(1);
      ids.anonymous = (await engine.createBatch({})).batch.id;

      const all = [ids.anonymous, ids.other, ids.ended, ids.sealed, ids.open];
      assert.deepEqual(await listAll(engine, {}), all);
      assert.deepEqual(await listAll(engine, { pageSize: 2 }), all, 'pages of 2 hold the same, in order');
      const first = await engine.listBatches({ pageSize: 5 });
      assert.equal(first.nextCursor, null, 'a page that holds the rest is the last');
      assert.equal(first.batches[2]?.owner, 'etl');
      assert.deepEqual(await listAll(engine, { state: 'open' }), [ids.anonymous, ids.other, ids.open]);
      assert.deepEqual(await listAll(engine, { state: 'ended' }), [ids.ended]);
      assert.deepEqual(await listAll(engine, { owner: 'etl' }), [ids.ended, ids.sealed, ids.open]);
      assert.deepEqual(await listAll(engine, { owner: 'etl', state: 'sealed' }), [ids.sealed]);
      assert.deepEqual(await listAll(engine, { owner: 'etl', state: 'ended', pageSize: 1 }), [ids.ended]);
      assert.deepEqual(await listAll(engine, { owner: '' }), [ids.anonymous]);
      assert.deepEqual(await listAll(engine, { owner: 'nobody' }), []);

      const refused = (query: BatchListQuery, pattern: RegExp) =>
        assert.rejects(engine.listBatches(query), (e: unknown) => {
          assert.ok(e instanceof SeppError);
          assert.equal(e.code, 'invalid_argument');
          assert.match(e.message, pattern);
          return true;
        });
      await refused({ pageSize: 1001 }, /page_size is 1001.*limits\.max_page_size/);
      await refused({ cursor: 'q.bm9wZQ' }, /page_token is not one this server gave for batches/);
      await refused({ cursor: `b.${ids.open}x` }, /page_token/);
    },
  },
];
