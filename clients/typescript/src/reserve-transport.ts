/**
 * The Worker over unary calls, for where a stream cannot be used: a Reserve
 * long poll for as many jobs as there are free slots (one poll at a time, so
 * never more than free slots), acks that finish in the same tick sent as one
 * AckBatch, and Nack/Extend calls.
 *
 * A slot frees only when its settlement has been answered: the next Reserve
 * is a separate call that could overtake the ack, and the worker must never
 * hold more leases than its concurrency.
 */
import { status } from '@grpc/grpc-js';
import { backoffDelayMs } from './backoff.ts';
import type { Connection } from './connection.ts';
import { JobCancelledError, LeaseLostError, type SeppError, toSeppError } from './errors.ts';
import type { JobResult as ProtoJobResult } from './gen/sepp/v1/job.js';
import { ackBatchCall, ackCall, extendCall, nackCall, progressCall, reserveCall } from './lease-calls.ts';
import type { LeaseRef, NackOptions, NackResult } from './types.ts';
import {
  type ProgressFields,
  stopsWorker,
  type TransportConfig,
  type TransportHost,
  type WorkTransport,
} from './work-transport.ts';
import { clockSleep } from './worker-clock.ts';

interface QueuedAck {
  lease: LeaseRef;
  result: ProtoJobResult | undefined;
  resolve(): void;
  reject(error: SeppError): void;
}

export class ReserveTransport implements WorkTransport {
  readonly freesSlotOnSettle = true;
  private taking = true;
  private polling = false;
  private poll: AbortController | undefined;
  private backoff: { cancel(): void } | undefined;
  private acks: QueuedAck[] = [];
  private readonly maxAcksPerCall = 1000;

  constructor(
    private readonly conn: Connection,
    private readonly config: TransportConfig,
    private readonly host: TransportHost,
  ) {}

  start(): void {
    void this.pollLoop();
  }

  release(): void {
    if (!this.polling) void this.pollLoop();
  }

  private async pollLoop(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    let failures = 0;
    try {
      while (this.taking && !this.conn.closed) {
        const free = this.host.freeSlots();
        if (free <= 0) return; // release() starts polling again when a slot frees.
        this.poll = new AbortController();
        let jobs: Awaited<ReturnType<typeof reserveCall>>;
        try {
          jobs = await reserveCall(this.conn, {
            queues: this.config.queues,
            maxJobs: free,
            leaseMs: this.config.leaseMs,
            waitMs: this.config.pollWaitMs,
            workerId: this.config.workerId,
            signal: this.poll.signal,
          });
          failures = 0;
          this.host.connected();
        } catch (error) {
          if (!this.taking) return;
          const e = toSeppError(error);
          if (stopsWorker(e)) {
            this.taking = false;
            this.host.stop(e);
            return;
          }
          this.host.report(e);
          const delayMs = backoffDelayMs(
            failures++,
            this.config.reconnectBaseDelayMs,
            this.config.reconnectMaxDelayMs,
          );
          const pause = clockSleep(this.config.clock, delayMs);
          this.backoff = pause;
          await pause.done;
          this.backoff = undefined;
          continue;
        } finally {
          this.poll = undefined;
        }
        // Jobs that arrive as the worker stops are still run: they are leased to it.
        // Past `free` (a server that ignores max_jobs): given back, never held.
        for (const [i, job] of jobs.entries()) this.host.deliver(job, i >= free);
      }
    } finally {
      this.polling = false;
    }
  }

  ack(lease: LeaseRef, result: ProtoJobResult | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      this.acks.push({ lease, result, resolve, reject });
      if (this.acks.length === 1) process.nextTick(() => this.flushAcks());
    });
  }

  /** Acks of jobs that finished in the same tick go as one AckBatch. */
  private flushAcks(): void {
    const acks = this.acks;
    this.acks = [];
    for (let start = 0; start < acks.length; start += this.maxAcksPerCall) {
      const chunk = acks.slice(start, start + this.maxAcksPerCall);
      if (chunk.length === 1) {
        this.ackAlone(chunk[0]!);
        continue;
      }
      ackBatchCall(this.conn, chunk).then(
        (results) =>
          chunk.forEach((a, i) => {
            const result = results[i];
            if (result?.outcome === 'ok') a.resolve();
            else if (result?.outcome === 'cancelled') {
              a.reject(new JobCancelledError(status.FAILED_PRECONDITION, result.message));
            } else {
              const grpcCode =
                result?.outcome === 'lease_lost' ? status.FAILED_PRECONDITION : status.NOT_FOUND;
              a.reject(
                new LeaseLostError(grpcCode, result?.message ?? 'no result', {
                  code: result?.outcome === 'lease_lost' ? 'lease_lost' : 'not_found',
                }),
              );
            }
          }),
        (error: unknown) => {
          const e = toSeppError(error);
          // One result over the server's limit refuses the whole batch: ack each on its own instead.
          if (e.grpcCode === status.INVALID_ARGUMENT) for (const a of chunk) this.ackAlone(a);
          else for (const a of chunk) a.reject(e);
        },
      );
    }
  }

  private ackAlone(ack: QueuedAck): void {
    ackCall(this.conn, ack.lease, ack.result).then(ack.resolve, (error: unknown) =>
      ack.reject(toSeppError(error)),
    );
  }

  async progress(lease: LeaseRef, fields: ProgressFields): Promise<void> {
    await progressCall(this.conn, lease, fields);
  }

  nack(lease: LeaseRef, options: NackOptions, repeated = false): Promise<NackResult> {
    return nackCall(this.conn, lease, options, repeated);
  }

  extend(lease: LeaseRef, leaseMs: number): Promise<Date> {
    return extendCall(this.conn, lease, leaseMs);
  }

  stopTaking(): void {
    this.taking = false;
    // A poll cancelled while waiting leases nothing.
    this.poll?.abort();
    this.backoff?.cancel();
  }

  async finish(): Promise<void> {}

  cancel(): void {
    this.stopTaking();
  }
}
