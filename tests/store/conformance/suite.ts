/**
 * The store conformance suite: every case against a backend, written against
 * the Store interface (and the engine opened on it, where a case needs the
 * engine's semantics), never against a backend's internals. A backend is done
 * when the whole suite passes. Each backend has two test files that give it
 * their factory: one calls exerciseStore (sqlite.test.ts, the fast tier), the
 * other exerciseStoreModel, the model-based loop (sqlite-model.test.ts, the
 * system tier for its length) — the shape of hono's common.case.test.ts and
 * River's riverdrivertest.
 */
import { describe, test } from 'node:test';
import type { StoreBackend } from './backend.ts';
import { batchRetentionCases } from './cases/batch-retention.ts';
import { browseCases } from './cases/browse.ts';
import { bulkCases } from './cases/bulk.ts';
import { controlCases } from './cases/control.ts';
import { dependencyCases } from './cases/dependencies.ts';
import { dependentsCases } from './cases/dependents.ts';
import { errorCases } from './cases/errors.ts';
import { eventCases } from './cases/events.ts';
import { flowCases } from './cases/flow.ts';
import { historyCases } from './cases/history.ts';
import { jobCases } from './cases/jobs.ts';
import { leaseCases } from './cases/leases.ts';
import { modelCase } from './cases/model.ts';
import { scheduleCases } from './cases/schedules.ts';
import { unitCases } from './cases/units.ts';
import { Harness, type StoreCase } from './harness.ts';

/** Every case but the model-based loop, against `backend`. */
export function exerciseStore(backend: StoreBackend): void {
  runCases(backend, [
    ...unitCases,
    ...jobCases,
    ...leaseCases,
    ...flowCases,
    ...controlCases,
    ...dependencyCases,
    ...batchRetentionCases,
    ...dependentsCases,
    ...bulkCases,
    ...errorCases,
    ...scheduleCases,
    ...eventCases,
    ...browseCases,
    ...historyCases,
  ]);
}

/** The model-based test against `backend`: the engine on it, step by step against a plain model. */
export function exerciseStoreModel(backend: StoreBackend): void {
  runCases(backend, [modelCase(backend)]);
}

function runCases(backend: StoreBackend, cases: readonly StoreCase[]): void {
  describe(`store conformance: ${backend.name}`, () => {
    for (const c of cases) {
      test(c.name, { timeout: c.timeoutMs ?? 120_000 }, async () => {
        const h = new Harness(backend);
        try {
          await c.run(h);
          // After every case, whatever it did: the counts agree with the rows.
          await h.checkCounts();
        } finally {
          await h.dispose();
        }
      });
    }
  });
}
