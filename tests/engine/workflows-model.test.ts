/**
 * The workflows model (issue 33, tests/helpers/workflows-model.ts) on the SQLite store:
 * random dependencies, policies, outcomes, cancels, requeues and sealed batches against a
 * reference model, job and batch states and completion jobs compared after every step; then
 * again with no completed job kept and completions in AckBatch calls (the jobs others wait
 * on released together: releaseDependentsOfCompleted, docs/decisions/0012).
 *
 * SEPP_WORKFLOW_MODEL_STEPS (default 400) steps per seed, SEPP_WORKFLOW_MODEL_SEED replays.
 */
import { test } from 'node:test';
import { defaultEngineLimits, defaultQueueSettings } from '../../src/engine/settings.ts';
import { type TestEngine, withEngine } from '../helpers/engine.ts';
import { seedFromEnv } from '../helpers/prng.ts';
import { runWorkflowsModel } from '../helpers/workflows-model.ts';

const steps = Number(process.env.SEPP_WORKFLOW_MODEL_STEPS ?? 400);
const seed = seedFromEnv('SEPP_WORKFLOW_MODEL_SEED');

const rowsOf = ({ db }: Pick<TestEngine, 'db'>) => ({
  jobStates: async () =>
    new Map(
      db
        .prepare<[], { id: string; state: string }>("SELECT id, state FROM jobs WHERE queue <> 'callbacks'")
        .all()
        .map((r) => [r.id, r.state]),
    ),
  completionPayloads: async () =>
    db.prepare<[], Buffer>("SELECT payload FROM jobs WHERE queue = 'callbacks'").pluck().all(),
  batchState: async (id: string) =>
    db.prepare<[string], string>('SELECT state FROM batches WHERE id = ?').pluck().get(id),
});

test(`workflows model: ${steps} random steps agree with the reference after each`, async () => {
  const limits = { ...defaultEngineLimits, maxQueues: 100_000 };
  await withEngine(
    { options: { limits, queueDefaults: { ...defaultQueueSettings, completedRetentionMs: 86_400_000 } } },
    async (opened) => {
      const done = await runWorkflowsModel(opened.engine, rowsOf(opened), { seed, steps });
      console.log(`workflows model (SQLite): ${done} (SEPP_WORKFLOW_MODEL_SEED replays)`);
    },
  );
});

test(`workflows model, completions in AckBatch calls: ${steps} random steps agree with the reference`, async () => {
  const limits = { ...defaultEngineLimits, maxQueues: 100_000 };
  await withEngine({ options: { limits } }, async (opened) => {
    const done = await runWorkflowsModel(opened.engine, rowsOf(opened), { seed, steps, ackBatches: true });
    console.log(`workflows model (SQLite, AckBatch): ${done} (SEPP_WORKFLOW_MODEL_SEED replays)`);
  });
});
