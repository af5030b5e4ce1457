/**
 * How a Worker gets jobs and settles them. Two implementations with the same
 * behaviour: the Work stream (work-stream-transport.ts, the fast path) and
 * unary Reserve long polls with Ack/Nack/Extend calls (reserve-transport.ts).
 */

import { status } from '@grpc/grpc-js';
import {
  type JobCancelledError,
  type JobTimeoutError,
  type SeppError,
  tooLargeForTransport,
} from './errors.ts';
import type { JobResult as ProtoJobResult, LeasedJob as ProtoLeasedJob } from './gen/sepp/v1/job.js';
import type { LeaseRef, NackOptions, NackResult } from './types.ts';
import type { WorkerClock } from './worker-clock.ts';

/**
 * The statuses of a refused Work stream or Reserve that stop the Worker: the
 * server refused the request itself (its key, its key's role or scope, its
 * queue names or its credit), or does not know the call, and asking again
 * gets the same answer. Every other status — UNAVAILABLE (shutting down,
 * storage), RESOURCE_EXHAUSTED (a limit: back off), INTERNAL (a connection
 * the server closed), a stream the server ended — is reported and retried
 * with backoff. The table, with when the server answers each, is in
 * docs/protocol.md ("What stops a Worker"); the Python SDK's FATAL_STATUSES
 * (_work_transport.py) is the same set.
 */
export const fatalStatuses: ReadonlySet<number> = new Set([
  status.UNAUTHENTICATED,
  status.PERMISSION_DENIED,
  status.INVALID_ARGUMENT,
  status.UNIMPLEMENTED,
]);

/**
 * Whether a refused Work stream or Reserve stops the Worker: one of `fatalStatuses`, or an
 * error the server marked `sepp-retry: never` (a settlements batch over its max_batch_jobs, a
 * first job larger than the answer), which a retry would only send again, forever. `operator`
 * (a storage failure someone must fix) does not stop it: the Worker backs off and reconnects,
 * to a newer server or to this one once fixed. The Python SDK's `stops_worker`
 * (_work_transport.py) is the same.
 */
export function stopsWorker(error: SeppError): boolean {
  // A stream the server's gRPC library ended for a message over its size is not refused: the
  // settlements in it go again one by one (unary), and the next stream is served.
  return (
    fatalStatuses.has(error.grpcCode) ||
    (error.retry === 'never' && !tooLargeForTransport(error.grpcCode, error.message))
  );
}

/**
 * A Work stream still open this long, on a channel that is connected, reached
 * the server: a refusal comes at once. (A stream waiting for a connection that
 * hangs is not open on a ready channel, however long it waits.) The Python SDK's
 * HEALTHY_AFTER_S (_work_stream.py) is the same.
 */
export const healthyAfterMs = 1000;

/** What a transport needs from its Worker. */
export interface TransportHost {
  /** Slots not taken by running jobs, plus prefetch not taken by held ones: the most jobs the transport may ask for now. */
  freeSlots(): number;
  /** Slots with no job running: jobs wanted now (no job is held while one is free). */
  idleSlots(): number;
  /**
   * While no slot is idle, credit waits until it is worth this many jobs: with
   * prefetch, half the lane's prefetch, so held jobs are refilled by a few large
   * leases instead of one per settled job; without, 1 (every free slot at once).
   */
  readonly refillJobs: number;
  /**
   * A job was leased to this worker; it takes one slot. `unasked`: the server sent it past what
   * was asked (the stream's credit, the Reserve's max_jobs): it is given back, never held, so a
   * server that ignores the credit cannot make the worker hold (and extend) jobs without bound.
   */
  deliver(job: ProtoLeasedJob, unasked?: boolean): void;
  /** A connection-level problem: the transport could not get jobs and asks again after a backoff. */
  report(error: SeppError): void;
  /** The server answered (a Reserve, a message on the Work stream, or a stream open `healthyAfterMs` on a ready channel): any outage is over. */
  connected(): void;
  /** A refusal with one of `fatalStatuses`: the transport asks no more; the worker stops. */
  stop(error: SeppError): void;
  /** The server says a lease may be cancelled: stop that job if this worker runs it (else ignore). */
  cancel(jobId: string, attempt: number, error: JobCancelledError): void;
  /** The server ended an attempt by its hard timeout: stop that job if this worker runs it (else ignore). */
  timedOut(jobId: string, attempt: number, error: JobTimeoutError): void;
}

/** A progress report as the protocol carries it (see results.ts `progressFields`). */
export interface ProgressFields {
  percent: number;
  hasPercent: boolean;
  json: string;
}

export interface TransportConfig {
  queues: readonly string[];
  leaseMs: number;
  workerId: string;
  /** Longest unary long poll, in ms. */
  pollWaitMs: number;
  reconnectBaseDelayMs: number;
  reconnectMaxDelayMs: number;
  clock: WorkerClock;
}

export interface WorkTransport {
  /**
   * When a job's slot frees: `false` as soon as its handler returns (the ack
   * and the new credit travel in order on one stream, so the server settles
   * before it leases again); `true` only once the settlement is answered
   * (separate unary calls may overtake each other).
   */
  readonly freesSlotOnSettle: boolean;
  /** Starts asking for jobs. */
  start(): void;
  /** Slots were freed: ask for as many more jobs as `freeSlots()` allows. */
  release(): void;
  /** Acks with an already encoded result (or none). */
  ack(lease: LeaseRef, result: ProtoJobResult | undefined): Promise<void>;
  /**
   * Nacks. `repeated`: an earlier send of this nack failed and may have been applied, so an answer
   * "not leased" is checked against the job (repeated-settlement.ts).
   */
  nack(lease: LeaseRef, options: NackOptions, repeated?: boolean): Promise<NackResult>;
  extend(lease: LeaseRef, leaseMs: number): Promise<Date>;
  /** Reports progress (fenced like extend). */
  progress(lease: LeaseRef, fields: ProgressFields): Promise<void>;
  /** Asks for no more jobs (shutdown); settlements still work. */
  stopTaking(): void;
  /** Ends gracefully once everything is settled. */
  finish(): Promise<void>;
  /** Ends at once (a graceful finish took too long). */
  cancel(): void;
}
