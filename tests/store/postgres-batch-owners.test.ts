/**
 * limits.max_open_batches_per_key on two servers sharing one PostgreSQL schema: batches
 * created for one key through both at once never outnumber the limit. The count is read
 * after a transaction-level advisory lock on the key's hash (store/postgres/batches.ts,
 * `unendedBatchesOf`), so the second server's count waits for the first's commit and sees
 * its batch; creations for other keys take other locks and do not wait.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('batchowners');
const engines: Engine[] = [];

after(async () => {
  for (const engine of engines) await engine.close();
});

async function open(): Promise<Engine> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, 'batchowners'));
  const defaults = defaultEngineOptions();
  const options = { ...defaults, limits: { ...defaults.limits, maxOpenBatchesPerKey: 3 } };
  const engine = await Engine.open(store, options, { clock: new FakeClock() });
  engines.push(engine);
  return engine;
}

test("two servers racing to create one key's batches leave it at most max_open_batches_per_key", async () => {
  const a = await open();
  const b = await open();
  for (let round = 0; round < 3; round++) {
    const owner = `etl${round}`;
    // Eight creations, four through each server, all at once: three may be stored.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).createBatch({ owner })),
    );
    const created = outcomes.filter((o) => o.status === 'fulfilled');
    assert.equal(created.length, 3, `round ${round}: ${JSON.stringify(outcomes)}`);
    for (const o of outcomes) {
      if (o.status === 'fulfilled') continue;
      const error: unknown = o.reason;
      assert.ok(error instanceof SeppError && error.code === 'resource_exhausted', String(error));
      assert.match(error.message, new RegExp(`API key ${owner} holds 3 batches not ended`));
    }
    const stored = await b.listBatches({ owner });
    assert.deepEqual(
      stored.batches.map((batch) => batch.id).sort(),
      created.map((o) => o.value.batch.id).sort(),
    );
  }
});
