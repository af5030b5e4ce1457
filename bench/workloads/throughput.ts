import type { QueueClient } from '../systems/types.ts';
import { drainBatchLoop, drainLoop, enqueueBatchLoop, enqueueLoop } from './actors.ts';
import type { WorkloadContext } from './context.ts';
import { type PhaseResult, runPhase } from './phase.ts';

export interface ThroughputSpec {
  readonly jobs: number;
  /** Producers in the enqueue phase and workers in the drain phase. */
  readonly concurrency: number;
  /** Jobs per batch (W3); undefined for one job at a time (W1, W4). */
  readonly batchSize?: number;
  readonly timeoutMs: number;
  /** Wraps each timed phase, e.g. to count the server's fsyncs around it. */
  readonly aroundPhase?: (
    phase: 'enqueue' | 'drain',
    run: () => Promise<PhaseResult>,
  ) => Promise<PhaseResult>;
}

async function openClients(
  ctx: WorkloadContext,
  queue: string,
  role: 'producer' | 'worker',
  n: number,
): Promise<QueueClient[]> {
  return Promise.all(Array.from({ length: n }, () => ctx.driver.openClient(queue, role)));
}

async function closeAll(clients: readonly QueueClient[]): Promise<void> {
  await Promise.all(clients.map((c) => c.close()));
}

/**
 * The W1 shape: `concurrency` producers enqueue `jobs` jobs into a fresh queue, then
 * `concurrency` workers drain exactly the jobs that were enqueued. Clients connect before
 * each phase's clock starts and disconnect after it stops.
 */
export async function runThroughput(ctx: WorkloadContext, spec: ThroughputSpec): Promise<PhaseResult[]> {
  const queue = ctx.queueName(spec.batchSize === undefined ? `c${spec.concurrency}` : 'batch');
  await ctx.driver.createQueue(queue);
  const pids = ctx.driver.serverPids();
  const batchSize = spec.batchSize;
  const around = spec.aroundPhase ?? ((_phase, run) => run());

  const producers = await openClients(ctx, queue, 'producer', spec.concurrency);
  await ctx.beforePhase();
  const enqueue = await around('enqueue', () =>
    runPhase({
      phase: 'enqueue',
      jobs: spec.jobs,
      timeoutMs: spec.timeoutMs,
      serverPids: pids,
      counters: ctx.driver.counters?.bind(ctx.driver),
      actors: producers.map(
        (client) => (budget, rec) =>
          batchSize === undefined
            ? enqueueLoop(client, budget, ctx.payload, rec)
            : enqueueBatchLoop(client, budget, ctx.payload, batchSize, rec),
      ),
    }),
  );
  await closeAll(producers);

  const workers = await openClients(ctx, queue, 'worker', spec.concurrency);
  await ctx.beforePhase();
  const drain = await around('drain', () =>
    runPhase({
      phase: 'drain',
      jobs: enqueue.jobsDone,
      timeoutMs: spec.timeoutMs,
      serverPids: pids,
      counters: ctx.driver.counters?.bind(ctx.driver),
      actors: workers.map(
        (client) => (budget, rec) =>
          batchSize === undefined
            ? drainLoop(client, budget, rec)
            : drainBatchLoop(client, budget, batchSize, rec),
      ),
    }),
  );
  await closeAll(workers);
  return [enqueue, drain];
}
