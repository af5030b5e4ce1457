import type { LatencyRecorder } from '../lib/latency.ts';
import type { Lease, LeaseBatch, QueueClient } from '../systems/types.ts';
import type { JobBudget } from './claims.ts';

/**
 * The loops one concurrent actor runs in a phase. Each awaits one operation at a time
 * (closed loop), as SPEC §10 prescribes: concurrency comes only from the number of actors.
 */

export type Recorders = (op: string) => LatencyRecorder;

/** Enqueues one job at a time until the budget is spent. */
export async function enqueueLoop(
  client: QueueClient,
  budget: JobBudget,
  payload: Buffer,
  rec: Recorders,
): Promise<void> {
  const enqueueMs = rec('enqueue');
  while (budget.claim(1) === 1) {
    const t0 = performance.now();
    await client.enqueue(payload);
    enqueueMs.record(performance.now() - t0);
    budget.complete(1);
  }
}

/** Reserves, retrying empty waits until the deadline; null only when time is up. */
async function reserveOne(client: QueueClient, budget: JobBudget): Promise<Lease | null> {
  for (;;) {
    const lease = await client.reserve(budget.waitMs());
    if (lease !== null || budget.pastDeadline()) return lease;
  }
}

/**
 * reserve(1) → ack, one job at a time. The next job is claimed before the ack so the driver
 * may fetch it in the ack's round trip (see `Lease.ack`).
 */
export async function drainLoop(client: QueueClient, budget: JobBudget, rec: Recorders): Promise<void> {
  const reserveMs = rec('reserve');
  const ackMs = rec('ack');
  const jobMs = rec('reserve+ack');
  if (budget.claim(1) === 0) return;
  for (;;) {
    const t0 = performance.now();
    const lease = await reserveOne(client, budget);
    if (lease === null) return;
    const t1 = performance.now();
    const more = budget.claim(1) === 1;
    await lease.ack(more);
    const t2 = performance.now();
    reserveMs.record(t1 - t0);
    ackMs.record(t2 - t1);
    jobMs.record(t2 - t0);
    budget.complete(1);
    if (!more) return;
  }
}

/** enqueueBatch of up to `batchSize` jobs at a time. */
export async function enqueueBatchLoop(
  client: QueueClient,
  budget: JobBudget,
  payload: Buffer,
  batchSize: number,
  rec: Recorders,
): Promise<void> {
  const batchMs = rec('enqueueBatch');
  for (let n = budget.claim(batchSize); n > 0; n = budget.claim(batchSize)) {
    const payloads = new Array<Buffer>(n).fill(payload);
    const t0 = performance.now();
    await client.enqueueBatch(payloads);
    batchMs.record(performance.now() - t0);
    budget.complete(n);
  }
}

async function reserveBatch(client: QueueClient, budget: JobBudget, max: number): Promise<LeaseBatch | null> {
  for (;;) {
    const batch = await client.reserveBatch(max, budget.waitMs());
    if (batch !== null || budget.pastDeadline()) return batch;
  }
}

/** reserveBatch(up to `batchSize`) → ackBatch. */
export async function drainBatchLoop(
  client: QueueClient,
  budget: JobBudget,
  batchSize: number,
  rec: Recorders,
): Promise<void> {
  const reserveMs = rec('reserveBatch');
  const ackMs = rec('ackBatch');
  for (let n = budget.claim(batchSize); n > 0; n = budget.claim(batchSize)) {
    const t0 = performance.now();
    const batch = await reserveBatch(client, budget, n);
    if (batch === null) return;
    const t1 = performance.now();
    if (batch.count < n) budget.unclaim(n - batch.count);
    await batch.ack();
    ackMs.record(performance.now() - t1);
    reserveMs.record(t1 - t0);
    budget.complete(batch.count);
  }
}
