/**
 * Group commit: one transaction for every operation that arrives while the
 * previous commit is in flight, each caller answered only after its batch
 * committed, and a storage failure failing the whole batch with nothing of
 * it visible afterwards.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Op } from '../../src/store/op.ts';
import { GroupCommitter, plainWriteHooks, type UnitScope } from '../../src/store/sqlite/group-commit.ts';
import { type Db, openDatabase } from '../../src/store/sqlite/open.ts';
import type { CommitStats as BatchStats } from '../../src/store/store.ts';
import { bytes, expectCode, job, openTestEngine, rowCount, until, withEngine } from '../helpers/engine.ts';

class StorageFull extends Error {
  readonly code = 'SQLITE_FULL';
}

/** A unit of the scratch writer: only its scope, no store capabilities. */
type ScratchTx = UnitScope<ScratchTx>;

/** A unit from a plain function (the SQLite store's units run at once: a generator that never yields). */
function unit<T>(run: (tx: ScratchTx) => T): (tx: ScratchTx) => Op<T> {
  // biome-ignore lint/correctness/useYield: a unit of a synchronous store never suspends.
  return function* (tx) {
    return run(tx);
  };
}

/** A GroupCommitter over a scratch table in a real temporary database. */
function scratch(maxBatchOperations?: number) {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-gc-'));
  const db: Db = openDatabase(join(dir, 'scratch.db'), { durability: 'full' });
  db.exec('CREATE TABLE t (x INTEGER NOT NULL)');
  const batches: BatchStats[] = [];
  const writer = new GroupCommitter<ScratchTx>(
    db,
    {},
    maxBatchOperations === undefined ? {} : { maxBatchOperations },
  );
  writer.hooks = {
    ...plainWriteHooks,
    commitFailed: (failure) => new Error('commit failed', { cause: failure.cause }),
    closed: () => new Error('closed'),
    afterCommit: (stats) => batches.push(stats),
  };
  const insert = db.prepare<[number]>('INSERT INTO t (x) VALUES (?)');
  const rows = () => db.prepare<[], number>('SELECT x FROM t ORDER BY x').pluck().all();
  return {
    db,
    writer,
    batches,
    insert,
    rows,
    dispose() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("an operation's follow-ups join its batch after the others; a failed operation's are rejected, not run", async () => {
  const s = scratch();
  try {
    const order: string[] = [];
    let followUpOfFirst: Promise<number> | undefined;
    let followUpOfFailed: Promise<number> | undefined;
    const first = s.writer.submit(
      unit((tx) => {
        order.push('first');
        s.insert.run(1);
        followUpOfFirst = tx.followUp(
          unit(() => {
            order.push('follow-up of first');
            s.insert.run(10);
            return 10;
          }),
        );
        return 1;
      }),
    );
    const failed = s.writer.submit(
      unit((tx) => {
        order.push('failed');
        s.insert.run(2);
        followUpOfFailed = tx.followUp(
          unit(() => {
            order.push('follow-up of failed');
            return 20;
          }),
        );
        throw new Error('refused');
      }),
    );
    const third = s.writer.submit(
      unit(() => {
        order.push('third');
        s.insert.run(3);
        return 3;
      }),
    );
    assert.equal(await first, 1);
    await assert.rejects(failed, /refused/);
    assert.equal(await third, 3);
    assert.equal(await followUpOfFirst, 10);
    await assert.rejects(followUpOfFailed!, /refused/);
    assert.deepEqual(order, ['first', 'failed', 'third', 'follow-up of first']);
    assert.deepEqual(
      s.batches.map((b) => [b.operations, b.ok]),
      [[4, true]],
      'one transaction, one commit, the follow-up included',
    );
    assert.deepEqual(s.rows(), [1, 3, 10]);
  } finally {
    s.dispose();
  }
});

test('operations submitted together share one transaction; each resolves after the commit', async () => {
  const s = scratch();
  try {
    const seen: { committedOps: number; inTransaction: boolean }[] = [];
    const promises = Array.from({ length: 50 }, (_, i) =>
      s.writer
        .submit(
          unit(() => {
            s.insert.run(i);
            return i;
          }),
        )
        .then((value) => {
          seen.push({
            committedOps: s.batches.filter((b) => b.ok).reduce((n, b) => n + b.operations, 0),
            inTransaction: s.db.inTransaction,
          });
          return value;
        }),
    );
    assert.deepEqual(
      await Promise.all(promises),
      Array.from({ length: 50 }, (_, i) => i),
    );
    assert.equal(s.batches.length, 1);
    assert.equal(s.batches[0]?.operations, 50);
    assert.equal(s.batches[0]?.ok, true);
    for (const at of seen) {
      assert.equal(at.committedOps, 50, 'resolved only after its batch was reported committed');
      assert.equal(at.inTransaction, false);
    }
    assert.equal(s.rows().length, 50);
  } finally {
    s.dispose();
  }
});

test('an operation that throws is rolled back alone; the rest of its batch commits', async () => {
  const s = scratch();
  try {
    const ok1 = s.writer.submit(unit(() => s.insert.run(1)));
    const bad = s.writer.submit(
      unit(() => {
        s.insert.run(2);
        throw new Error('bad input');
      }),
    );
    const ok3 = s.writer.submit(unit(() => s.insert.run(3)));
    await ok1;
    await assert.rejects(bad, /bad input/);
    await ok3;
    assert.deepEqual(s.rows(), [1, 3]);
    assert.equal(s.batches.length, 1);
  } finally {
    s.dispose();
  }
});

test('a storage failure rejects every operation of the batch, commits nothing, and the next batch works', async () => {
  const s = scratch();
  try {
    const hooks: string[] = [];
    const before = s.writer.submit(
      unit((tx) => {
        s.insert.run(1);
        tx.afterCommit(() => hooks.push('before'));
      }),
    );
    const failing = s.writer.submit(
      unit(() => {
        s.insert.run(2);
        throw new StorageFull('database or disk is full');
      }),
    );
    const after = s.writer.submit(unit(() => s.insert.run(3)));
    const results = await Promise.allSettled([before, failing, after]);
    for (const result of results) {
      assert.equal(result.status, 'rejected');
      assert.ok(result.status === 'rejected');
      assert.match(String(result.reason), /commit failed/);
      assert.ok((result.reason as Error).cause instanceof StorageFull);
    }
    assert.deepEqual(s.rows(), [], 'nothing of the failed batch is visible');
    assert.equal(hooks.length, 0, 'after-commit hooks of a failed batch never run');
    assert.equal(s.batches.at(-1)?.ok, false);
    assert.equal(s.batches.at(-1)?.operations, 3);
    assert.equal(s.db.inTransaction, false);

    await s.writer.submit(
      unit((tx) => {
        s.insert.run(4);
        tx.afterCommit(() => hooks.push('next'));
      }),
    );
    assert.deepEqual(s.rows(), [4]);
    assert.deepEqual(hooks, ['next']);
    assert.equal(s.batches.at(-1)?.ok, true);
  } finally {
    s.dispose();
  }
});

test('maxBatchOperations: 1 gives one transaction per operation', async () => {
  const s = scratch(1);
  try {
    await Promise.all(Array.from({ length: 10 }, (_, i) => s.writer.submit(unit(() => s.insert.run(i)))));
    assert.equal(s.batches.length, 10);
    assert.ok(s.batches.every((b) => b.operations === 1 && b.ok));
    assert.equal(s.rows().length, 10);
  } finally {
    s.dispose();
  }
});

test('work submitted by an after-commit hook goes into the next batch', async () => {
  const s = scratch();
  try {
    let inner: Promise<unknown> | undefined;
    await s.writer.submit(
      unit((tx) => {
        s.insert.run(1);
        tx.afterCommit(() => {
          inner = s.writer.submit(unit(() => s.insert.run(2)));
        });
      }),
    );
    await inner;
    assert.deepEqual(
      s.batches.map((b) => b.operations),
      [1, 1],
    );
    assert.deepEqual(s.rows(), [1, 2]);
  } finally {
    s.dispose();
  }
});

test('close writes what is queued and refuses what comes after', async () => {
  const s = scratch();
  try {
    const queued = s.writer.submit(unit(() => s.insert.run(1)));
    s.writer.close();
    await queued;
    await assert.rejects(s.writer.submit(unit(() => s.insert.run(2))), /closed/);
    assert.deepEqual(s.rows(), [1]);
  } finally {
    s.dispose();
  }
});

test('engine: many concurrent enqueues commit in fewer batches than operations', async () => {
  const batches: BatchStats[] = [];
  await withEngine({ deps: { onBatch: (stats) => batches.push(stats) } }, async ({ engine, db }) => {
    // The engine's own opening writes (queues, schedules) were committed before this.
    batches.length = 0;
    const committed = () => batches.filter((b) => b.ok).reduce((n, b) => n + b.operations, 0);
    let resolved = 0;
    const problems: string[] = [];
    const operations = 200;
    const calls = Array.from({ length: operations }, (_, i) =>
      engine.enqueue(job(`q${i % 3}`)).then(async ({ jobId }) => {
        resolved++;
        if (db.inTransaction) problems.push(`${jobId} resolved inside a transaction`);
        if (committed() < resolved) problems.push(`${resolved} resolved, ${committed()} committed`);
        // Visible to a reader: committed, not merely written.
        if ((await engine.getJob(jobId)).state !== 'ready') problems.push(`${jobId} not stored`);
      }),
    );
    await Promise.all(calls);
    assert.deepEqual(problems, []);
    assert.ok(batches.length < operations / 10, `${batches.length} batches for ${operations} enqueues`);
    assert.equal(rowCount(db, 'jobs'), operations);
    for (const b of batches) assert.ok(b.durationMs >= 0);
  });
});

test('engine: maxBatchOperations 1 commits every operation on its own', async () => {
  const batches: BatchStats[] = [];
  await withEngine(
    { deps: { onBatch: (stats) => batches.push(stats) }, store: { maxBatchOperations: 1 } },
    async ({ engine }) => {
      // The engine's own opening writes (queues, schedules) were committed before this.
      batches.length = 0;
      await Promise.all(Array.from({ length: 20 }, () => engine.enqueue(job('q'))));
      assert.equal(batches.length, 20);
      assert.ok(batches.every((b) => b.operations === 1));
    },
  );
});

test('engine: a full disk fails the batch with unavailable, nothing of it is visible, and service resumes', async () => {
  const events: string[] = [];
  await withEngine({ deps: { onEvent: (e) => events.push(e.kind) } }, async ({ engine, db, clock }) => {
    const { jobId: kept } = await engine.enqueue(job('q'));
    await engine.reserve({ queues: ['q'] });
    const waiting = engine.reserve({ queues: ['q'], waitMs: 60_000 });
    await until(engine, () => engine.waitingReserves === 1);
    events.length = 0;
    const pages = Number(db.pragma('page_count', { simple: true }));
    // Emulates a full disk: SQLite refuses to grow the file beyond this many pages.
    db.pragma(`max_page_count = ${pages + 2}`);
    const small = engine.enqueue(job('q', { idempotencyKey: 'small' }));
    // A long-poll whose operation runs (and registers its waiter) before the failing one.
    const doomedWaiter = engine.reserve({ queues: ['other'], waitMs: 60_000 });
    const big = engine.enqueue(job('q', { payload: new Uint8Array(200_000) }));
    const ack = engine.ack({ jobId: kept, attempt: 1 });
    for (const call of [small, doomedWaiter, big, ack]) {
      const error = await expectCode(call, 'unavailable');
      assert.match(error.message, /storage unavailable, nothing was written: database or disk is full/);
    }
    // Nothing of the batch: no new job, no key, the ack undone, no event, no waiter woken.
    assert.equal(rowCount(db, 'jobs'), 1);
    assert.equal(rowCount(db, 'idempotency_keys'), 0);
    assert.equal((await engine.getJob(kept)).state, 'leased');
    assert.deepEqual((await engine.listQueues())[0]?.counts, {
      scheduled: 0,
      ready: 0,
      leased: 1,
      completed: 0,
      dead: 0,
      cancelled: 0,
      waiting: 0,
    });
    assert.deepEqual(await engine.counterMismatches(), []);
    assert.deepEqual(events, []);
    assert.equal(engine.waitingReserves, 1);

    // The cause goes away: the same requests succeed once the engine has looked for room
    // again, which it does at most once a second (engine/disk-full.ts); until then enqueues
    // are refused without trying.
    db.pragma('max_page_count = 1073741823');
    const early = await expectCode(engine.enqueue(job('q', { idempotencyKey: 'small' })), 'unavailable');
    assert.match(early.message, /disk of the data directory is full/);
    clock.advance(1000);
    const again = await engine.enqueue(job('q', { idempotencyKey: 'small' }));
    assert.equal(again.deduplicated, false);
    assert.equal((await waiting)[0]?.id, again.jobId);
    await engine.enqueue(job('q', { payload: new Uint8Array(200_000) }));
    await engine.ack({ jobId: kept, attempt: 1 });
  });
});

test('a throwing after-commit observer does not keep callers from their answers', async () => {
  const hookErrors: string[] = [];
  const t = await openTestEngine({
    deps: {
      onEvent: () => {
        throw new Error('observer bug');
      },
      onHookError: (e) => hookErrors.push(e.message),
    },
  });
  try {
    const { jobId } = await t.engine.enqueue({ queue: 'q', type: 't', payload: bytes('x') });
    assert.equal((await t.engine.getJob(jobId)).state, 'ready');
    assert.ok(hookErrors.some((m) => m.includes('observer bug')));
  } finally {
    t.dispose();
  }
});

test('a unit that yields is refused and rolled back alone: a synchronous store never suspends', async () => {
  const s = scratch();
  try {
    const ok1 = s.writer.submit(unit(() => s.insert.run(1)));
    const suspending = s.writer.submit(function* (): Op<void> {
      s.insert.run(2);
      yield Promise.resolve();
      s.insert.run(20);
    });
    const ok3 = s.writer.submit(unit(() => s.insert.run(3)));
    await ok1;
    await assert.rejects(suspending, /a synchronous store was asked to suspend/);
    await ok3;
    assert.deepEqual(s.rows(), [1, 3], 'nothing of the suspended unit is stored');
    assert.equal(s.batches.length, 1);
  } finally {
    s.dispose();
  }
});

/** A writer whose WAL syncs are counted, its units answered only once their batch is synced when they need it. */
function counting(defaultDurability: 'full' | 'relaxed') {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-gc-sync-'));
  const db: Db = openDatabase(join(dir, 'scratch.db'), { durability: defaultDurability });
  db.exec('CREATE TABLE t (x INTEGER NOT NULL)');
  const log: string[] = [];
  const writer = new GroupCommitter<ScratchTx>(
    db,
    {},
    { defaultDurability, syncWal: () => log.push('sync') },
  );
  const insert = db.prepare<[number]>('INSERT INTO t (x) VALUES (?)');
  /** Submits a unit that asks `asks` of its commit; logs its answer. */
  const write = (name: string, asks: readonly ('default' | 'full' | 'relaxed')[]) =>
    writer
      .submit(
        unit((tx) => {
          insert.run(1);
          for (const mode of asks) tx.durability(mode);
        }),
      )
      .then(() => log.push(name));
  return {
    log,
    write,
    dispose() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('a batch is synced before its answers when one unit needs it; relaxed units alone are not', async () => {
  const s = counting('full');
  try {
    // Relaxed alone: no sync. Relaxed beside full in one batch: one sync, before both answers.
    await Promise.all([s.write('relaxed', ['relaxed'])]);
    await Promise.all([s.write('relaxed 2', ['relaxed']), s.write('full', ['full'])]);
    // Nothing asked, on a full store: synced. Relaxed then default in one unit: the stricter one holds.
    await s.write('unmarked', []);
    await s.write('relaxed then default', ['relaxed', 'default']);
    await s.write('full then relaxed', ['full', 'relaxed']);
    assert.deepEqual(s.log, [
      'relaxed',
      'sync',
      'relaxed 2',
      'full',
      'sync',
      'unmarked',
      'sync',
      'relaxed then default',
      'sync',
      'full then relaxed',
    ]);
  } finally {
    s.dispose();
  }
});

test('on a relaxed store only a unit that asks for full is synced', async () => {
  const s = counting('relaxed');
  try {
    await s.write('unmarked', []);
    await s.write('default', ['default']);
    await s.write('relaxed', ['relaxed']);
    await s.write('full', ['relaxed', 'full']);
    assert.deepEqual(s.log, ['unmarked', 'default', 'relaxed', 'sync', 'full']);
  } finally {
    s.dispose();
  }
});
