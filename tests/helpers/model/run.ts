/**
 * Model-based test: random sequences of operations run against the real
 * engine (on a store of the backend under test, with the fake clock) and
 * against a plain in-memory model of what a queue must do; after every step
 * the answers, every stored job and the per-queue counts must agree. Job
 * control is in it too: cancels (of waiting jobs, and requests on leased ones
 * that end them cancelled), expiry, updates of waiting jobs, and what
 * idempotency keys mean. It is a case of the store conformance suite
 * (tests/store/conformance/cases/model.ts), run against every backend.
 *
 * Each run has its own seed (base seed + run index). On failure the seed, the
 * step and the run's log are printed; reproduce with
 *   SEPP_MODEL_SEED=<seed> SEPP_MODEL_RUNS=1 npm run test:files -- conformance/sqlite-model
 * Bigger: SEPP_MODEL_RUNS (default: the backend's, backend.ts) and SEPP_MODEL_STEPS (default 20).
 */
import type { StoreBackend } from '../../store/conformance/backend.ts';
import { seedFromEnv } from '../prng.ts';
import { coverage, saw } from './coverage.ts';
import { OperatorSteps } from './operator-steps.ts';
import { openRunEngine } from './run-state.ts';
import { StoredJobs } from './stored-jobs.ts';

const runsFromEnv = process.env.SEPP_MODEL_RUNS || undefined;
const stepsPerRun = Number(process.env.SEPP_MODEL_STEPS ?? 20);
const baseSeed = seedFromEnv('SEPP_MODEL_SEED');

/**
 * One run: the engine and the model side by side (tests/helpers/model/), one
 * random step at a time, checked against each other after every step.
 */
class Run extends OperatorSteps {
  private readonly stored = new StoredJobs();

  async step(): Promise<void> {
    const d = this.dice;
    // Weights follow the state, so that most steps do something: settle when
    // there are leases, reserve when jobs are ready, manage dead letters when
    // there are some; now and then a step that is bound to be refused.
    const states = { scheduled: 0, ready: 0, leased: 0, completed: 0, dead: 0, cancelled: 0, waiting: 0 };
    for (const j of this.model.jobs.values()) states[j.state]++;
    const settle = states.leased > 0 ? 10 : 0.5;
    const op = d.weighted<() => Promise<void>>([
      [states.ready + states.scheduled < 3 ? 20 : 10, () => this.enqueueOne()],
      [4, () => this.enqueueBatch()],
      [3, () => this.enqueueAtomic()],
      [states.ready > 0 ? 16 : 3, () => this.reserve()],
      [settle, () => this.ack()],
      [settle * 0.3, () => this.ackBatch()],
      [settle * 1.2, () => this.nack()],
      [settle * 0.4, () => this.extend()],
      [10, () => this.advance()],
      [3, () => this.cancel()],
      [1, () => this.cancelJobs()],
      [states.ready + states.scheduled > 0 ? 3 : 0.5, () => this.updateJob()],
      [states.scheduled > 0 ? 1 : 0.2, () => this.runNow()],
      [states.dead > 0 ? 5 : 0.5, () => this.deadLetters()],
      [2, () => this.pauseOrResume()],
      [1, () => this.deleteQueue()],
      [2, () => this.longPoll()],
      [1, () => this.restart()],
    ]);
    await op();
    await this.check();
  }
  private async restart(): Promise<void> {
    this.log.push('restart');
    saw('restart');
    this.t = await this.t.reopen();
    // A new engine's maintenance sweeps on its first pass, and its turns across groups start afresh.
    this.model.nextSweepMs = 0;
    this.model.cursors = new Map();
  }
  async check(): Promise<void> {
    await this.stored.check(this.t, this.model);
  }
}

/** The model test against `backend`: `runs` runs of `stepsPerRun` steps, each checked. */
export async function runModel(backend: StoreBackend): Promise<void> {
  let steps = 0;
  const runs = modelRuns(backend);
  for (let i = 0; i < runs; i++) {
    const seed = (baseSeed + i) >>> 0;
    const run = new Run(seed, await openRunEngine(seed, backend));
    try {
      for (let s = 0; s < stepsPerRun; s++) {
        await run.step();
        steps++;
      }
    } catch (error) {
      const tail = run.log
        .slice(-25)
        .map((line, k) => `  ${run.log.length - Math.min(25, run.log.length) + k}: ${line}`);
      console.error(
        [
          `model test failed on ${backend.name} in run ${i} with seed ${seed} at step ${run.log.length - 1}`,
          `reproduce: SEPP_MODEL_SEED=${seed} SEPP_MODEL_RUNS=1 SEPP_MODEL_STEPS=${stepsPerRun} npm run test:files -- conformance/${backend.name}-model`,
          'last steps:',
          ...tail,
        ].join('\n'),
      );
      throw error;
    } finally {
      await run.t.dispose();
    }
  }
  console.log(`model (${backend.name}): base seed ${baseSeed}, ${runs} runs, ${steps} steps`);
  console.log(
    [...coverage]
      .sort()
      .map(([what, n]) => `  ${what}: ${n}`)
      .join('\n'),
  );
}

/** Runs and steps of the model case (SEPP_MODEL_RUNS, SEPP_MODEL_STEPS). */
export const modelSize = { stepsPerRun };

/** The runs against `backend`: SEPP_MODEL_RUNS, else the backend's own default. */
export function modelRuns(backend: StoreBackend): number {
  return Number(runsFromEnv ?? backend.modelRuns);
}
