/**
 * The give-back bound (tests/helpers/give-back-bound.ts) on the PostgreSQL store, whose attempt
 * columns are int4: a budget grown to int32 exactly is stored, the give-back past it is refused
 * before any statement could overflow. As on SQLite (give-back-bound.test.ts).
 */
import { test } from 'node:test';
import pg from 'pg';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { giveBackBound } from '../helpers/give-back-bound.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('givebackbound');

test('give_back on PostgreSQL: the budget never grows past int32; the give-back that would is refused', async () => {
  const schema = 'bound';
  const engine = await Engine.open(
    new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema)),
    defaultEngineOptions(),
    { clock: new FakeClock() },
  );
  const client = new pg.Client(postgres.cluster.connection(postgres.database));
  await client.connect();
  try {
    await client.query(`SET search_path = ${schema}`);
    await giveBackBound(engine, async (jobId, attempt) => {
      await client.query('UPDATE jobs SET attempt = $1, attempt_base = $1 WHERE id = $2', [attempt, jobId]);
    });
  } finally {
    await client.end();
    await engine.close();
  }
});
