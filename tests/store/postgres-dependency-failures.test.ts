/**
 * A chain cancelled by its first job failing is cancelled a bounded part per transaction on
 * the PostgreSQL store, and a restart on the shared store goes on where the last pass stopped
 * (the scenario: tests/helpers/dependency-failures.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { boundedCascade, passes, type Subject } from '../helpers/dependency-failures.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('failures');

async function postgresSubject(): Promise<Subject> {
  const clock = new FakeClock();
  const observer = passes(clock);
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, 'failures'));
  await store.start();
  const engine = await Engine.open(store, defaultEngineOptions(), {
    clock,
    onMaintenancePassed: observer.onMaintenancePassed,
  });
  return {
    engine,
    clock,
    pass: observer.pass,
    kept: async () => {
      const client = await postgres.client();
      const answer = await client.query('SELECT count(*)::int AS n FROM failures.dependency_failures');
      return answer.rows[0].n as number;
    },
    restart: async () => {
      await engine.close();
      return postgresSubject();
    },
    close: async () => {
      assert.deepEqual(await engine.counterMismatches(), [], 'the counters match the rows');
      await engine.close();
    },
  };
}

test('a chain cancelled by its first job failing is cancelled a bounded part per unit', async () => {
  await boundedCascade(() => postgresSubject(), 'chain');
});
