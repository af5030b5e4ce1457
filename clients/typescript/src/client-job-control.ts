/**
 * The SeppClient's job control (admin key): cancel, update and purge jobs,
 * and read the audit log. SeppClient inherits these methods (client.ts).
 */
import {
  cancelJobCall,
  cancelJobsCall,
  listAuditCall,
  purgeQueueCall,
  updateJobCall,
  updateJobsCall,
} from './admin-calls.ts';
import type { Connection } from './connection.ts';
import type { Job } from './jobs.ts';
import type {
  AuditEntry,
  AuditQuery,
  CallOptions,
  CancelJobsResult,
  CancelResult,
  JobChanges,
  JobFilter,
} from './types.ts';

export class JobControlCalls {
  /** @internal The connection; Workers use it to open Work streams. */
  readonly connection: Connection;

  /** @internal */
  constructor(connection: Connection) {
    this.connection = connection;
  }

  /**
   * Cancels a job that has not finished (admin key). A scheduled or ready job
   * is `cancelled` at once; for a leased one the worker is told to stop
   * (`state` stays `leased` until it does, or its lease ends) and the job ends
   * `cancelled`, never retried. Throws FAILED_PRECONDITION for a dead or
   * completed job. Repeating it is harmless.
   */
  cancelJob(id: string, options: CallOptions = {}): Promise<CancelResult> {
    return cancelJobCall(this.connection, id, options);
  }

  /**
   * Cancels every job of a queue that `filter` matches (default states:
   * scheduled, ready and leased), as `cancelJob` does one (admin key). With
   * `dryRun` nothing changes and `matched` counts the jobs it would change.
   */
  cancelJobs(filter: JobFilter, options: CallOptions & { dryRun?: boolean } = {}): Promise<CancelJobsResult> {
    return cancelJobsCall(this.connection, filter, options);
  }

  /**
   * Changes a scheduled or ready job: its priority, when it runs, or run it
   * now (admin key). Resolves with the job as it is now; a leased job is
   * refused with FAILED_PRECONDITION.
   */
  updateJob(id: string, changes: JobChanges, options: CallOptions = {}): Promise<Job> {
    return updateJobCall(this.connection, id, changes, options);
  }

  /**
   * Runs now (`runNow`) or sets the priority of every waiting job `filter`
   * matches (admin key); resolves with how many changed.
   */
  updateJobs(filter: JobFilter, changes: JobChanges, options: CallOptions = {}): Promise<number> {
    return updateJobsCall(this.connection, filter, changes, options);
  }

  /** Deletes every ready and scheduled job of a queue (admin key); resolves with how many. */
  purgeQueue(queue: string, options: CallOptions = {}): Promise<number> {
    return purgeQueueCall(this.connection, queue, options);
  }

  /** One page of the audit log, newest first (admin key). */
  listAuditEntries(query: AuditQuery = {}): Promise<{ entries: AuditEntry[]; nextPageToken: string | null }> {
    return listAuditCall(this.connection, query);
  }

  /**
   * Every matching entry of the audit log, newest first, fetched page by page
   * as the loop goes (admin key): `for await (const entry of client.auditEntries({ target: 'queue:emails' }))`.
   */
  async *auditEntries(
    query: Omit<AuditQuery, 'pageToken'> = {},
  ): AsyncGenerator<AuditEntry, void, undefined> {
    let pageToken: string | null = null;
    do {
      const page = await this.listAuditEntries(pageToken === null ? query : { ...query, pageToken });
      yield* page.entries;
      pageToken = page.nextPageToken;
    } while (pageToken !== null);
  }
}
