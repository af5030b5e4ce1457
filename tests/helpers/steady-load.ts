/**
 * A steady W1-shaped load on a running server, for tests that do something
 * else meanwhile (read the live database, replicate it, kill the server):
 * producers each awaiting one enqueue at a time, workers each doing
 * reserve(1) → ack, until stopped. Every acknowledged operation is recorded
 * with the time it was sent and the time it was acknowledged (performance.now()
 * of this process), so a test can tell what must have been committed by when.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient } from '../../clients/typescript/src/index.ts';

/** Polls until `condition` holds; the deadline only guards against a hang. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export interface LoadRecord {
  jobId: string;
  /** Just before the call was made. */
  sentMs: number;
  /** When the server's answer arrived (its commit was durable). */
  acknowledgedMs: number;
}

export interface SteadyLoadOptions {
  address: string;
  queue: string;
  producers: number;
  workers: number;
  /** Lease asked for by the workers. */
  leaseMs: number;
}

export class SteadyLoad {
  /** Acknowledged enqueues, in the order their answers arrived. */
  readonly enqueues: LoadRecord[] = [];
  /** Acknowledged acks. */
  readonly acks: LoadRecord[] = [];
  /** Jobs whose ack was sent, acknowledged or not. */
  readonly ackSent = new Set<string>();
  /** Failures while the server was meant to be up. */
  readonly errors: string[] = [];
  private running = true;
  private serverDown = false;
  private readonly client: SeppClient;
  private readonly loops: Promise<void>[] = [];

  constructor(private readonly options: SteadyLoadOptions) {
    this.client = SeppClient.connect(options.address);
    for (let i = 0; i < options.producers; i++) this.loops.push(this.produce(i));
    for (let i = 0; i < options.workers; i++) this.loops.push(this.work(i));
  }

  /** From now on failures are expected (the test is killing the server). */
  serverKilled(): void {
    this.serverDown = true;
    this.running = false;
  }

  /** Stops the loops (each finishes the call it is in) and closes the client. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    await this.client.close();
  }

  private failed(error: unknown): void {
    if (!this.serverDown) this.errors.push(error instanceof Error ? error.message : String(error));
  }

  private async produce(producer: number): Promise<void> {
    for (let n = 0; this.running; n++) {
      const sentMs = performance.now();
      try {
        const { id } = await this.client.enqueue(this.options.queue, 'work', `p${producer}-${n}`);
        this.enqueues.push({ jobId: id, sentMs, acknowledgedMs: performance.now() });
      } catch (error) {
        this.failed(error);
        return;
      }
    }
  }

  private async work(worker: number): Promise<void> {
    while (this.running) {
      try {
        const jobs = await this.client.reserve({
          queues: [this.options.queue],
          leaseMs: this.options.leaseMs,
          waitMs: 100,
          workerId: `load-${worker}`,
        });
        for (const job of jobs) {
          const sentMs = performance.now();
          this.ackSent.add(job.id);
          await this.client.ack(job);
          this.acks.push({ jobId: job.id, sentMs, acknowledgedMs: performance.now() });
        }
      } catch (error) {
        this.failed(error);
        return;
      }
    }
  }
}
