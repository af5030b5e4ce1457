/**
 * The load crash-loop.test.ts puts on a server process it is about to kill:
 * producers and workers over gRPC with the real SDK, every acknowledged
 * operation and every delivery written to a CrashLedger as it happens.
 *
 * - Producers (two on the Produce stream, one on unary calls): single
 *   enqueues several in one turn (coalesced), best-effort batches and atomic
 *   batches, each job's payload a unique id.
 * - An SDK Worker on Work streams: most jobs acked, some retried (nack), a few
 *   dead-lettered, and some held for up to a few seconds while the Worker
 *   extends their leases — so that a kill finds leases outstanding; with
 *   `prefetch`, it also holds jobs leased ahead of its slots, unstarted.
 * - Two hand-written workers on unary Reserve/Ack/AckBatch/Nack, which also
 *   abandon jobs so that leases expire while the server runs.
 *
 * Before the kill any failure other than a lost lease is unexpected and
 * reported; from `serverKilled()` on, every failure is the kill's doing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DeadLetter,
  type LeasedJob,
  LeaseLostError,
  SeppClient,
  type Worker,
  type WorkerJob,
} from '../../clients/typescript/src/index.ts';
import type { CrashLedger } from '../helpers/crash-ledger.ts';

export interface CrashLoadOptions {
  address: string;
  queue: string;
  ledger: CrashLedger;
  /** Lease asked for by every worker, in ms. */
  leaseMs: number;
  /** Makes payload ids unique across cycles. */
  cycle: number;
  /** The seeded random integers of the run. */
  int: (min: number, max: number) => number;
}

/** Longest a clean-up after a kill may take before the test calls it a hang. */
const stopTimeoutMs = 20_000;

export class CrashLoad {
  /** Failures before the kill that are not a lost lease. */
  readonly unexpected: string[] = [];
  /** Settlements refused before the kill because the lease had moved on (a slow worker). */
  leasesLost = 0;
  /** The most jobs the Worker held leased ahead at once, as its handler saw it. */
  mostHeld = 0;
  private killed = false;
  private readonly streamClient: SeppClient;
  private readonly unaryClient: SeppClient;
  private readonly worker: Worker;
  private readonly loops: Promise<void>[];
  private readonly ledger: CrashLedger;
  private readonly int: (min: number, max: number) => number;

  constructor(private readonly options: CrashLoadOptions) {
    this.ledger = options.ledger;
    this.int = options.int;
    this.streamClient = SeppClient.connect(options.address);
    this.unaryClient = SeppClient.connect(options.address, { transport: 'unary' });
    this.worker = this.streamClient.worker({
      queues: [options.queue],
      concurrency: 8,
      // Jobs leased ahead too, so that a kill also finds held leases (the Worker's `prefetch`).
      prefetch: 8,
      streams: 2,
      leaseMs: options.leaseMs,
      shutdownTimeoutMs: 200,
      fallback: (job) => this.handle(job),
    });
    this.worker.on('completed', (job) => this.ledger.ackAcknowledged(job.id));
    this.worker.on('error', (error) => this.failed('worker', error));
    this.loops = [
      this.producer(0, this.streamClient),
      this.producer(1, this.streamClient),
      this.producer(2, this.unaryClient),
      this.rawWorker(0),
      this.rawWorker(1),
    ];
  }

  /** Call just before the kill: from now on failures are expected and nothing more is sent. */
  serverKilled(): void {
    this.killed = true;
  }

  /** Ends the loops and closes the clients (and the Worker); throws if that hangs. */
  async stop(): Promise<void> {
    this.killed = true;
    const timeout = new AbortController();
    const closing = Promise.all([
      Promise.all(this.loops),
      this.streamClient.close(),
      this.unaryClient.close(),
    ]).finally(() => timeout.abort());
    await Promise.race([
      closing,
      sleep(stopTimeoutMs, undefined, { signal: timeout.signal }).then(() => {
        throw new Error(`the clients did not close within ${stopTimeoutMs} ms of the kill`);
      }),
    ]);
  }

  private failed(what: string, error: unknown): void {
    if (this.killed) return;
    if (error instanceof LeaseLostError) {
      this.leasesLost++;
      return;
    }
    this.unexpected.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
  }

  private async producer(index: number, client: SeppClient): Promise<void> {
    const { queue, cycle } = this.options;
    let produced = 0;
    const nextId = () => `c${cycle}-p${index}-${produced++}`;
    const spec = (payload: string) => ({ queue, type: 'load', payload, priority: this.int(0, 9) });
    while (!this.killed) {
      const kind = this.int(0, 9);
      try {
        if (kind < 5) {
          // Several enqueues in one turn of the event loop travel in one message.
          const ids = Array.from({ length: this.int(1, 5) }, nextId);
          const outcomes = await Promise.allSettled(
            ids.map(async (id) => {
              const { id: jobId } = await client.enqueue(queue, 'load', id, { priority: this.int(0, 9) });
              this.ledger.enqueueAcknowledged(id, jobId);
            }),
          );
          for (const o of outcomes) if (o.status === 'rejected') this.failed('enqueue', o.reason);
        } else if (kind < 8) {
          const ids = Array.from({ length: this.int(2, 30) }, nextId);
          const outcomes = await client.enqueueBatch(ids.map(spec));
          outcomes.forEach((o, i) => {
            if (o.ok) this.ledger.enqueueAcknowledged(ids[i] as string, o.id);
            else this.failed('enqueueBatch', o.message);
          });
        } else {
          const ids = Array.from({ length: this.int(2, 30) }, nextId);
          const results = await client.enqueueAtomic(ids.map(spec));
          results.forEach((r, i) => {
            this.ledger.enqueueAcknowledged(ids[i] as string, r.id);
          });
        }
      } catch (error) {
        this.failed(`enqueue (kind ${kind})`, error);
      }
      await sleep(this.int(0, 5));
    }
  }

  /** The SDK Worker's handler. */
  private async handle(job: WorkerJob): Promise<void> {
    this.ledger.leased(job.id, job.attempt, job.payload.toString());
    this.mostHeld = Math.max(this.mostHeld, this.worker.held);
    const roll = this.int(0, 99);
    // Held: the Worker extends the lease meanwhile; the sleep ends early if the lease is lost.
    if (roll >= 85) await sleep(this.int(100, 2500), undefined, { signal: job.signal });
    // After the kill an ack could not be acknowledged: leave the job owed.
    if (this.killed) throw new Error('the server was killed');
    if (roll < 70 || roll >= 85) {
      this.ledger.ackSending(job.id);
      return;
    }
    if (roll < 82) throw new Error('crash test: retry');
    this.ledger.deadLetterSending(job.id);
    throw new DeadLetter('crash test: poison');
  }

  /** A worker on unary calls: reserve, then ack (one by one or in a batch), nack, dead-letter or abandon. */
  private async rawWorker(index: number): Promise<void> {
    const { queue, leaseMs } = this.options;
    const client = this.unaryClient;
    while (!this.killed) {
      let jobs: LeasedJob[];
      try {
        jobs = await client.reserve({
          queues: [queue],
          maxJobs: this.int(1, 10),
          leaseMs,
          waitMs: 200,
          workerId: `raw-${index}`,
        });
      } catch (error) {
        this.failed('reserve', error);
        await sleep(20);
        continue;
      }
      for (const job of jobs) this.ledger.leased(job.id, job.attempt, job.payload.toString());
      if (this.killed) break;
      if (jobs.length > 1 && this.int(0, 3) === 0) await this.ackBatch(jobs);
      else await Promise.all(jobs.map((job) => this.settle(job)));
    }
  }

  private async ackBatch(jobs: LeasedJob[]): Promise<void> {
    for (const job of jobs) this.ledger.ackSending(job.id);
    try {
      const results = await this.unaryClient.ackBatch(jobs);
      results.forEach((r, i) => {
        const job = jobs[i] as LeasedJob;
        // A lease that moved on while this worker was slow is not the server's fault.
        if (r.outcome === 'ok') this.ledger.ackAcknowledged(job.id);
        else if (!this.killed) this.leasesLost++;
      });
    } catch (error) {
      this.failed('ackBatch', error);
    }
  }

  private async settle(job: LeasedJob): Promise<void> {
    const client = this.unaryClient;
    const roll = this.int(0, 99);
    try {
      if (roll < 70) {
        this.ledger.ackSending(job.id);
        await client.ack(job);
        this.ledger.ackAcknowledged(job.id);
      } else if (roll < 80) {
        await client.nack(job, { error: 'crash test: retry', retryAfterMs: 0 });
      } else if (roll < 82) {
        this.ledger.deadLetterSending(job.id);
        await client.nack(job, { error: 'crash test: poison', deadLetter: true });
      }
      // Otherwise abandoned: the lease expires and the job comes back.
    } catch (error) {
      this.failed(roll < 70 ? 'ack' : 'nack', error);
    }
  }
}
