/**
 * limits.max_dependents_per_job on two servers sharing one PostgreSQL schema: enqueues of
 * jobs depending on one job, raced through both, never give it more dependents than the
 * limit. Each enqueue locks the job's row before it reads its count (store/postgres/
 * dependencies.ts, `targets`), so the second server's read waits for the first's commit and
 * sees its count.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('dependents');
const payload = new Uint8Array([1]);
const engines: Engine[] = [];

after(async () => {
  for (const engine of engines) await engine.close();
});

async function open(): Promise<Engine> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, 'dependents'));
  const defaults = defaultEngineOptions();
  const options = { ...defaults, limits: { ...defaults.limits, maxDependentsPerJob: 3 } };
  const engine = await Engine.open(store, options, { clock: new FakeClock() });
  engines.push(engine);
  return engine;
}

test('two servers racing to depend on one job give it at most max_dependents_per_job', async () => {
  const a = await open();
  const b = await open();
  for (let round = 0; round < 3; round++) {
    const { jobId: gate } = await a.enqueue({ queue: `gate${round}`, type: 't', payload });
    // Eight enqueues, four through each server, all at once: three may be stored.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 === 0 ? a : b).enqueue({ queue: `wait${round}`, type: 't', payload, dependsOn: [gate] }),
      ),
    );
    const stored = outcomes.filter((o) => o.status === 'fulfilled');
    assert.equal(stored.length, 3, `round ${round}: ${JSON.stringify(outcomes)}`);
    for (const o of outcomes) {
      if (o.status === 'fulfilled') continue;
      const error: unknown = o.reason;
      assert.ok(error instanceof SeppError && error.rejection?.reason === 'invalid_job', String(error));
      assert.match(error.message, /has 3 jobs depending on it, the limit is 3/);
    }
    const dependents = (await b.getJob(gate)).dependents ?? [];
    assert.deepEqual(dependents.map((d) => d.id).sort(), stored.map((o) => o.value.jobId).sort());
  }
});
