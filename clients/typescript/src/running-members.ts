/**
 * The batch members whose handlers run in this process, and the lease each runs under: the
 * server accepts an add to a sealed batch `fromMember` only with the secret token of the
 * member's current lease (`fromMemberToken`), which only its worker was handed. A Worker
 * notes a member while its handler runs, so `addToBatch(job.batchId, jobs,
 * { fromMember: job.id })` proves itself whichever Client of the process makes the call
 * (a handler may add through a producer key's Client while a worker key's Client leases).
 *
 * The lease's attempt is kept too and sent along (`fromMemberAttempt`): a server of this
 * version ignores it, but one older than lease tokens asks for it, so workers upgraded before
 * their servers still add (docs/upgrading.md, "To schema 31").
 */

/** The lease a member's handler runs under. */
export interface RunningLease {
  /** Empty from a server older than lease tokens. */
  readonly token: string;
  readonly attempt: number;
}

const running = new Map<string, RunningLease>();

/** Notes that the handler of batch member `jobId` runs under `lease`; returns what forgets it. */
export function memberRuns(jobId: string, lease: RunningLease): () => void {
  running.set(jobId, lease);
  return () => {
    if (running.get(jobId) === lease) running.delete(jobId);
  };
}

/** The lease a handler of member `jobId` runs under in this process; undefined when none runs here. */
export function runningLease(jobId: string): RunningLease | undefined {
  return running.get(jobId);
}
