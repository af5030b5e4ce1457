/**
 * How many bytes a leased job takes in an answer, estimated from above: the
 * payload as it is, every string at 3 bytes per UTF-16 unit (the most UTF-8
 * needs), and a generous allowance for field tags, lengths and the small
 * fields. The Work stream splits its batch messages with it, and a unary
 * reserve with an answer budget leases no more than the budget holds
 * (reserve.ts), so an answer never grows past what its caller can take.
 */

/** Field tags, lengths and the small fields of one job, generously. */
export const jobOverheadBytes = 128;

/** The fields the estimate reads: the engine's LeasedJob and the protocol's both have them. */
export interface SizedJob {
  readonly queue: string;
  readonly type: string;
  readonly payload: Uint8Array;
  readonly contentType: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly traceparent: string | null;
  readonly tracestate: string | null;
  readonly idempotencyKey: string | null;
  readonly lastError: string | null;
  readonly group: string | null;
  /** The batch of a member (null, or empty in the protocol's, outside batches). */
  readonly batchId: string | null;
  /** Only a batch member's lease has one. */
  readonly leaseToken?: string | undefined;
  /** Only a job that had dependencies has them. */
  readonly dependencyResults?: readonly {
    readonly name: string | null;
    readonly result: Uint8Array | null;
    readonly resultContentType: string | null;
  }[];
}

/** An upper bound of a job's encoded size; `idLength` is its id's length (`id` or `jobId`). */
export function leasedJobBytes(job: SizedJob, idLength: number): number {
  let chars =
    idLength +
    job.queue.length +
    job.type.length +
    job.contentType.length +
    (job.traceparent?.length ?? 0) +
    (job.tracestate?.length ?? 0) +
    (job.idempotencyKey?.length ?? 0) +
    (job.lastError?.length ?? 0) +
    (job.group?.length ?? 0) +
    (job.batchId?.length ?? 0) +
    (job.leaseToken?.length ?? 0);
  for (const key in job.metadata) chars += key.length + (job.metadata[key]?.length ?? 0) + 8;
  let resultBytes = 0;
  if (job.dependencyResults !== undefined) {
    for (const d of job.dependencyResults) {
      // An id (36), tags and the state, generously; the name and content type at 3 bytes a unit.
      resultBytes += 64 + (d.result?.byteLength ?? 0);
      chars += (d.name?.length ?? 0) + (d.resultContentType?.length ?? 0);
    }
  }
  return jobOverheadBytes + job.payload.length + resultBytes + 3 * chars;
}
