/**
 * The SDK benchmarks' phases (bench/sdk-quick.ts, bench/cpu-per-job.ts), each measured
 * on both sides: wall time, group commits, the server's and this process's CPU.
 *
 *   W1 enqueue  `producers` callers, each awaiting one `enqueue` (or `enqueueBatch` of `batch`)
 *   W1 drain    one Worker with concurrency `concurrency` acking every job
 *   W2 rounds   one caller: enqueue → the Worker is pushed the job → its ack is durable, in sequence
 */
import type { SeppClient } from '../../clients/typescript/src/index.ts';
import type { BenchServer, ServerStats } from './server-process.ts';

export interface PhaseFigures {
  /** Jobs (W1) or rounds (W2) per second. */
  perSecond: number;
  /** Jobs or rounds over group commits. */
  perCommit: number;
  /** Operations (enqueues, leases, acks) over group commits. */
  operationsPerCommit: number;
  commitMsMean: number;
  /** Server CPU (user + system) per job or per round, µs. */
  serverCpuUs: number;
  /** The kernel's part of serverCpuUs. */
  serverSystemCpuUs: number;
  clientCpuUs: number;
}

const payload = Buffer.alloc(256, 'x');
const jobType = 'noop';

/** Runs `work` (which does `units` jobs or rounds) and measures it. */
export async function measured(
  server: BenchServer,
  units: number,
  work: () => Promise<void>,
): Promise<PhaseFigures> {
  const s0 = await server.stats();
  const c0 = process.cpuUsage();
  const started = performance.now();
  await work();
  const seconds = (performance.now() - started) / 1000;
  const s1: ServerStats = await server.stats();
  const c1 = process.cpuUsage(c0);
  const commits = Math.max(1, s1.commits - s0.commits);
  return {
    perSecond: units / seconds,
    perCommit: units / commits,
    operationsPerCommit: (s1.operations - s0.operations) / commits,
    commitMsMean: (s1.commitMs - s0.commitMs) / commits,
    serverCpuUs: ((s1.cpuMs - s0.cpuMs) * 1000) / units,
    serverSystemCpuUs: ((s1.systemCpuMs - s0.systemCpuMs) * 1000) / units,
    clientCpuUs: (c1.user + c1.system) / units,
  };
}

/** W1's enqueue side: `producers` callers until `jobs` jobs are enqueued. */
export async function enqueueJobs(
  client: SeppClient,
  queue: string,
  jobs: number,
  producers: number,
  batch = 1,
): Promise<void> {
  let claimed = 0;
  await Promise.all(
    Array.from({ length: producers }, async () => {
      while (claimed < jobs) {
        if (batch === 1) {
          claimed++;
          await client.enqueue(queue, jobType, payload);
        } else {
          const n = Math.min(batch, jobs - claimed);
          claimed += n;
          await client.enqueueBatch(Array.from({ length: n }, () => ({ queue, type: jobType, payload })));
        }
      }
    }),
  );
}

export interface DrainOptions {
  concurrency: number;
  transport: 'stream' | 'unary';
  streams?: number;
  /** The Worker's `prefetch`: jobs leased ahead beyond its slots (default: the SDK's, `auto`). */
  prefetch?: number | 'auto';
}

/** W1's drain side: one Worker acks `jobs` jobs (each counted once its ack is durable). */
export async function drainJobs(
  client: SeppClient,
  queue: string,
  jobs: number,
  options: DrainOptions,
): Promise<void> {
  let done = 0;
  const worker = client.worker({
    queues: [queue],
    concurrency: options.concurrency,
    transport: options.transport,
    handlers: { [jobType]: () => {} },
    ...(options.streams === undefined ? {} : { streams: options.streams }),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
  });
  worker.on('error', (e) => console.error('worker:', e.message));
  await new Promise<void>((resolve) => {
    worker.on('completed', () => {
      if (++done === jobs) resolve();
    });
  });
  await worker.close();
}

/**
 * W2: one caller, `rounds` times: enqueue, then wait until the Worker's ack of that job is durable.
 * The Worker's `prefetch` is the SDK's default unless given; bench/cpu-per-job.ts pins it to 0, as
 * its drain: `'auto'` leases ahead only against a server that lists `nack_give_back`, so against
 * an older checkout the default would change the client's shape, not only the server.
 */
export async function roundTrips(
  client: SeppClient,
  queue: string,
  rounds: number,
  prefetch?: number | 'auto',
): Promise<void> {
  let acked: (() => void) | undefined;
  const worker = client.worker({
    queues: [queue],
    concurrency: 1,
    handlers: { [jobType]: () => {} },
    ...(prefetch === undefined ? {} : { prefetch }),
  });
  worker.on('error', (e) => console.error('worker:', e.message));
  worker.on('completed', () => acked?.());
  for (let i = 0; i < rounds; i++) {
    const done = new Promise<void>((r) => (acked = r));
    await client.enqueue(queue, jobType, payload);
    await done;
  }
  await worker.close();
}
