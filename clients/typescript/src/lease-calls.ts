/**
 * The unary lease calls (Reserve, Ack, AckBatch, Nack, Extend, ReportProgress), shared by
 * SeppClient's methods and the Worker's unary transport.
 *
 * Retrying them after UNAVAILABLE is safe: a lost Reserve answer leaves
 * leases that simply expire (delivery is at least once), and settlements are
 * fenced by the attempt, so a repeat can never settle a later delivery — at
 * worst it finds the job already settled (NOT_FOUND).
 */

import { optionalInt32, optionalMs } from './arguments.ts';
import type { Connection } from './connection.ts';
import { nackDirective, nackResultFromProto } from './convert.ts';
import type { LeaseLostError } from './errors.ts';
import type { JobResult as ProtoJobResult, LeasedJob as ProtoLeasedJob } from './gen/sepp/v1/job.js';
import { SettleOutcome } from './gen/sepp/v1/work.js';
import { ackApplied, ackAppliedOr, nackAppliedOr, notLeased } from './repeated-settlement.ts';
import { type JobProgress, progressFromProto } from './results.ts';
import type { AckResult, CallOptions, LeaseRef, NackOptions, NackResult, ReserveOptions } from './types.ts';

/**
 * What a reserve says this client can take: it reads answers of any size
 * (connection.ts), so the most a server may send (`max_message_bytes` is at
 * most 256 MiB); the server leases no more jobs than fit in its own limit.
 */
const anyAnswerBytes = 256 * 1024 * 1024;

/** Extra time a long poll's deadline allows beyond its wait, in ms. */
export const longPollMarginMs = 5000;

export async function reserveCall(conn: Connection, options: ReserveOptions): Promise<ProtoLeasedJob[]> {
  const waitMs = optionalMs(options.waitMs, 'waitMs', 0);
  const response = await conn.invoke(
    conn.rpc.reserve,
    {
      queues: [...options.queues],
      maxJobs: optionalInt32(
        options.maxJobs,
        'maxJobs',
        1,
        1,
        "an integer from 1 to the server's max_reserve_jobs",
      ),
      leaseDurationMs: optionalMs(options.leaseMs, 'leaseMs', 0),
      waitTimeoutMs: waitMs,
      workerId: options.workerId ?? '',
      // This client reads answers of any size: the server's own send limit is the bound.
      maxResponseBytes: anyAnswerBytes,
    },
    { deadlineMs: options.deadlineMs ?? waitMs + longPollMarginMs, signal: options.signal, retrySafe: true },
  );
  return response.jobs;
}

/**
 * Acks a lease with an already encoded result (see results.ts). `repeated`: an earlier send of
 * this ack may have been applied (its answer was lost); so may a send this call repeats after
 * UNAVAILABLE. A repeat answered "not leased" is a lost lease only where the job disproves the
 * ack (repeated-settlement.ts).
 */
export async function ackCall(
  conn: Connection,
  lease: LeaseRef,
  result: ProtoJobResult | undefined,
  options: CallOptions = {},
  repeated = false,
): Promise<void> {
  await settlement(
    repeated,
    (onRepeat) =>
      conn.invoke(
        conn.rpc.ack,
        { jobId: lease.id, attempt: lease.attempt, result },
        {
          deadlineMs: options.deadlineMs,
          signal: options.signal,
          retrySafe: true,
          leaseCall: true,
          onRepeat,
        },
      ),
    (refusal) => ackAppliedOr(conn, lease, refusal).then(() => ({})),
  );
}

/**
 * A settlement `send` makes (telling `onRepeat` when it sends it again after UNAVAILABLE):
 * `repeated` or so sent again, an answer "not leased" goes to `refused`, which finds out what
 * the first send did (repeated-settlement.ts).
 */
async function settlement<T>(
  repeated: boolean,
  send: (onRepeat: () => void) => Promise<T>,
  refused: (refusal: LeaseLostError) => Promise<T>,
): Promise<T> {
  let repeat = repeated;
  try {
    return await send(() => {
      repeat = true;
    });
  } catch (error) {
    if (!repeat || !notLeased(error)) throw error;
    return refused(error);
  }
}

/**
 * Acks many leases, each with its already encoded result (or none). Repeated after UNAVAILABLE,
 * an ack answered `not_found` is `ok` unless the job disproves it, as ackCall's.
 */
export async function ackBatchCall(
  conn: Connection,
  acks: readonly { lease: LeaseRef; result: ProtoJobResult | undefined }[],
  options: CallOptions = {},
): Promise<AckResult[]> {
  let repeated = false;
  const response = await conn.invoke(
    conn.rpc.ackBatch,
    { acks: acks.map(({ lease, result }) => ({ jobId: lease.id, attempt: lease.attempt, result })) },
    {
      deadlineMs: options.deadlineMs,
      signal: options.signal,
      retrySafe: true,
      onRepeat: () => {
        repeated = true;
      },
    },
  );
  if (repeated) {
    await Promise.all(
      response.results.map(async (r, i) => {
        const lease = acks[i]?.lease;
        if (r.outcome !== SettleOutcome.NOT_FOUND || lease === undefined) return;
        if (await ackApplied(conn, lease)) r.outcome = SettleOutcome.OK;
      }),
    );
  }
  return response.results.map((r) => ({
    outcome:
      r.outcome === SettleOutcome.OK
        ? 'ok'
        : r.outcome === SettleOutcome.LEASE_LOST
          ? 'lease_lost'
          : r.outcome === SettleOutcome.CANCELLED
            ? 'cancelled'
            : 'not_found',
    message: r.message,
  }));
}

/** Longest error class the server takes, in characters. */
const maxClassChars = 256;
/** Stack sent at most, in characters (the server keeps at most `max_error_bytes` of it, 8 KiB by default). */
const maxStackChars = 64 * 1024;

/**
 * A nack's error fields: the message and, for an `Error`, its class and stack (what the
 * error itself holds; nothing else of the job). The class is `error.name`, or the
 * constructor's name when the name was left `Error` by a subclass; cut to what the
 * server takes, control characters dropped.
 */
export function errorFields(error: string | Error | undefined): {
  errorMessage: string;
  errorClass: string;
  errorStack: string;
} {
  if (error === undefined) return { errorMessage: '', errorClass: '', errorStack: '' };
  if (!(error instanceof Error)) return { errorMessage: error, errorClass: '', errorStack: '' };
  const ctor = (error as { constructor?: { name?: unknown } }).constructor?.name;
  const named = error.name !== 'Error' || typeof ctor !== 'string' || ctor === '' ? error.name : ctor;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: dropping control characters is the point.
  const printable = String(named ?? '').replace(/[\u0000-\u001f\u007f]/g, '');
  const errorClass = printable.slice(0, maxClassChars);
  const stack = typeof error.stack === 'string' ? error.stack.slice(0, maxStackChars) : '';
  return { errorMessage: error.message, errorClass, errorStack: stack };
}

/**
 * Nacks a lease. `repeated`: an earlier send of this nack may have been applied (its answer was
 * lost); so may a send this call repeats after UNAVAILABLE. A repeat answered "not leased" is
 * taken as applied only where the job proves it (repeated-settlement.ts).
 */
export async function nackCall(
  conn: Connection,
  lease: LeaseRef,
  options: NackOptions = {},
  repeated = false,
): Promise<NackResult> {
  const fields = errorFields(options.error);
  return settlement(
    repeated,
    (onRepeat) =>
      conn
        .invoke(
          conn.rpc.nack,
          { jobId: lease.id, attempt: lease.attempt, ...fields, directive: nackDirective(options) },
          {
            deadlineMs: options.deadlineMs,
            signal: options.signal,
            // Not a give-back: sent once, a lost one leaves the lease to run out. (A repeat of an
            // applied one would be refused as stale: a give-back keeps the attempt, so the job's
            // next lease has the next one.)
            retrySafe: options.giveBack !== true,
            leaseCall: true,
            onRepeat,
          },
        )
        .then(nackResultFromProto),
    (refusal) => nackAppliedOr(conn, lease, fields, refusal),
  );
}

/** Reports progress of a lease: fenced like extend, so LeaseLostError when the lease is gone. */
export async function progressCall(
  conn: Connection,
  lease: LeaseRef,
  fields: { percent: number; hasPercent: boolean; json: string },
  options: CallOptions = {},
): Promise<JobProgress | null> {
  const response = await conn.invoke(
    conn.rpc.reportProgress,
    { jobId: lease.id, attempt: lease.attempt, ...fields },
    // Reporting the same progress twice stores the same thing.
    { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: true, leaseCall: true },
  );
  return progressFromProto(response.progress);
}

export async function extendCall(
  conn: Connection,
  lease: LeaseRef,
  leaseMs: number | undefined,
  options: CallOptions = {},
): Promise<Date> {
  const response = await conn.invoke(
    conn.rpc.extend,
    { jobId: lease.id, attempt: lease.attempt, leaseDurationMs: optionalMs(leaseMs, 'leaseMs', 0) },
    { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: true, leaseCall: true },
  );
  return new Date(response.leaseDeadlineMs);
}
