/**
 * The AckBatch of jobs others wait on, on the PostgreSQL store: completed as a set
 * (leases.completeDependedOnMany), what waits on them released as sets
 * (dependencies.releaseCompleted, its locks first) and the released jobs' results read in one
 * statement (dependencies.ofMany) end with the same rows, edges, counters and results as
 * acking the jobs one by one (the per-edge path). The scenario is tests/helpers/acked-dependencies.ts,
 * as on SQLite (batch-statements.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import {
  type AckedDependencies,
  ackDependencies,
  assertAckedDependencies,
} from '../helpers/acked-dependencies.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('ackbatch');

async function ackedDependencies(schema: string, together: boolean): Promise<AckedDependencies> {
  const engine = await Engine.open(
    new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema)),
    defaultEngineOptions(),
    {
      clock: new FakeClock(),
    },
  );
  const client = new pg.Client(postgres.cluster.connection(postgres.database));
  await client.connect();
  try {
    await client.query(`SET search_path = ${schema}`);
    return await ackDependencies(
      engine,
      {
        state: async (id) =>
          (await client.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [id])).rows[0]
            ?.state,
        edges: async () =>
          (
            await client.query<{ child: string; parent: string; state: string }>(
              'SELECT c.id AS child, d.parent_id AS parent, d.state FROM job_dependencies d JOIN jobs c ON c.seq = d.child_seq',
            )
          ).rows,
        completions: async () =>
          Number(
            (await client.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE queue = 'callbacks'"))
              .rows[0]?.n,
          ),
      },
      together,
    );
  } finally {
    await client.end();
    await engine.close();
  }
}

test('PostgreSQL: an AckBatch of jobs others wait on releases, schedules and leaves waiting exactly as acking them one by one', async () => {
  const together = await ackedDependencies('together', true);
  assertAckedDependencies(together);
  assert.deepEqual(together, await ackedDependencies('one_by_one', false));
});
