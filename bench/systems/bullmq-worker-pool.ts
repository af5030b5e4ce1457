import { type ConnectionOptions, type Job, Worker } from 'bullmq';
import { Handoff } from './handoff.ts';
import type { Lease } from './types.ts';

/**
 * BullMQ's own `Worker` (with a processor, `concurrency` = the number of bench workers on
 * the queue) adapted to the harness's pull interface: the processor hands each job to a
 * waiting `reserve()` and its promise settles when the bench acks. An ack resolves only
 * after the Worker's `completed` event, i.e. after its moveToCompleted reply from Redis, so
 * acks stay durable. The Worker fetches the next job in the same call, as it always does.
 *
 * One pool per queue is shared by all bench workers of that queue, so a job the Worker
 * fetched ahead can go to any of them: the harness's exact job count never strands one.
 */

type JobData = { p: string };

interface Delivery {
  readonly job: Job<JobData, null>;
  readonly finish: () => void;
}

export class WorkerPool {
  private readonly deliveries = new Handoff<Delivery>();
  private readonly completed = new Map<string, () => void>();
  private readonly worker: Worker<JobData, null>;
  private clients = 0;
  private running = false;

  constructor(queue: string, connection: ConnectionOptions) {
    this.worker = new Worker<JobData, null>(
      queue,
      (job) =>
        new Promise<null>((resolve) => {
          this.deliveries.offer({ job, finish: () => resolve(null) });
        }),
      { connection, autorun: false, drainDelay: 1, removeOnComplete: { count: 0 } },
    );
    this.worker.on('completed', (job) => {
      const done = job.id === undefined ? undefined : this.completed.get(job.id);
      if (done !== undefined && job.id !== undefined) {
        this.completed.delete(job.id);
        done();
      }
    });
  }

  /** Each bench worker adds one to the Worker's concurrency. */
  async join(): Promise<void> {
    this.clients++;
    this.worker.concurrency = this.clients;
    await this.worker.waitUntilReady();
  }

  /** Returns true when the last bench worker left and the pool should be closed. */
  leave(): boolean {
    this.clients--;
    return this.clients === 0;
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    if (!this.running) {
      this.running = true;
      // run() resolves only when the Worker closes.
      void this.worker.run();
    }
    const delivery = await this.deliveries.take(waitMs);
    if (delivery === null) return null;
    return {
      ack: async () => {
        const id = delivery.job.id;
        if (id === undefined) throw new Error('BullMQ delivered a job without an id');
        const done = new Promise<void>((resolve) => this.completed.set(id, resolve));
        delivery.finish();
        await done;
      },
    };
  }

  async close(): Promise<void> {
    // Every ack has been awaited by now; force, so a job the Worker fetched ahead for a
    // reserve that never came (a phase that hit its time limit) cannot hold the close.
    await this.worker.close(true);
  }
}
