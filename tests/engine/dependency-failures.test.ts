/**
 * A chain cancelled by its first job failing is cancelled a bounded part per transaction on
 * the SQLite store (the scenario: tests/helpers/dependency-failures.ts; PostgreSQL's:
 * tests/store/postgres-dependency-failures.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import {
  boundedCascade,
  chain,
  countsOf,
  fail,
  flowCancelKeepsNone,
  passes,
  type Subject,
} from '../helpers/dependency-failures.ts';
import { openTestEngine } from '../helpers/engine.ts';

/** The SQLite store's Subject, with the ids kept for maintenance. */
type SqliteSubject = Subject & { keptIds(): string[] };

async function sqliteSubject(dataDir?: string): Promise<SqliteSubject> {
  const clock = new FakeClock();
  const observer = passes(clock);
  const t = await openTestEngine({
    clock,
    durability: 'relaxed',
    deps: { onMaintenancePassed: observer.onMaintenancePassed },
    ...(dataDir === undefined ? {} : { dataDir }),
  });
  let closed = false;
  return {
    engine: t.engine,
    clock,
    pass: observer.pass,
    kept: async () =>
      t.db.prepare<[], number>('SELECT count(*) FROM dependency_failures').pluck().get() ?? -1,
    keptIds: () => t.db.prepare<[], string>('SELECT job_id FROM dependency_failures').pluck().all(),
    restart: async () => {
      await t.engine.close();
      closed = true;
      return sqliteSubject(t.dataDir);
    },
    close: async () => {
      if (!closed) assert.deepEqual(await t.engine.counterMismatches(), [], 'the counters match the rows');
      if (!closed) await t.engine.close();
      t.dispose();
    },
  };
}

test('a chain cancelled by its first job failing is cancelled a bounded part per unit', async () => {
  await boundedCascade(() => sqliteSubject(), 'chain');
});

test('a big cancelFlow keeps none of its jobs for maintenance: nothing waits on them', async () => {
  await flowCancelKeepsNone(() => sqliteSubject(), 'flowchain');
});

test('a kept job requeued before the pass runs again: its failure is not passed on', async () => {
  const s = await sqliteSubject();
  try {
    await chain(s.engine, 'head', 'chain');
    await fail(s.engine, 'head');
    const [kept] = s.keptIds();
    assert.ok(kept !== undefined);
    assert.equal((await s.engine.getJob(kept)).state, 'cancelled');
    await s.engine.requeueJob(kept);
    const before = await countsOf(s.engine, 'chain');
    await s.pass();
    assert.equal(await s.kept(), 0, 'taken');
    assert.equal((await s.engine.getJob(kept)).state, 'ready');
    // It left the chain's cancelled jobs for ready; the rest still wait on it.
    assert.deepEqual(
      await countsOf(s.engine, 'chain'),
      { waiting: before.waiting, cancelled: before.cancelled },
      'no more cancelled',
    );
    assert.equal((await s.engine.getQueue('chain'))?.counts.ready, 1);
  } finally {
    await s.close();
  }
});

test('a deleted job a unit left to maintenance passes on as deleted: what waits on it is cancelled', async () => {
  const s = await sqliteSubject();
  try {
    // The chain waits on its head under `wait`; `other` has one job waiting on it so too.
    const head = await chain(s.engine, 'head', 'chain', 'wait');
    await fail(s.engine, 'head');
    const { jobId: other } = await s.engine.enqueue({ queue: 'head', type: 't', payload: new Uint8Array() });
    const { jobId: waits } = await s.engine.enqueue({
      queue: 'w',
      type: 't',
      payload: new Uint8Array(),
      dependsOn: [other],
      onDependencyFailure: 'wait',
    });
    await fail(s.engine, 'head');
    assert.equal((await countsOf(s.engine, 'chain')).waiting, 1200, 'a failure leaves `wait` jobs waiting');
    // Both deleted in one unit: the head's chain spends its bound, so `other` is kept, deleted.
    assert.equal(await s.engine.deleteDeadLetters({ queue: 'head', jobIds: [head, other] }), 2);
    assert.ok(s.keptIds().includes(other), 'kept for maintenance');
    assert.equal((await s.engine.getJob(waits)).state, 'waiting');
    for (let i = 0; i < 5 && s.keptIds().length > 0; i++) await s.pass();
    const info = await s.engine.getJob(waits);
    assert.equal(`${info.state} ${info.cancelledBy}`, `cancelled dependency:${other} deleted`);
    assert.deepEqual(await countsOf(s.engine, 'chain'), { waiting: 0, cancelled: 1200 });
  } finally {
    await s.close();
  }
});
