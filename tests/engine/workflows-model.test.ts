/**
 * The workflows model (issue 33, tests/helpers/workflows-model.ts) on the SQLite store:
 * random dependencies, policies, outcomes, cancels, requeues and sealed batches against a
 * reference model, job and batch states and completion jobs compared after every step.
 *
 * SEPP_WORKFLOW_MODEL_STEPS (default 400) steps per seed, SEPP_WORKFLOW_MODEL_SEED replays.
 */
import { test } from 'node:test';
import { defaultEngineLimits, defaultQueueSettings } from '../../src/engine/settings.ts';
import { withEngine } from '../helpers/engine.ts';
import { seedFromEnv } from '../helpers/prng.ts';
import { runWorkflowsModel } from '../helpers/workflows-model.ts';

const steps = Number(process.env.SEPP_WORKFLOW_MODEL_STEPS ?? 400);
const seed = seedFromEnv('SEPP_WORKFLOW_MODEL_SEED');

test(`workflows model: ${steps} random steps agree with the reference after each`, async () => {
  const limits = { ...defaultEngineLimits, maxQueues: 100_000 };
  await withEngine(
    { options: { limits, queueDefaults: { ...defaultQueueSettings, completedRetentionMs: 86_400_000 } } },
    async ({ engine, db }) => {
      const done = await runWorkflowsModel(
        engine,
        {
          jobStates: async () =>
            new Map(
              db
                .prepare<[], { id: string; state: string }>(
                  "SELECT id, state FROM jobs WHERE queue <> 'callbacks'",
                )
                .all()
                .map((r) => [r.id, r.state]),
            ),
          completionPayloads: async () =>
            db.prepare<[], Buffer>("SELECT payload FROM jobs WHERE queue = 'callbacks'").pluck().all(),
          batchState: async (id) =>
            db.prepare<[string], string>('SELECT state FROM batches WHERE id = ?').pluck().get(id),
        },
        { seed, steps },
      );
      console.log(`workflows model (SQLite): ${done} (SEPP_WORKFLOW_MODEL_SEED replays)`);
    },
  );
});
