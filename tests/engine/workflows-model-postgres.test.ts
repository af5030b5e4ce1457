/**
 * The workflows model (issue 33, tests/helpers/workflows-model.ts) on the PostgreSQL
 * store: the same random steps as on SQLite (workflows-model.test.ts), job and batch
 * states and completion jobs read from the schema's tables after every step, counters
 * every 50 steps and at the end; then again with no completed job kept and completions in
 * AckBatch calls, as on SQLite.
 *
 * SEPP_WORKFLOW_MODEL_STEPS (default 150 here: each step goes over the network, ~10 ms of
 * the test's CPU and ~5 ms of the server's; `npm run test:long` runs 1,000) steps,
 * SEPP_WORKFLOW_MODEL_SEED replays. The property is the same at any count (the store agrees
 * with the reference after every step); each run draws a new seed, so the sequences tried add
 * up across runs, and the same steps run 400 at a time on SQLite (workflows-model.test.ts).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine } from '../../src/engine/engine.ts';
import {
  defaultEngineLimits,
  defaultEngineOptions,
  defaultQueueSettings,
} from '../../src/engine/settings.ts';
import { PostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { useCluster } from '../helpers/postgres.ts';
import { countMismatches } from '../helpers/postgres-counts.ts';
import { seedFromEnv } from '../helpers/prng.ts';
import { runWorkflowsModel } from '../helpers/workflows-model.ts';

const steps = Number(process.env.SEPP_WORKFLOW_MODEL_STEPS ?? 150);
const seed = seedFromEnv('SEPP_WORKFLOW_MODEL_SEED');

const postgres = useCluster('workflows');

/**
 * The model on `schema`: completed jobs kept (acks one at a time, through the Settler), or,
 * with `ackBatches`, none kept and completions in AckBatch calls (the jobs others wait on
 * completed and what waits on them released as sets: completeDependedOnMany, releaseCompleted).
 */
async function runOnPostgres(schema: string, ackBatches: boolean): Promise<void> {
  const store = new PostgresStore(postgres.cluster.storeOptions(postgres.database, schema));
  const engine = await Engine.open(
    store,
    {
      ...defaultEngineOptions(),
      limits: { ...defaultEngineLimits, maxQueues: 100_000 },
      queueDefaults: { ...defaultQueueSettings, completedRetentionMs: ackBatches ? 0 : 86_400_000 },
    },
    { clock: new FakeClock() },
  );
  const client = new pg.Client(postgres.cluster.connection(postgres.database));
  await client.connect();
  try {
    await client.query(`SET search_path = ${schema}`);
    const done = await runWorkflowsModel(
      engine,
      {
        jobStates: async () =>
          new Map(
            (
              await client.query<{ id: string; state: string }>(
                "SELECT id, state FROM jobs WHERE queue <> 'callbacks'",
              )
            ).rows.map((r) => [r.id, r.state]),
          ),
        completionPayloads: async () =>
          (
            await client.query<{ payload: Buffer }>("SELECT payload FROM jobs WHERE queue = 'callbacks'")
          ).rows.map((r) => r.payload),
        batchState: async (id) =>
          (await client.query<{ state: string }>('SELECT state FROM batches WHERE id = $1', [id])).rows[0]
            ?.state,
      },
      { seed, steps, ackBatches },
    );
    console.log(
      `workflows model (PostgreSQL${ackBatches ? ', AckBatch' : ''}): ${done} (SEPP_WORKFLOW_MODEL_SEED replays)`,
    );
  } finally {
    await client.end();
    await engine.close();
  }
  assert.deepEqual(await countMismatches(postgres.cluster, postgres.database, schema), []);
}

test(`workflows model on PostgreSQL: ${steps} random steps agree with the reference after each`, async () => {
  await runOnPostgres('model', false);
});

test(`workflows model on PostgreSQL, completions in AckBatch calls: ${steps} random steps agree with the reference`, async () => {
  await runOnPostgres('model_batches', true);
});
