/**
 * A client's calls on jobs already enqueued (`client.jobs`): read one; cancel,
 * change (admin key) one or every job a filter matches; requeue or delete every
 * job a filter matches; follow and stop bulk operations.
 */
import { status } from '@grpc/grpc-js';
import { cancelJobCall, cancelJobsCall, updateJobCall, updateJobsCall } from './admin-calls.ts';
import {
  deleteJobsCall,
  getBulkOperationCall,
  listBulkOperationsCall,
  requeueJobsCall,
  stopBulkOperationCall,
} from './bulk-calls.ts';
import { type Connection, retrySafe } from './connection.ts';
import { SeppError } from './errors.ts';
import { Job } from './jobs.ts';
import type {
  BulkAction,
  BulkChanges,
  BulkOperation,
  BulkOptions,
  BulkResult,
  CallOptions,
  CancelJobsResult,
  CancelResult,
  JobChanges,
  JobFilter,
  RequestKeyOption,
} from './types.ts';

/** Options of `countMatching`: for an update, the changes it would make. */
export interface CountOptions extends CallOptions {
  /** An update's new priority, 0 to 9: counts every waiting job that matches. */
  priority?: number;
  /** An update's run now (the default change of a count): counts the scheduled jobs that match. */
  runNow?: boolean;
}

/** Refuses a priority or a run now given to a bulk action other than an update (they would go unused). */
function changesOfAnUpdate(action: BulkAction, changes: BulkChanges): void {
  if (changes.priority !== undefined || changes.runNow === true) {
    throw new SeppError(
      status.INVALID_ARGUMENT,
      `priority and runNow are changes of an update, not of a ${action}`,
    );
  }
}

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
  cancelMatching(filter: JobFilter, options: BulkOptions = {}): Promise<CancelJobsResult> {
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
   * matches (admin key), as one server-side bulk operation; resolves with how
   * many changed. With `dryRun` nothing changes and it resolves with a
   * `BulkResult` whose `matched` counts the jobs it would change; with
   * `background`, with a `BulkResult` as soon as the operation has begun
   * (`changed` 0: follow `operation.id` with `bulkOperation`).
   */
  updateMatching(
    filter: JobFilter,
    changes: BulkChanges,
    options?: BulkOptions & { dryRun?: false; background?: false },
  ): Promise<number>;
  updateMatching(
    filter: JobFilter,
    changes: BulkChanges,
    options: BulkOptions & ({ dryRun: true } | { background: true }),
  ): Promise<BulkResult>;
  updateMatching(
    filter: JobFilter,
    changes: BulkChanges,
    options?: BulkOptions,
  ): Promise<number | BulkResult>;
  async updateMatching(
    filter: JobFilter,
    changes: BulkChanges,
    options: BulkOptions = {},
  ): Promise<number | BulkResult> {
    const result = await updateJobsCall(this.conn, filter, changes, options);
    // Without either option the call keeps the answer it had before they existed: the count.
    return options.dryRun === true || options.background === true ? result : result.changed;
  }

  /**
   * Requeues every finished job `filter` matches — dead, completed or
   * cancelled — ready now with a fresh attempt budget (admin key), as one
   * server-side bulk operation. With `dryRun` it only counts; with
   * `background` it answers once the operation has begun.
   */
  requeueMatching(filter: JobFilter, options: BulkOptions = {}): Promise<BulkResult> {
    return requeueJobsCall(this.conn, filter, options);
  }

  /**
   * Deletes every job `filter` matches that is not running (admin key), as one
   * bulk operation; `dryRun` and `background` as in `requeueMatching`.
   */
  deleteMatching(filter: JobFilter, options: BulkOptions = {}): Promise<BulkResult> {
    return deleteJobsCall(this.conn, filter, options);
  }

  /**
   * How many jobs a bulk action would apply to now, changing nothing: exact,
   * or at least `matched` when the server's count stopped at its budget. For
   * `update`, `priority` and `runNow` are the changes it would make (as in
   * `updateMatching`): with a `priority`, every waiting job that matches;
   * without one, what `runNow` would change (the scheduled jobs).
   */
  async countMatching(
    action: BulkAction,
    filter: JobFilter,
    options: CountOptions = {},
  ): Promise<{ matched: number; matchedAtLeast: boolean }> {
    const { priority, runNow, ...call } = options;
    let changes: JobChanges = {};
    if (action === 'update') {
      changes = { runNow: runNow === true || priority === undefined };
      if (priority !== undefined) changes.priority = priority;
    } else {
      changesOfAnUpdate(action, { priority, runNow });
    }
    const result = await this.bulk(action, filter, changes, { ...call, dryRun: true });
    return { matched: result.matched, matchedAtLeast: result.matchedAtLeast };
  }

  /**
   * Starts a bulk operation and resolves as soon as it has begun (`changes`
   * for `update`: `runNow` and/or `priority`); follow it with `bulkOperation`.
   */
  async startBulk(
    action: BulkAction,
    filter: JobFilter,
    changes: BulkChanges = {},
    options: CallOptions & RequestKeyOption = {},
  ): Promise<BulkOperation> {
    if (action !== 'update') changesOfAnUpdate(action, changes);
    const { operation } = await this.bulk(action, filter, changes, { ...options, background: true });
    if (operation === null) throw new SeppError(status.INTERNAL, 'the server sent no operation');
    return operation;
  }

  /** A bulk operation's progress (admin key); NOT_FOUND once the server no longer keeps it. */
  bulkOperation(id: string, options: CallOptions = {}): Promise<BulkOperation> {
    return getBulkOperationCall(this.conn, id, options);
  }

  /** The bulk operations running now and the last finished ones (admin key). */
  bulkOperations(options: CallOptions = {}): Promise<BulkOperation[]> {
    return listBulkOperationsCall(this.conn, options);
  }

  /** Stops a running bulk operation after its current slice; resolves with it once stopped. */
  stopBulkOperation(id: string, options: CallOptions = {}): Promise<BulkOperation> {
    return stopBulkOperationCall(this.conn, id, options);
  }

  private bulk(
    action: BulkAction,
    filter: JobFilter,
    changes: JobChanges,
    options: BulkOptions,
  ): Promise<BulkResult> {
    switch (action) {
      case 'cancel':
        return cancelJobsCall(this.conn, filter, options);
      case 'update':
        return updateJobsCall(this.conn, filter, changes, options);
      case 'requeue':
        return requeueJobsCall(this.conn, filter, options);
      case 'delete':
        return deleteJobsCall(this.conn, filter, options);
      default:
        // Reached only from JavaScript, or with a cast.
        throw new SeppError(
          status.INVALID_ARGUMENT,
          `${String(action)} is not a bulk action (use cancel, update, requeue or delete)`,
        );
    }
  }
}
