/**
 * The model test's check after every step: every stored job, column by
 * column, and every queue's counts, flags and ages must agree with the model.
 * It reads through the Store interface only (so it checks any backend): every
 * job the model holds by id, and the store's count of all jobs, which the
 * counts check ties to the rows, so a job the model does not know is found too.
 */
import assert from 'node:assert/strict';
import type { Engine } from '../../../src/engine/engine.ts';
import type { JobRow } from '../../../src/store/rows.ts';
import type { Store } from '../../../src/store/store.ts';
import { readyGroups } from './flow.ts';
import type { Model } from './model.ts';

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** What the check reads: the engine under test and the store it runs on. */
export interface CheckedEngine {
  readonly engine: Engine;
  readonly store: Store;
  readonly clock: { nowMs(): number };
}

export class StoredJobs {
  async check(t: CheckedEngine, model: Model): Promise<void> {
    const ids = [...model.jobs.keys()];
    const { rows, total } = await t.store.read(function* (view) {
      const found: JobRow[] = [];
      for (const id of ids) {
        const row = yield* view.jobs.get(id);
        if (row !== undefined) found.push(row);
      }
      return { rows: found, total: yield* view.counts.total() };
    });
    const stored = rows
      .map((r) => ({
        id: r.id,
        queue: r.queue,
        state: r.state,
        priority: r.priority,
        attempt: r.attempt,
        base: r.attempt_base,
        maxAttempts: r.max_attempts,
        runAtMs: r.run_at_ms,
        leaseDeadlineMs: r.lease_deadline_ms,
        deadReason: r.dead_reason,
        failedAtMs: r.failed_at_ms,
        completedAtMs: r.completed_at_ms,
        lastError: r.last_error,
        errors:
          r.errors_json === null
            ? []
            : (JSON.parse(r.errors_json) as { attempt: number; at_ms: number; error: string }[]).map((e) => ({
                attempt: e.attempt,
                atMs: e.at_ms,
                error: e.error,
              })),
        expiresAtMs: r.expires_at_ms,
        cancelledAtMs: r.cancelled_at_ms,
        group: r.group_key,
      }))
      .sort(byId);
    // The same keys in the same order as `stored`, so that the JSON comparison below is exact.
    const expected = [...model.jobs.values()]
      .map((j) => ({
        id: j.id,
        queue: j.queue,
        state: j.state as string,
        priority: j.priority,
        attempt: j.attempt,
        base: j.base,
        maxAttempts: j.maxAttempts,
        runAtMs: j.runAtMs,
        leaseDeadlineMs: j.leaseDeadlineMs,
        deadReason: j.deadReason as string | null,
        failedAtMs: j.failedAtMs,
        completedAtMs: j.completedAtMs,
        lastError: j.lastError,
        errors: j.errors.map((e) => ({ attempt: e.attempt, atMs: e.atMs, error: e.error })),
        expiresAtMs: j.expiresAtMs,
        cancelledAtMs: j.cancelledAtMs,
        group: j.group,
      }))
      .sort(byId);
    // Comparing the JSON first is much cheaper; the deep comparison gives a readable diff.
    if (JSON.stringify(stored) !== JSON.stringify(expected)) {
      assert.deepEqual(stored, expected, 'stored jobs match the model');
    }
    // No job the model does not know: the counts (checked against the rows below) hold no more.
    assert.equal(total, model.jobs.size, 'the store holds as many jobs as the model');

    const queues = await t.engine.listQueues();
    assert.deepEqual(
      queues.map((q) => q.name),
      [...model.existing].sort(),
    );
    for (const q of queues) {
      assert.deepEqual(q.counts, model.counts(q.name), `counts of ${q.name}`);
      assert.equal(q.paused, model.paused.has(q.name), `paused flag of ${q.name}`);
      assert.equal(q.waitingWorkers, 0);
      assert.equal(q.throttledWorkers, 0);
      assert.equal(q.readyGroups, readyGroups([...model.jobs.values()], q.name), `ready groups of ${q.name}`);
      const readyRunAts = [...model.jobs.values()]
        .filter((j) => j.queue === q.name && j.state === 'ready')
        .map((j) => j.runAtMs);
      const oldest = readyRunAts.length === 0 ? null : t.clock.nowMs() - Math.min(...readyRunAts);
      assert.equal(q.oldestReadyAgeMs, oldest, `oldest ready age of ${q.name}`);
    }
    assert.deepEqual(await t.engine.counterMismatches(), []);
  }
}
