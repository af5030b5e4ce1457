/**
 * The engine's life: close, restart, durability modes, the data-directory
 * lock, schema versions, and the events it reports.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { SeppError } from '../../src/engine/errors.ts';
import type { JobEvent, QueueInfo } from '../../src/engine/types.ts';
import { closeDatabase } from '../../src/store/sqlite/close.ts';
import { migrations } from '../../src/store/sqlite/gen/migrations.ts';
import { migrate } from '../../src/store/sqlite/migrate.ts';
import { DataDirInUseError, databaseFileName, openDataDir } from '../../src/store/sqlite/open.ts';
import { within } from '../helpers/bounded.ts';
import { expectCode, job, openTestEngine, until, withEngine, withQueues } from '../helpers/engine.ts';

test('close answers waiting reserves with [] and later calls fail with unavailable', async () => {
  const t = await openTestEngine();
  try {
    const { engine } = t;
    const { jobId } = await engine.enqueue(job('q'));
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.ok(leased);
    const waiting = engine.reserve({ queues: ['q', 'r'], waitMs: 30_000 });
    await until(engine, () => engine.waitingReserves === 1);
    engine.close();
    assert.deepEqual(await waiting, []);
    assert.equal(engine.waitingReserves, 0);
    engine.close(); // twice is harmless

    const settle = { jobId, attempt: 1 };
    await expectCode(engine.enqueue(job('q')), 'unavailable');
    await expectCode(engine.enqueueBatch([job('q')]), 'unavailable');
    await expectCode(engine.enqueueAtomic([job('q')]), 'unavailable');
    await expectCode(engine.reserve({ queues: ['q'] }), 'unavailable');
    await expectCode(engine.ack(settle), 'unavailable');
    await expectCode(engine.ackBatch([settle]), 'unavailable');
    await expectCode(engine.nack({ ...settle, error: 'x' }), 'unavailable');
    await expectCode(engine.extend({ ...settle, leaseMs: 1000 }), 'unavailable');
    await expectCode(engine.cancel(jobId), 'unavailable');
    await expectCode(engine.pauseQueue('q'), 'unavailable');
    await expectCode(engine.resumeQueue('q'), 'unavailable');
    await expectCode(engine.requeueDeadLetters({ queue: 'q', all: true }), 'unavailable');
    await expectCode(engine.deleteDeadLetters({ queue: 'q', jobIds: [jobId] }), 'unavailable');
    await expectCode(engine.runMaintenance(), 'unavailable');
    await expectCode(engine.getJob(jobId), 'unavailable');
    await expectCode(engine.listQueues(), 'unavailable');
    await expectCode(engine.listDeadLetters({ queue: 'q' }), 'unavailable');
    await expectCode(engine.counterMismatches(), 'unavailable');
  } finally {
    t.dispose();
  }
});

test('shutOut ends waiting reserves and event subscriptions with its refusal at once; later ones get it too', async () => {
  const t = await openTestEngine();
  try {
    const { engine } = t;
    // Waits the engine's clock (a FakeClock that does not move) would never end by itself.
    const waiting = engine.reserve({ queues: ['q'], waitMs: 30_000 });
    await until(engine, () => engine.waitingReserves === 1);
    let ended: SeppError | undefined;
    engine.subscribeEvents(
      { queues: ['q'], jobIds: [], kinds: [] },
      { kind: 'now' },
      { send: (_events, written) => written(), caughtUp: () => {}, end: (error) => (ended = error) },
    );
    const refusal = new SeppError('unavailable', 'a newer sepp migrated the schema', { lasting: true });
    engine.shutOut(refusal);
    await assert.rejects(within(waiting, 'the waiting reserve ended', 10_000), (error) => error === refusal);
    assert.equal(engine.waitingReserves, 0);
    assert.equal(ended, refusal);
    // A later subscription is refused with it; a later reserve whose store still writes too.
    assert.throws(
      () =>
        engine.subscribeEvents(
          { queues: ['q'], jobIds: [], kinds: [] },
          { kind: 'now' },
          { send: () => {}, caughtUp: () => {}, end: () => {} },
        ),
      (error) => error === refusal,
    );
    await assert.rejects(engine.reserve({ queues: ['q'], waitMs: 30_000 }), (error) => error === refusal);
    assert.equal(engine.waitingReserves, 0, 'no new waiter');
  } finally {
    t.dispose();
  }
});

test('close writes what is already queued before it closes the database', async () => {
  let t = await openTestEngine();
  try {
    const pending = t.engine.enqueue(job('q'));
    await Promise.resolve(); // enqueue() is async: let it hand its operation to the writer
    t.engine.close();
    const { jobId } = await pending;
    t = await t.reopen();
    assert.equal((await t.engine.getJob(jobId)).state, 'ready');
  } finally {
    t.dispose();
  }
});

test('restart keeps every acknowledged state, and leases keep running on the new engine', async () => {
  const options = withQueues({ keep: { completedRetentionMs: 3_600_000 } });
  await withEngine({ options }, async (first) => {
    const { engine, clock } = first;
    const ids = {
      ready: (await engine.enqueue(job('q', { priority: 3, metadata: { a: 'b' }, idempotencyKey: 'k' })))
        .jobId,
      scheduled: (await engine.enqueue(job('q', { delayMs: 60_000 }))).jobId,
      leased: (await engine.enqueue(job('l'))).jobId,
      dead: (await engine.enqueue(job('d'))).jobId,
      completed: (await engine.enqueue(job('keep'))).jobId,
      paused: (await engine.enqueue(job('p'))).jobId,
    };
    const [lease] = await engine.reserve({ queues: ['l'], leaseMs: 10_000 });
    assert.ok(lease);
    await engine.reserve({ queues: ['d'] });
    await engine.nack({ jobId: ids.dead, attempt: 1, error: 'bad', directive: { kind: 'dead_letter' } });
    await engine.reserve({ queues: ['keep'] });
    await engine.ack({ jobId: ids.completed, attempt: 1 });
    await engine.pauseQueue('p');
    const before = Object.fromEntries(
      await Promise.all(Object.entries(ids).map(async ([k, id]) => [k, await engine.getJob(id)] as const)),
    );
    const queuesBefore = await engine.listQueues();

    const second = await first.reopen();
    const after = Object.fromEntries(
      await Promise.all(
        Object.entries(ids).map(async ([k, id]) => [k, await second.engine.getJob(id)] as const),
      ),
    );
    assert.deepEqual(after, before);
    const strip = (qs: QueueInfo[]) => qs.map(({ waitingWorkers: _, ...rest }) => rest);
    assert.deepEqual(strip(await second.engine.listQueues()), strip(queuesBefore));
    assert.deepEqual(await second.engine.reserve({ queues: ['p'] }), [], 'still paused');
    const dup = await second.engine.enqueue(job('q', { idempotencyKey: 'k' }));
    assert.deepEqual(dup, { ok: true, jobId: ids.ready, deduplicated: true });

    // The lease taken before the restart can be extended; it expires on the new engine's timers.
    await second.engine.extend({ jobId: ids.leased, attempt: lease.attempt, leaseMs: 20_000 });
    clock.advance(20_000);
    await until(second.engine, async () => (await second.engine.getJob(ids.leased)).state === 'ready');
    clock.advance(40_000);
    await until(second.engine, async () => (await second.engine.getJob(ids.scheduled)).state === 'ready');
    return second;
  });
});

test('either durability opens with synchronous=NORMAL (the group committer syncs what must be) and works', async () => {
  await withEngine({ durability: 'relaxed' }, async ({ engine, db }) => {
    assert.equal(db.pragma('synchronous', { simple: true }), 1);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    const { jobId } = await engine.enqueue(job('q'));
    const [leased] = await engine.reserve({ queues: ['q'] });
    assert.equal(leased?.id, jobId);
    await engine.ack({ jobId, attempt: 1 });
  });
  await withEngine({}, async ({ db }) => {
    assert.equal(db.pragma('synchronous', { simple: true }), 1);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  });
});

test('normal locking: another connection reads the live database while the engine writes', async () => {
  await withEngine({}, async ({ dataDir, engine, db }) => {
    assert.equal(db.pragma('locking_mode', { simple: true }), 'normal');
    await engine.enqueue(job('q'));
    // The WAL index is shared through the -shm file, so a reader sees committed work.
    assert.equal(existsSync(join(dataDir, `${databaseFileName}-shm`)), true);
    const reader = new Database(join(dataDir, databaseFileName), { readonly: true, fileMustExist: true });
    try {
      const ready = reader.prepare("SELECT jobs FROM queue_counts WHERE queue = 'q' AND state = 'ready'");
      assert.equal(ready.pluck().get(), 1);
      // A reader inside a read transaction does not stop the writer: it keeps its snapshot.
      reader.exec('BEGIN');
      assert.equal(ready.pluck().get(), 1);
      await engine.enqueue(job('q'));
      assert.equal(ready.pluck().get(), 1);
      reader.exec('COMMIT');
      assert.equal(ready.pluck().get(), 2);
    } finally {
      reader.close();
    }
  });
});

test('wal_checkpoints: auto checkpoints as the WAL grows and truncates it at close; external never checkpoints', async () => {
  const walBytes = (dataDir: string) =>
    statSync(join(dataDir, `${databaseFileName}-wal`), { throwIfNoEntry: false })?.size ?? 0;
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-test-'));
  try {
    const auto = openDataDir(dataDir, { durability: 'relaxed' });
    assert.equal(auto.pragma('wal_autocheckpoint', { simple: true }), 1000);
    closeDatabase(auto);
    assert.equal(walBytes(dataDir), 0, 'TRUNCATE at close');
    const external = openDataDir(dataDir, { durability: 'relaxed', walCheckpoints: 'external' });
    assert.equal(external.pragma('wal_autocheckpoint', { simple: true }), 0);
    external.exec('CREATE TABLE filler (b BLOB)');
    const insert = external.prepare('INSERT INTO filler VALUES (zeroblob(4000))');
    for (let i = 0; i < 1500; i++) insert.run();
    const grown = walBytes(dataDir);
    assert.ok(grown > 1000 * 4096, `the WAL passed the auto-checkpoint size untouched (${grown} bytes)`);
    // Another connection stays open, as Litestream's does (the last connection to
    // close would checkpoint and delete the WAL, whatever the setting).
    const other = new Database(join(dataDir, databaseFileName), { readonly: true });
    try {
      // After its first read, a WAL connection keeps a shared lock on the file.
      other.prepare('SELECT count(*) FROM sqlite_master').get();
      closeDatabase(external);
      assert.equal(walBytes(dataDir), grown, 'external: not checkpointed at close');
      const again = openDataDir(dataDir, { durability: 'relaxed' });
      closeDatabase(again);
      assert.equal(walBytes(dataDir), 0, 'auto: truncated at close, with the other connection open');
    } finally {
      other.close();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a second engine on the same data directory fails with DataDirInUseError', async () => {
  await withEngine({}, async ({ dataDir, engine }) => {
    await engine.enqueue(job('q'));
    assert.throws(() => openDataDir(dataDir, { durability: 'full' }), DataDirInUseError);
    assert.throws(
      () => openDataDir(dataDir, { durability: 'relaxed' }),
      /in use by another sepp \(it holds .*sepp\.lock\)/,
    );
    // The failed attempt disturbed nothing.
    await engine.enqueue(job('q'));
    assert.equal((await engine.listQueues())[0]?.counts.ready, 2);
  });
});

test('the data directory can be opened again once the engine has closed', async () => {
  const t = await openTestEngine();
  try {
    t.engine.close();
    const db = openDataDir(t.dataDir, { durability: 'full' });
    db.close();
  } finally {
    t.dispose();
  }
});

test('opening an older database reports each migration it applied, in order; a new or current one reports none', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-test-'));
  try {
    const seen: number[][] = [];
    const onMigrated = (applied: readonly { version: number; durationMs: number }[]) => {
      assert.ok(applied.every((step) => Number.isInteger(step.durationMs) && step.durationMs >= 0));
      seen.push(applied.map((step) => step.version));
    };
    // A database an older sepp wrote: every migration but the last two.
    const older = new Database(join(dataDir, databaseFileName));
    older.pragma('journal_mode = WAL');
    migrate(older, migrations.slice(0, -2));
    older.close();
    openDataDir(dataDir, { durability: 'full', onMigrated }).close();
    openDataDir(dataDir, { durability: 'full', onMigrated }).close();
    assert.deepEqual(seen, [migrations.slice(-2).map((m) => m.version)]);
    const fresh = mkdtempSync(join(tmpdir(), 'sepp-test-'));
    openDataDir(fresh, { durability: 'full', onMigrated }).close();
    rmSync(fresh, { recursive: true, force: true });
    assert.equal(seen.length, 1);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a database with a newer schema than this code is refused, and left as it was', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-test-'));
  try {
    openDataDir(dataDir, { durability: 'full' }).close();
    const raw = new Database(join(dataDir, databaseFileName));
    raw.pragma('user_version = 99');
    raw.close();
    assert.throws(
      () => openDataDir(dataDir, { durability: 'full' }),
      /schema version 99, written by a newer sepp.*knows schema versions up to/,
    );
    const check = new Database(join(dataDir, databaseFileName));
    assert.equal(check.pragma('user_version', { simple: true }), 99);
    check.close();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('events report what happened, with counts, after the commit', async () => {
  const totals = new Map<string, number>();
  let reportedInTransaction = false;
  let db: Database.Database | undefined;
  const onEvent = (event: JobEvent) => {
    if (db?.inTransaction) reportedInTransaction = true;
    const key = event.kind === 'dead_lettered' ? `${event.kind}:${event.reason}` : event.kind;
    totals.set(key, (totals.get(key) ?? 0) + event.count);
  };
  await withEngine({ deps: { onEvent } }, async (t) => {
    const { engine, clock } = t;
    db = t.db;
    await engine.enqueueBatch([
      job('q'),
      job('q'),
      job('q'),
      job('q'),
      job('q'),
      job('q', { maxAttempts: 1 }),
    ]);
    const leased = await engine.reserve({ queues: ['q'], maxJobs: 6, leaseMs: 1000 });
    assert.equal(leased.length, 6);
    const [a, b, c, d, e, once] = leased;
    assert.ok(a && b && c && d && e && once);
    await engine.ack({ jobId: a.id, attempt: 1 });
    await engine.ackBatch([
      { jobId: b.id, attempt: 1 },
      { jobId: c.id, attempt: 1 },
      { jobId: c.id, attempt: 1 },
    ]);
    await engine.nack({ jobId: d.id, attempt: 1, error: 'x', directive: { kind: 'delay', delayMs: 0 } });
    await engine.nack({ jobId: e.id, attempt: 1, error: 'x', directive: { kind: 'dead_letter' } });
    await engine.reserve({ queues: ['q'], leaseMs: 1000 }); // d again
    clock.advance(1000);
    await engine.runMaintenance(); // d and `once` expire; `once` has no attempts left
    await engine.requeueDeadLetters({ queue: 'q', jobIds: [e.id] });
    await engine.cancel(e.id);
    await engine.enqueue(job('q', { idempotencyKey: 'k' }));
    await engine.enqueue(job('q', { idempotencyKey: 'k' }));
    await engine.enqueueBatch([job('q', { priority: 99 })]);
    assert.deepEqual(Object.fromEntries([...totals].sort()), {
      acked: 3,
      cancelled: 1,
      'dead_lettered:dead_lettered': 1,
      'dead_lettered:lease_expired': 1,
      deduplicated: 1,
      enqueued: 7,
      expired: 2,
      nacked: 2,
      rejected: 1,
      requeued: 1,
      reserved: 7,
    });
    assert.equal(reportedInTransaction, false, 'events are reported after the commit');
  });
});
