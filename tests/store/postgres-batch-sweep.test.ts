/**
 * The sweep of ended batches with two servers on one PostgreSQL schema (task batchlife):
 * both sweep at once, in small chunks, until neither finds anything; every batch and
 * member row goes, none twice (the counts add up to the rows there were), no member row
 * outlives its batch, and neither waits on the other's locks (SKIP LOCKED) or deadlocks.
 * Also migration 0016 (a member's batch id on its job row) on a schema with members, and a
 * member it left without one (its lease was over) requeued later: its lease carries the id.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { migrations } from '../../src/store/postgres/gen/migrations.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('batchsweep');
const batches = 20;
const membersEach = 30;

test('two servers sweep ended batches at once: every row goes once, members never outlive their batch', async () => {
  const schema = 'sweep2';
  const open = () => new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema));
  const first = open();
  const engine = await Engine.open(first, defaultEngineOptions(), { clock: new FakeClock() });
  const second = open();
  const other = await Engine.open(second, defaultEngineOptions(), { clock: new FakeClock() });
  const client = new pg.Client(postgres.cluster.connection(postgres.database));
  await client.connect();
  try {
    for (let b = 0; b < batches; b++) {
      const member = { queue: `sw${b % 3}`, type: 'm', payload: new Uint8Array() };
      const { batch } = await engine.createBatch({
        jobs: Array.from({ length: membersEach }, () => member),
        seal: true,
      });
      await engine.cancelBatch(batch.id);
    }
    const count = async (table: string) =>
      Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.${table}`)).rows[0]?.n);
    assert.equal(await count('batch_members'), batches * membersEach);

    /** One server's sweep, chunk by chunk, until a call finds nothing; what it deleted in all. */
    const sweepAll = async (store: PostgresStore) => {
      const total = { members: 0, batches: 0 };
      for (;;) {
        const swept = await store.write(function* (tx) {
          return yield* tx.dependencies!.sweepBatches({ beforeMs: Number.MAX_SAFE_INTEGER, limit: 25 });
        });
        total.members += swept.members;
        total.batches += swept.batches;
        // No member row of a batch that is gone, at any moment.
        const orphans = await client.query(
          `SELECT 1 FROM ${schema}.batch_members m WHERE NOT EXISTS
             (SELECT 1 FROM ${schema}.batches b WHERE b.id = m.batch_id) LIMIT 1`,
        );
        assert.equal(orphans.rowCount, 0, 'a member row outlived its batch');
        if (swept.members === 0 && swept.batches === 0) return total;
      }
    };
    const [a, b] = await Promise.all([sweepAll(first), sweepAll(second)]);
    assert.equal(a.members + b.members, batches * membersEach, 'every member row once');
    assert.equal(a.batches + b.batches, batches, 'every batch once');
    assert.equal(await count('batch_members'), 0);
    assert.equal(await count('batches'), 0);
  } finally {
    await client.end();
    await other.close();
    await engine.close();
  }
});

test('migrations 0016 and 0018 on a schema with batch members: each a lease can take gets its batch id, its lease carries it; readers of jobs go on while rows are filled', async () => {
  const schema = 'batchids';
  const options = postgres.cluster.storeOptions(postgres.database, schema);
  const open = () =>
    Engine.open(new PostgresStore(options), defaultEngineOptions(), { clock: new FakeClock() });
  // 0016 adds the column (ACCESS EXCLUSIVE on jobs to its commit), 0018 fills it.
  const steps = migrations.filter((m) => m.name.includes('_job_batch_id'));
  assert.deepEqual(
    steps.map((m) => m.name),
    ['0016_job_batch_id.sql', '0018_job_batch_id_fill.sql'],
  );
  let engine = await open();
  const client = new pg.Client(postgres.cluster.connection(postgres.database));
  const reader = new pg.Client(postgres.cluster.connection(postgres.database));
  await client.connect();
  await reader.connect();
  try {
    const member = { queue: 'bi', type: 'm', payload: new Uint8Array() };
    const { batch, results } = await engine.createBatch({ jobs: [member, member, member] });
    const plain = await engine.enqueue(member);
    // A member whose lease is over (cancelled): the migration leaves its row alone.
    const third = results[2];
    assert.ok(third?.ok);
    const cancelled = third.jobId;
    await engine.cancel(cancelled);
    await engine.close();
    // The jobs as they were before the migration (no column), then its SQL as the migration runs it.
    await client.query(`ALTER TABLE ${schema}.jobs DROP COLUMN batch_id`);
    // The steps' SQL as the migrations run it, each in its transaction. Before a step's commit, a
    // step that filled rows must let a reader of jobs go on (its UPDATE is not under ACCESS EXCLUSIVE).
    await reader.query(`SET lock_timeout = '200ms'`);
    for (const step of steps) {
      await client.query('BEGIN');
      await client.query(`SET LOCAL search_path = ${schema}`);
      await client.query(step.sql);
      const filled = await client.query(
        `SELECT count(*)::int AS n FROM ${schema}.jobs WHERE batch_id IS NOT NULL`,
      );
      if (filled.rows[0]?.n !== 0) {
        const read = await reader.query(`SELECT count(*)::int AS n FROM ${schema}.jobs`);
        assert.deepEqual(read.rows, [{ n: 4 }], `${step.name}: a reader of jobs went on`);
      }
      await client.query('COMMIT');
    }
    engine = await open();
    const leased = await engine.reserve({ queues: ['bi'], maxJobs: 10 });
    assert.deepEqual(leased.map((j) => j.batchId).sort(), [batch.id, batch.id, null].sort());
    assert.equal(leased.find((j) => j.id === plain.jobId)?.batchId, null);
    const kept = await client.query(`SELECT batch_id FROM ${schema}.jobs WHERE id = $1`, [cancelled]);
    assert.deepEqual(kept.rows, [{ batch_id: null }]);
    // Task wf18: requeued by an operator (by id, in bulk, as a dead letter), it is leased with its batch id.
    const requeues = [
      () => engine.requeueJob(cancelled),
      () => engine.runBulk({ action: 'requeue', filter: { queue: 'bi', states: ['dead'] } }),
      () => engine.requeueDeadLetters({ queue: 'bi', jobIds: [cancelled] }),
    ];
    for (const requeue of requeues) {
      await client.query(`UPDATE ${schema}.jobs SET batch_id = NULL WHERE id = $1`, [cancelled]);
      await requeue();
      const [again] = await engine.reserve({ queues: ['bi'], maxJobs: 10 });
      assert.deepEqual([again?.id, again?.batchId], [cancelled, batch.id]);
      const directive = { kind: 'dead_letter' } as const;
      await engine.nack({ jobId: cancelled, attempt: again!.attempt, error: 'x', directive });
    }
  } finally {
    await client.end();
    await reader.end();
    await engine.close();
  }
});
