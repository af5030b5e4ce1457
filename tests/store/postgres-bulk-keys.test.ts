/**
 * Request keys of bulk operations on two servers that share a PostgreSQL schema: the same
 * request started under one key through both at once starts one operation — the primary key
 * of bulk_operation_keys (schema/postgres/0009) decides which — and the other server answers
 * FAILED_PRECONDITION naming it (it does not keep the operation: the winner runs it), with
 * one key row and one audit entry.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('bulkkeys');

async function openEngine(schema: string): Promise<Engine> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema));
  await store.start();
  return Engine.open(store, defaultEngineOptions(), { clock: new FakeClock() });
}

test('one key, two servers at once: one operation, the other answers failed_precondition naming it', async () => {
  const a = await openEngine('keys');
  const b = await openEngine('keys');
  try {
    // Made through A: B finds it in the store on its first call (queues/queue-lookup.ts).
    await a.enqueueBatch(
      Array.from({ length: 10 }, () => ({ queue: 'q', type: 't', payload: new Uint8Array([1]) })),
    );
    const request = {
      action: 'delete' as const,
      filter: { queue: 'q', states: ['ready' as const] },
      audit: { actor: 'key:ops', action: 'jobs.delete', target: 'queue:q' },
      requestKey: 'two-servers',
    };
    const [onA, onB] = await Promise.allSettled([a.runBulk(request), b.runBulk(request)]);
    const won = [onA, onB].filter((r) => r.status === 'fulfilled');
    const lost = [onA, onB].filter((r) => r.status === 'rejected');
    assert.equal(won.length, 1, 'one server started it');
    const operation = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<Engine['runBulk']>>>).value;
    assert.equal(operation.changed, 10);
    const refusal = (lost[0] as PromiseRejectedResult).reason as SeppError;
    assert.ok(refusal instanceof SeppError);
    assert.equal(refusal.code, 'failed_precondition');
    assert.match(refusal.message, new RegExp(operation.id));
    const client = await postgres.client();
    const rows = await client.query('SELECT operation_id FROM keys.bulk_operation_keys');
    assert.deepEqual(
      rows.rows.map((r: { operation_id: string }) => r.operation_id),
      [operation.id],
    );
    const entries = (await a.listAudit({ action: 'jobs.delete' })).items;
    assert.deepEqual(
      entries.map((e) => e.details.operationId),
      [operation.id],
    );
  } finally {
    await a.close();
    await b.close();
  }
});
