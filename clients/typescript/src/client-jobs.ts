/**
 * A client's calls on jobs already enqueued (`client.jobs`): read one; cancel,
 * change (admin key) one or every job a filter matches.
 */
import { status } from '@grpc/grpc-js';
import { cancelJobCall, cancelJobsCall, updateJobCall, updateJobsCall } from './admin-calls.ts';
import { type Connection, retrySafe } from './connection.ts';
import { SeppError } from './errors.ts';
import { Job } from './jobs.ts';
import type { CallOptions, CancelJobsResult, CancelResult, JobChanges, JobFilter } from './types.ts';

/** The job calls of a client (`client.jobs`). */
export class Jobs {
  /** @internal */
  constructor(private readonly conn: Connection) {}

  /** Reads a job: state, attempts, timestamps, payload, last error and error history. Throws NOT_FOUND. */
  async get(id: string, options: CallOptions = {}): Promise<Job> {
    const response = await this.conn.invoke(this.conn.rpc.getJob, { jobId: id }, retrySafe(options));
    if (response.job === undefined) throw new SeppError(status.INTERNAL, 'the server sent no job');
    return new Job(response.job);
  }

  /**
   * Cancels a job that has not finished (admin key). A scheduled or ready job
   * is `cancelled` at once; for a leased one the worker is told to stop
   * (`state` stays `leased` until it does, or its lease ends) and the job ends
   * `cancelled`, never retried. Throws FAILED_PRECONDITION for a dead or
   * completed job. Repeating it is harmless.
   */
  cancel(id: string, options: CallOptions = {}): Promise<CancelResult> {
    return cancelJobCall(this.conn, id, options);
  }

  /**
   * Cancels every job of a queue that `filter` matches (default states:
   * scheduled, ready and leased), as `cancel` does one (admin key). With
   * `dryRun` nothing changes and `matched` counts the jobs it would change.
   */
  cancelMatching(
    filter: JobFilter,
    options: CallOptions & { dryRun?: boolean } = {},
  ): Promise<CancelJobsResult> {
    return cancelJobsCall(this.conn, filter, options);
  }

  /**
   * Changes a scheduled or ready job: its priority, when it runs, its group, or
   * run it now (admin key). Resolves with the job as it is now; a leased job is
   * refused with FAILED_PRECONDITION.
   */
  update(id: string, changes: JobChanges, options: CallOptions = {}): Promise<Job> {
    return updateJobCall(this.conn, id, changes, options);
  }

  /**
   * Runs now (`runNow`) or sets the priority of every waiting job `filter`
   * matches (admin key); resolves with how many changed.
   */
  updateMatching(filter: JobFilter, changes: JobChanges, options: CallOptions = {}): Promise<number> {
    return updateJobsCall(this.conn, filter, changes, options);
  }
}
