/**
 * A settlement sent again after its first send may have been applied: its answer was lost (the
 * connection or the Work stream broke after it left), or the Work stream that carried it was
 * refused over a bound after it was written (settlement-recut.ts), or it is repeated after
 * UNAVAILABLE (a unary call, the Worker's or the client's). Settlements are fenced by the
 * attempt, so the repeat changes nothing then; it is answered as for a lease that already ended.
 * Which answers to a repeat count as "already applied":
 *
 * - an ack answered `not_found` (the job is not leased, or gone), unless the job read right after
 *   disproves it: most likely the first send completed it. The job read `completed` on that
 *   attempt proves it (a job deleted in its ack is read from the outcome the server keeps,
 *   `outcome_only`); read in any other state, or on a later attempt, it was not applied (the
 *   lease ran out first) and the refusal is reported. A job that cannot be read (its outcome
 *   forgotten, a key without the read scope) proves nothing either way: taken as applied.
 * - a nack answered `not_found`, only when the job read right after proves it: its error
 *   history holds an entry of that attempt with the nack's own message and class (as the server
 *   stores them: a message over `max_error_bytes` cut and marked), and the job is either still
 *   on that attempt and no longer leased, or on a later attempt (the nack's retry was leased
 *   again since). A lease that ran out writes the server's own note ("lease expired") there
 *   instead, so `not_found` alone would not do. The nack's result is the job's state as read (a
 *   retry may have become due since: `ready`); leased again, `ready` with its run time as read.
 *
 * Both are checked after an answer `lease_lost` too (another attempt holds the lease: a nack's
 * retry leased again; an ack's is disproved by the job). Any other answer (`job_cancelled`; for
 * a nack, a job that cannot be read or does not prove it) is the real refusal and is reported.
 */
import type { Connection } from './connection.ts';
import { LeaseLostError } from './errors.ts';
import type { Job as ProtoJob } from './gen/sepp/v1/job.js';
import { JobState as ProtoJobState } from './gen/sepp/v1/job.js';
import type { LeaseRef, NackResult } from './types.ts';

/** The mark the server appends to an error message it cut to `max_error_bytes`. */
const cutMark = '… [truncated]';

/** The states a nack leaves a job in, as a nack answers them. */
const nackedStates = new Map<ProtoJobState, NackResult['state']>([
  [ProtoJobState.READY, 'ready'],
  [ProtoJobState.SCHEDULED, 'scheduled'],
  [ProtoJobState.DEAD, 'dead'],
  [ProtoJobState.CANCELLED, 'cancelled'],
]);

/**
 * A repeat answered "not leased" (NOT_FOUND `not_found`) or "leased under a later attempt"
 * (`lease_lost`: a nack's retry leased again since): what its first send did is to be found out.
 */
export function notLeased(error: unknown): error is LeaseLostError {
  return error instanceof LeaseLostError && (error.code === 'not_found' || error.code === 'lease_lost');
}

/** Whether `stored` is `sent` as the server keeps it (cut and marked when over its bound). */
function storedAs(stored: string, sent: string): boolean {
  if (stored === sent) return true;
  return stored.endsWith(cutMark) && sent.startsWith(stored.slice(0, -cutMark.length));
}

/**
 * The result of a nack whose repeat was answered "not leased" (`refusal`), read from the job
 * when it proves the first send was applied (see the top); else the refusal is thrown.
 */
export async function nackAppliedOr(
  conn: Connection,
  lease: LeaseRef,
  sent: { errorMessage: string; errorClass: string },
  refusal: unknown,
): Promise<NackResult> {
  const applied = await nackApplied(conn, lease, sent);
  if (applied === undefined) throw refusal;
  return applied;
}

/**
 * An ack whose repeat was answered "not leased" (`refusal`): resolves when the job read right
 * after does not disprove that the first send was applied (see the top); else the refusal is
 * thrown.
 */
export async function ackAppliedOr(conn: Connection, lease: LeaseRef, refusal: unknown): Promise<void> {
  if (!(await ackApplied(conn, lease))) throw refusal;
}

/** Whether an ack repeated and answered "not leased" counts as applied: the job does not disprove it. */
export async function ackApplied(conn: Connection, lease: LeaseRef): Promise<boolean> {
  let job: ProtoJob | undefined;
  try {
    job = (await conn.invoke(conn.rpc.getJob, { jobId: lease.id }, { retrySafe: true })).job;
  } catch {
    return true; // Not readable (its outcome forgotten, or a key without the read scope): nothing disproves it.
  }
  return job === undefined || (job.state === ProtoJobState.COMPLETED && job.attempt === lease.attempt);
}

async function nackApplied(
  conn: Connection,
  lease: LeaseRef,
  sent: { errorMessage: string; errorClass: string },
): Promise<NackResult | undefined> {
  let job: ProtoJob | undefined;
  try {
    job = (await conn.invoke(conn.rpc.getJob, { jobId: lease.id }, { retrySafe: true })).job;
  } catch {
    // Not readable (gone, or a key without the read scope): nothing proves it.
    return undefined;
  }
  if (job === undefined || job.attempt < lease.attempt) return undefined;
  const entry = job.errors.findLast((e) => e.attempt === lease.attempt);
  if (entry === undefined) return undefined;
  if (!storedAs(entry.error, sent.errorMessage) || entry.errorClass !== sent.errorClass) return undefined;
  // Leased again under a later attempt: the nack put it back to run, and it was due by then.
  if (job.attempt > lease.attempt) return { state: 'ready', runAt: new Date(job.runAtMs) };
  const state = nackedStates.get(job.state);
  if (state === undefined) return undefined;
  const ends = state === 'dead' || state === 'cancelled';
  return { state, runAt: ends ? null : new Date(job.runAtMs) };
}
