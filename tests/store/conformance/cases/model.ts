/** The model-based test (tests/helpers/model/run.ts) as a case: the engine on the store against a plain model. */
import { modelRuns, modelSize, runModel } from '../../../helpers/model/run.ts';
import type { StoreBackend } from '../backend.ts';
import type { StoreCase } from '../harness.ts';

export function modelCase(backend: StoreBackend): StoreCase {
  return {
    name: `model: ${modelRuns(backend)} random runs of ${modelSize.stepsPerRun} steps agree with the in-memory model`,
    timeoutMs: 10 * 60_000,
    // The runs open their own stores of the backend (a restart is one of the steps).
    run: () => runModel(backend),
  };
}
