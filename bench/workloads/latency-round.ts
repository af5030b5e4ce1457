import type { WorkloadContext } from './context.ts';
import { type PhaseResult, runPhase } from './phase.ts';

/**
 * W2: one client does enqueue → reserve → ack in sequence, so every operation meets an
 * idle server and the percentiles show the cost of one durable round trip of each kind.
 */
export async function runRoundTrips(
  ctx: WorkloadContext,
  rounds: number,
  timeoutMs: number,
): Promise<PhaseResult> {
  const queue = ctx.queueName('round');
  await ctx.driver.createQueue(queue);
  const client = await ctx.driver.openClient(queue, 'both');
  await ctx.beforePhase();
  try {
    return await runPhase({
      phase: 'round',
      jobs: rounds,
      timeoutMs,
      serverPids: ctx.driver.serverPids(),
      counters: ctx.driver.counters?.bind(ctx.driver),
      actors: [
        async (budget, rec) => {
          const [enqueueMs, reserveMs, ackMs, roundMs] = ['enqueue', 'reserve', 'ack', 'round'].map(rec);
          while (budget.claim(1) === 1) {
            const t0 = performance.now();
            await client.enqueue(ctx.payload);
            const t1 = performance.now();
            const lease = await client.reserve(budget.waitMs());
            if (lease === null) throw new Error(`${ctx.driver.id}: the job just enqueued was not reserved`);
            const t2 = performance.now();
            await lease.ack(false);
            const t3 = performance.now();
            enqueueMs?.record(t1 - t0);
            reserveMs?.record(t2 - t1);
            ackMs?.record(t3 - t2);
            roundMs?.record(t3 - t0);
            budget.complete(1);
          }
        },
      ],
    });
  } finally {
    await client.close();
  }
}
