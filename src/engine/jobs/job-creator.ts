/**
 * Who enqueued a job (EnqueueRequest.createdBy, stored as jobs.created_by): the API key's
 * name, so that keys other than it make at most half of the job's dependents
 * (dependencies/edges.ts, othersShare). The gRPC and HTTP handlers mark their requests; a
 * server without keys marks none, and its jobs' rows bind nothing more. A key with the admin
 * role (a trusted operator) is marked as such: its edges to any job count as the job's
 * creator's, not against othersShare.
 */

/** The key that enqueues: its name, and whether it has the admin role. */
export interface JobCreator {
  readonly name: string;
  readonly admin: boolean;
}

/** Marks `requests` (in place) as enqueued by the key `creator`; undefined (no key) marks nothing. */
export function enqueuedBy<R extends { createdBy?: string; createdByAdmin?: boolean }>(
  requests: R[],
  creator: JobCreator | undefined,
): R[] {
  if (creator === undefined) return requests;
  for (const request of requests) {
    request.createdBy = creator.name;
    // Only an admin's requests gain the field: the others keep the shape they were made with.
    if (creator.admin) request.createdByAdmin = true;
  }
  return requests;
}
