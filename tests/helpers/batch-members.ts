/**
 * What the engine's batch tests (tests/engine/batches.test.ts, batch-death.test.ts) do to
 * one member at a time: each member is on a queue of its own, so a reserve of that queue
 * leases exactly it; and how they read a completion job's payload.
 */
import assert from 'node:assert/strict';
import type { Engine } from '../../src/engine/engine.ts';
import type { EnqueueResult, LeasedJob } from '../../src/engine/types.ts';

/** Leases `jobId`, alone on its queue. */
export async function lease(engine: Engine, jobId: string): Promise<LeasedJob> {
  const { queue } = await engine.getJob(jobId);
  const leased = await engine.reserve({ queues: [queue], maxJobs: 10, leaseMs: 60_000 });
  assert.deepEqual(
    leased.map((l) => l.id),
    [jobId],
  );
  return leased[0]!;
}

export async function complete(engine: Engine, jobId: string): Promise<void> {
  const leased = await lease(engine, jobId);
  await engine.ack({ jobId, attempt: leased.attempt });
}

/** Leases `jobId` and dead-letters it with `error`. */
export async function killJob(engine: Engine, jobId: string, error = 'boom'): Promise<void> {
  const leased = await lease(engine, jobId);
  await engine.nack({ jobId, attempt: leased.attempt, error, directive: { kind: 'dead_letter' } });
}

/** The ids of enqueue results, each asserted accepted. */
export const ids = (results: readonly EnqueueResult[]): string[] =>
  results.map((r) => {
    assert.ok(r.ok, JSON.stringify(r));
    return r.jobId;
  });

/** The payload of a completion job, decoded. */
export async function completionPayload(
  engine: Engine,
  jobId: string,
): Promise<{ batch: Record<string, unknown>; data: unknown }> {
  const info = await engine.getJob(jobId);
  assert.equal(info.contentType, 'application/json');
  return JSON.parse(new TextDecoder().decode(info.payload));
}
