/**
 * The batch members whose handlers run in this process, and the attempt each runs under:
 * the server accepts an add to a sealed batch `fromMember` only with the attempt of the
 * member's current lease (`fromMemberAttempt`), which only its worker was handed. A
 * Worker notes a member while its handler runs, so `addToBatch(job.batchId, jobs,
 * { fromMember: job.id })` proves itself whichever Client of the process makes the call
 * (a handler may add through a producer key's Client while a worker key's Client leases).
 */

const running = new Map<string, number>();

/** Notes that the handler of batch member `jobId`'s attempt `attempt` runs; returns what forgets it. */
export function memberRuns(jobId: string, attempt: number): () => void {
  running.set(jobId, attempt);
  return () => {
    if (running.get(jobId) === attempt) running.delete(jobId);
  };
}

/** The attempt a handler of member `jobId` runs under in this process; undefined when none runs here. */
export function runningAttempt(jobId: string): number | undefined {
  return running.get(jobId);
}
