/**
 * review17a (a finding, mended): a dead letter's id that PostgreSQL cannot hold as text (a
 * NUL in it) reaches the store as given — the admin API passes ids that are no UUID through
 * (`normalizeJobId(id) ?? id`, "ids that are no UUID match nothing") — and PostgreSQL refuses
 * the statement (22021, no storage failure). SQLite matches nothing for such an id; on
 * PostgreSQL, `deadLettersWaitedOn` (new this stop, GET …/dead-letters/{jobId}/waiting)
 * rejects with the driver's raw error and `deleteDeadLetters` with INTERNAL. Expected: the
 * answer SQLite gives, nothing waits and nothing is deleted.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import { SeppError } from '../../src/engine/errors.ts';
import { defaultEngineOptions } from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';

const postgres = useCluster('review17a');
const engines: Engine[] = [];

after(async () => {
  for (const engine of engines) await engine.close();
});

/** What a call answered, or how it was refused (a SeppError's code; another error's message). */
function outcome<T>(call: Promise<T>): Promise<string> {
  return call.then(
    (answer) => `answered ${JSON.stringify(answer)}`,
    (error: unknown) => `refused ${error instanceof SeppError ? error.code : String(error)}`,
  );
}

test('a dead letter id with a NUL matches nothing on PostgreSQL, as on SQLite', async () => {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, 'review17a'));
  const engine = await Engine.open(store, defaultEngineOptions(), { clock: new FakeClock() });
  engines.push(engine);
  await engine.enqueue({ queue: 'q', type: 't', payload: new Uint8Array() });
  const selection = { queue: 'q', jobIds: ['a\u0000b'] };
  assert.equal(await outcome(engine.deadLettersWaitedOn(selection)), 'answered {"waiting":0,"more":false}');
  assert.equal(await outcome(engine.deleteDeadLetters(selection)), 'answered 0');
});

test('a job id PostgreSQL cannot hold as text is invalid_argument, not internal', async () => {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, 'review17a_ids'));
  const engine = await Engine.open(store, defaultEngineOptions(), { clock: new FakeClock() });
  engines.push(engine);
  // A read (GetJob by an id no protocol checks) and a write (ids chosen in the admin API, passed on as given).
  assert.equal(await outcome(engine.getJob('a\u0000b')), 'refused invalid_argument');
  assert.equal(await outcome(engine.changeSelectedJobs('cancel', ['a\u0000b'])), 'refused invalid_argument');
  // The store goes on: the failed unit took nothing else with it.
  const { jobId } = await engine.enqueue({ queue: 'q', type: 't', payload: new Uint8Array() });
  assert.equal((await engine.getJob(jobId)).state, 'ready');
});
