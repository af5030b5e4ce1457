/**
 * A batch's on_death job on two servers sharing one PostgreSQL schema: two members of one
 * batch die at once, one through each server, and exactly one on_death job is enqueued.
 * The race is made certain, not hoped for: a third connection holds the batch's row lock
 * while both servers' dead-letters run, until both wait on that row (pg_locks); then it
 * lets go. The first to take the row names its member the first dead (`first_dead_id`,
 * store/postgres/batches.ts `memberEnded`); the second's UPDATE re-reads the row after
 * that commit, finds it named, and enqueues nothing.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('batchdeath');
const schema = 'batchdeath';
const engines: Engine[] = [];

after(async () => {
  for (const engine of engines) await engine.close();
});

async function open(): Promise<Engine> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema));
  const engine = await Engine.open(store, defaultEngineOptions(), { clock: new FakeClock() });
  engines.push(engine);
  return engine;
}

test('two members dying at once on two servers enqueue one on_death', async () => {
  const a = await open();
  const b = await open();
  const holder = new pg.Client(postgres.cluster.connection(postgres.database));
  await holder.connect();
  try {
    await holder.query(`SET search_path = ${schema}`);
    for (let round = 0; round < 3; round++) {
      const queue = `m${round}`;
      const alerts = `alerts${round}`;
      const { batch, results } = await a.createBatch({
        onDeath: { queue: alerts, type: 'death', payload: new Uint8Array() },
        jobs: [0, 1, 2].map(() => ({ queue, type: 'm', payload: new Uint8Array() })),
        seal: true,
      });
      const [first] = await a.reserve({ queues: [queue], maxJobs: 1 });
      const [second] = await b.reserve({ queues: [queue], maxJobs: 1, waitMs: 5_000 });
      assert.ok(first && second);

      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM batches WHERE id = $1 FOR UPDATE', [batch.id]);
      const die = (engine: Engine, job: typeof first) =>
        engine.nack({
          jobId: job.id,
          attempt: job.attempt,
          error: `${job.id} died`,
          directive: { kind: 'dead_letter' },
        });
      const deaths = [die(a, first), die(b, second)];
      // Both servers' units wait on the batch's row before the holder lets go.
      for (let waited = 0; ; waited++) {
        const { rows } = await holder.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND locktype IN ('transactionid', 'tuple')",
        );
        if (rows[0]!.n >= 2) break;
        assert.ok(waited < 2000, 'both dead-letters reach the batch row');
        await new Promise((resolve) => setImmediate(resolve));
      }
      await holder.query('COMMIT');
      await Promise.all(deaths);

      const { batch: after } = await b.getBatch(batch.id);
      assert.deepEqual([after.dead, after.pending], [2, 1]);
      assert.ok([first.id, second.id].includes(after.firstDeadId!), `round ${round}: ${after.firstDeadId}`);
      // The job may have been enqueued through b: a learns of it from the database's notice, so
      // it waits for it; the count of jobs in the queue is read from the database itself.
      const alerted = await a.reserve({ queues: [alerts], maxJobs: 10, waitMs: 5_000 });
      const { rows: stored } = await holder.query<{ id: string }>('SELECT id FROM jobs WHERE queue = $1', [
        alerts,
      ]);
      assert.deepEqual(
        [alerted.map((l) => l.id), stored.map((row) => row.id)],
        [[after.deathJobId], [after.deathJobId]],
        `round ${round}: one on_death`,
      );
      const payload = JSON.parse(new TextDecoder().decode(alerted[0]!.payload)) as {
        batch: { firstDead: { jobId: string; error: string } };
      };
      assert.deepEqual(payload.batch.firstDead, {
        jobId: after.firstDeadId,
        error: `${after.firstDeadId} died`,
      });
      assert.equal(results.length, 3);
    }
  } finally {
    await holder.end();
  }
});
