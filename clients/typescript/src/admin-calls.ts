/**
 * The calls that manage queues and jobs — dead letters, job control and the
 * audit log — behind SeppClient's methods of the same names. All but the
 * dead-letter listing need an admin API key.
 */

import { status } from '@grpc/grpc-js';
import { int32Argument, msArgument, pageSizeArgument } from './arguments.ts';
import { bulkRequest, bulkResult, requestKeyOf } from './bulk-calls.ts';
import { type Connection, retrySafe } from './connection.ts';
import { timeMs } from './convert.ts';
import { SeppError } from './errors.ts';
import type { JobChanges as ProtoJobChanges } from './gen/sepp/v1/admin.js';
import type { BulkOperation as ProtoBulkOperation } from './gen/sepp/v1/bulk_operation.js';
import { deadReasonToProto, Job, jobStateName } from './jobs.ts';
import type {
  AuditEntry,
  AuditQuery,
  BulkOptions,
  BulkResult,
  CallOptions,
  CancelJobsResult,
  CancelResult,
  DeadLetterQuery,
  DeadLetterSelection,
  DeadReason,
  JobChanges,
  JobFilter,
  RequestKeyOption,
  TopErrors,
} from './types.ts';

// Reads, and changes whose repeat has no further effect (a cancelled job stays cancelled; a
// bulk change carries its request key, so a repeat answers with the operation the first one
// started), are retried after UNAVAILABLE: retrySafe (connection.ts).

/** Changes whose repeat could differ (a delay counts from the repeat): not retried. */
function once(options: CallOptions) {
  return { deadlineMs: options.deadlineMs, signal: options.signal, retrySafe: false };
}

export async function listDeadLettersCall(
  conn: Connection,
  queue: string,
  query: DeadLetterQuery,
): Promise<{ jobs: Job[]; nextPageToken: string | null }> {
  const response = await conn.invoke(
    conn.rpc.listDeadLetters,
    {
      queue,
      pageSize: pageSizeArgument(query.pageSize),
      pageToken: query.pageToken ?? '',
      reason: query.reason === undefined ? 0 : deadReasonToProto[query.reason],
    },
    retrySafe(query),
  );
  return {
    jobs: response.jobs.map((j) => new Job(j)),
    nextPageToken: response.nextPageToken === '' ? null : response.nextPageToken,
  };
}

/** A queue's dead letters grouped by last error (class, first line), the most jobs first. */
export async function topErrorsCall(
  conn: Connection,
  queue: string,
  options: CallOptions & { limit?: number },
): Promise<TopErrors> {
  const response = await conn.invoke(
    conn.rpc.listTopErrors,
    { queue, limit: options.limit ?? 0 },
    retrySafe(options),
  );
  return {
    groups: response.groups.map((g) => ({
      errorClass: g.key?.errorClass ?? '',
      firstLine: g.key?.firstLine ?? '',
      jobs: g.jobs,
      firstFailedAt: new Date(g.firstFailedAtMs),
      lastFailedAt: new Date(g.lastFailedAtMs),
    })),
    groupCount: response.groupCount,
    scanned: response.scanned,
    deadTotal: response.deadTotal,
    complete: response.complete,
  };
}

/**
 * Requeues or deletes dead letters: chosen ids, or all of a queue's
 * (optionally of one reason, or whose error contains some text) as one bulk
 * operation — with `background`, answered as soon as it has begun. Either
 * leaves them no longer dead letters, so a repeat changes nothing more.
 */
export async function changeDeadLettersCall(
  conn: Connection,
  action: 'requeue' | 'delete',
  queue: string,
  selection: DeadLetterSelection,
  options: CallOptions & RequestKeyOption & { reason?: DeadReason; errorText?: string; background?: boolean },
): Promise<BulkResult> {
  const all = selection === 'all';
  const request = {
    queue,
    jobIds: all ? [] : [...selection],
    all,
    reason: options.reason === undefined ? 0 : deadReasonToProto[options.reason],
    errorText: options.errorText ?? '',
    background: options.background === true,
    // Chosen ids change at once (no operation): the key matters only with `all`.
    requestKey: all ? requestKeyOf(options) : '',
  };
  if (action === 'requeue') {
    const response = await conn.invoke(conn.rpc.requeueDeadLetters, request, retrySafe(options));
    return changeResult(response.requeuedCount, response.operation);
  }
  const response = await conn.invoke(conn.rpc.deleteDeadLetters, request, retrySafe(options));
  return changeResult(response.deletedCount, response.operation);
}

/** A change's answer that has no dry run: its count, and its operation when it was one. */
function changeResult(changed: number, operation: ProtoBulkOperation | undefined): BulkResult {
  return bulkResult(changed, { matchedCount: 0, matchedAtLeast: false, operation }, false);
}

function changesToProto(changes: JobChanges): ProtoJobChanges {
  let scheduleChange: ProtoJobChanges['scheduleChange'];
  if (changes.runNow === true) scheduleChange = { $case: 'runNow', value: true };
  else if (changes.runAt !== undefined)
    scheduleChange = { $case: 'runAtMs', value: timeMs(changes.runAt, 'runAt') };
  else if (changes.delayMs !== undefined)
    scheduleChange = { $case: 'delayMs', value: msArgument(changes.delayMs, 'delayMs') };
  return {
    priorityChange:
      changes.priority === undefined
        ? undefined
        : {
            $case: 'priority',
            value: int32Argument(changes.priority, 'priority', 0, 'an integer from 0 to 9'),
          },
    scheduleChange,
    groupChange: changes.group === undefined ? undefined : { $case: 'group', value: changes.group ?? '' },
  };
}

export async function cancelJobCall(
  conn: Connection,
  id: string,
  options: CallOptions,
): Promise<CancelResult> {
  const response = await conn.invoke(conn.rpc.cancelJob, { jobId: id }, retrySafe(options));
  return { previousState: jobStateName(response.previousState), state: jobStateName(response.state) };
}

export async function cancelJobsCall(
  conn: Connection,
  filter: JobFilter,
  options: BulkOptions,
): Promise<CancelJobsResult> {
  const request = bulkRequest(filter, options);
  // A repeat carries the same request key: it answers with the operation the first one started.
  const response = await conn.invoke(conn.rpc.cancelJobs, request, retrySafe(options));
  const { dryRun } = request;
  const changed = response.cancelledCount + response.cancelRequestedCount;
  return {
    cancelled: response.cancelledCount,
    cancelRequested: response.cancelRequestedCount,
    ...bulkResult(changed, response, dryRun),
  };
}

export async function updateJobCall(
  conn: Connection,
  id: string,
  changes: JobChanges,
  options: CallOptions,
): Promise<Job> {
  const call = changes.delayMs === undefined ? retrySafe(options) : once(options);
  const response = await conn.invoke(
    conn.rpc.updateJob,
    { jobId: id, changes: changesToProto(changes) },
    call,
  );
  if (response.job === undefined) throw new SeppError(status.INTERNAL, 'the server sent no job');
  return new Job(response.job);
}

export async function updateJobsCall(
  conn: Connection,
  filter: JobFilter,
  changes: JobChanges,
  options: BulkOptions,
): Promise<BulkResult> {
  const dryRun = options.dryRun === true;
  const response = await conn.invoke(
    conn.rpc.updateJobs,
    { ...bulkRequest(filter, options), changes: changesToProto(changes) },
    retrySafe(options),
  );
  return bulkResult(response.updatedCount, response, dryRun);
}

export async function purgeQueueCall(
  conn: Connection,
  queue: string,
  options: CallOptions & RequestKeyOption & { background?: boolean },
): Promise<BulkResult> {
  // A repeat carries the same request key: it answers with the purge the first one started.
  const request = { queue, background: options.background === true, requestKey: requestKeyOf(options) };
  const response = await conn.invoke(conn.rpc.purgeQueue, request, retrySafe(options));
  return changeResult(response.deletedCount, response.operation);
}

export async function listAuditCall(
  conn: Connection,
  query: AuditQuery,
): Promise<{ entries: AuditEntry[]; nextPageToken: string | null }> {
  const response = await conn.invoke(
    conn.rpc.listAuditEntries,
    {
      actor: query.actor ?? '',
      action: query.action ?? '',
      target: query.target ?? '',
      pageSize: pageSizeArgument(query.pageSize),
      pageToken: query.pageToken ?? '',
    },
    retrySafe(query),
  );
  return {
    entries: response.entries.map((e) => ({
      id: e.id,
      at: new Date(e.atMs),
      actor: e.actor,
      action: e.action,
      target: e.target,
      details: parseDetails(e.detailsJson),
    })),
    nextPageToken: response.nextPageToken === '' ? null : response.nextPageToken,
  };
}

function parseDetails(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
