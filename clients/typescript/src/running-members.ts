/**
 * The batch members whose handlers run in this process, and the token of the lease each runs
 * under: the server accepts an add to a sealed batch `fromMember` only with the secret token
 * of the member's current lease (`fromMemberToken`), which only its worker was handed. A
 * Worker notes a member while its handler runs, so `addToBatch(job.batchId, jobs,
 * { fromMember: job.id })` proves itself whichever Client of the process makes the call
 * (a handler may add through a producer key's Client while a worker key's Client leases).
 */

const running = new Map<string, string>();

/** Notes that the handler of batch member `jobId` runs under the lease whose token is `token`; returns what forgets it. */
export function memberRuns(jobId: string, token: string): () => void {
  running.set(jobId, token);
  return () => {
    if (running.get(jobId) === token) running.delete(jobId);
  };
}

/** The lease token a handler of member `jobId` runs under in this process; undefined when none runs here. */
export function runningToken(jobId: string): string | undefined {
  return running.get(jobId);
}
