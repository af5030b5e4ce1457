/**
 * Who enqueued a job (EnqueueRequest.createdBy, stored as jobs.created_by): the API key's
 * name, so that keys other than it make at most half of the job's dependents
 * (dependencies/edges.ts, othersShare). The gRPC and HTTP handlers mark their requests; a
 * server without keys marks none, and its jobs' rows bind nothing more.
 */

/** Marks `requests` (in place) as enqueued by the key `keyName`; undefined (no key) marks nothing. */
export function enqueuedBy<R extends { createdBy?: string }>(
  requests: R[],
  keyName: string | undefined,
): R[] {
  if (keyName !== undefined) for (const request of requests) request.createdBy = keyName;
  return requests;
}
