import {
  RetryAfter,
  type SeppClient,
  type Worker,
  type WorkerJob,
} from '../../clients/typescript/src/index.ts';
import { Handoff } from './handoff.ts';
import type { Lease } from './types.ts';

/**
 * The SDK's `Worker` adapted to the harness's pull interface, the way a sepp user drains a
 * queue: one Worker per queue whose concurrency is the number of bench workers on it. The
 * Worker asks the server for jobs over its Work streams (credit for its free slots) and the
 * server pushes them; each job's handler hands it to a waiting `reserve()` and resolves when
 * the bench acks. The ack is durable when the Worker emits `completed`, which it does only
 * once the server has answered the ack, so `Lease.ack` waits for that event.
 *
 * As with BullMQ's Worker, a slot frees as soon as its handler returns, so the next job is
 * pushed while the ack is in flight (the ack and the new credit travel in order on one
 * stream). One pool serves every bench worker of its queue, so a job pushed ahead can go to
 * any of them and the harness's exact job count never strands one. With `prefetch`, the
 * Worker also holds that many leased jobs beyond its slots (handed out as slots free).
 */

const phaseEnded = () => new RetryAfter(0, 'benchmark phase ended');

interface Delivery {
  readonly job: WorkerJob;
  /** Ends the handler: undefined acks the job, an error nacks it. */
  readonly finish: (error?: Error) => void;
}

interface PendingAck {
  resolve(): void;
  reject(error: Error): void;
}

export class SeppWorkerPool {
  private readonly deliveries = new Handoff<Delivery>();
  private readonly acks = new Map<WorkerJob, PendingAck>();
  private worker: Worker | undefined;
  private members = 0;
  private closing = false;

  constructor(
    private readonly client: SeppClient,
    private readonly queue: string,
    private readonly report: (message: string) => void,
    /** The Worker's `prefetch`; default the SDK's. */
    private readonly prefetch: number | 'auto' = 'auto',
    /** The Worker's Work streams; undefined: the SDK's default (bench/pg-chain.ts tries others). */
    private readonly streams?: number,
  ) {}

  /** Each bench worker of the queue adds one slot to the Worker, which starts on the first reserve. */
  join(): void {
    if (this.worker !== undefined) throw new Error('sepp pool: a bench worker joined after draining began');
    this.members++;
  }

  /** Returns true when the last bench worker left and the pool should be closed. */
  leave(): boolean {
    this.members--;
    return this.members === 0;
  }

  private start(): Worker {
    const worker = this.client.worker({
      queues: [this.queue],
      concurrency: this.members,
      prefetch: this.prefetch,
      ...(this.streams === undefined ? {} : { streams: this.streams }),
      fallback: (job) =>
        new Promise<void>((resolve, reject) => {
          const delivery: Delivery = {
            job,
            finish: (error) => (error === undefined ? resolve() : reject(error)),
          };
          if (this.closing) delivery.finish(phaseEnded());
          else this.deliveries.offer(delivery);
        }),
    });
    worker.on('completed', (job) => this.settled(job));
    worker.on('leaseLost', (job, error) => this.settled(job, error));
    // Connection trouble the Worker retries by itself; a benchmark should show it, not hide it.
    worker.on('error', (error) => this.report(`sepp worker: ${error.message}`));
    return worker;
  }

  private settled(job: WorkerJob, error?: Error): void {
    const pending = this.acks.get(job);
    if (pending === undefined) return;
    this.acks.delete(job);
    if (error === undefined) pending.resolve();
    else pending.reject(error);
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    this.worker ??= this.start();
    const delivery = await this.deliveries.take(waitMs);
    if (delivery === null) return null;
    return {
      ack: () => {
        const done = new Promise<void>((resolve, reject) => this.acks.set(delivery.job, { resolve, reject }));
        delivery.finish();
        return done;
      },
    };
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker === undefined) return;
    // Jobs pushed ahead for reserves that never came (a phase that hit its time limit), and
    // any still arriving on credit granted before the close, go back to the queue at once
    // instead of holding the close until their leases end.
    this.closing = true;
    const stop = worker.close({ timeoutMs: 5000 });
    for (const d of this.deliveries.drain()) d.finish(phaseEnded());
    await stop;
    for (const pending of this.acks.values()) {
      pending.reject(new Error('the sepp worker closed before the ack was confirmed'));
    }
    this.acks.clear();
  }
}

/**
 * The peer harness's drain outside the harness (bench/pg-chain.ts, pg-drain-profile.ts `--pool`):
 * `workers` bench workers, each reserving one job and awaiting its durable ack in turn, through
 * one pool (one SDK Worker of that concurrency), until `jobs` jobs are acknowledged.
 */
export async function drainThroughPool(
  client: SeppClient,
  queue: string,
  jobs: number,
  options: { workers: number; prefetch: number | 'auto'; streams?: number },
): Promise<void> {
  const pool = new SeppWorkerPool(
    client,
    queue,
    (message) => console.error(message),
    options.prefetch,
    options.streams,
  );
  for (let i = 0; i < options.workers; i++) pool.join();
  let claimed = 0;
  await Promise.all(
    Array.from({ length: options.workers }, async () => {
      while (claimed < jobs) {
        claimed++;
        const lease = await pool.reserve(10_000);
        if (lease === null) throw new Error('the drain found no job for 10 s');
        await lease.ack(claimed < jobs);
      }
    }),
  );
  await pool.close();
}
