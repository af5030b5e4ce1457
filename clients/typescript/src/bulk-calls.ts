/**
 * Bulk operations (bulk.proto): requeue or delete every job a filter matches,
 * start any bulk call in the background, and follow or stop an operation.
 * CancelJobs and UpdateJobs (admin-calls.ts) take the same filter.
 */
import { randomBytes } from 'node:crypto';
import { type Connection, retrySafe } from './connection.ts';
import { timeMs } from './convert.ts';
import type { JobFilter as ProtoJobFilter } from './gen/sepp/v1/admin.js';
import {
  BulkOperationState,
  type BulkOperation as ProtoBulkOperation,
} from './gen/sepp/v1/bulk_operation.js';
import { deadReasonToProto, jobStateToProto } from './jobs.ts';
import type {
  BulkAction,
  BulkOperation,
  BulkOptions,
  BulkResult,
  CallOptions,
  JobFilter,
  RequestKeyOption,
} from './types.ts';

const states: Record<BulkOperationState, BulkOperation['state']> = {
  [BulkOperationState.UNSPECIFIED]: 'failed',
  [BulkOperationState.RUNNING]: 'running',
  [BulkOperationState.DONE]: 'done',
  [BulkOperationState.CANCELLED]: 'cancelled',
  [BulkOperationState.FAILED]: 'failed',
  [BulkOperationState.UNRECOGNIZED]: 'failed',
};

export function filterToProto(filter: JobFilter): ProtoJobFilter {
  return {
    queue: filter.queue ?? '',
    allQueues: filter.allQueues === true,
    type: filter.type ?? '',
    typePrefix: filter.typePrefix ?? '',
    states: (filter.states ?? []).map((state) => jobStateToProto[state]),
    group: filter.group ?? '',
    errorText: filter.errorText ?? '',
    metadataKey: filter.metadata?.key ?? '',
    metadataValue: filter.metadata?.value ?? '',
    enqueuedFromMs: filter.enqueuedFrom === undefined ? 0 : timeMs(filter.enqueuedFrom, 'enqueuedFrom'),
    enqueuedBeforeMs:
      filter.enqueuedBefore === undefined ? 0 : timeMs(filter.enqueuedBefore, 'enqueuedBefore'),
    deadReason: filter.deadReason === undefined ? 0 : deadReasonToProto[filter.deadReason],
    retriesOnly: filter.retriesOnly === true,
    errorGroup:
      filter.errorGroup === undefined
        ? undefined
        : { errorClass: filter.errorGroup.errorClass, firstLine: filter.errorGroup.firstLine },
  };
}

export function bulkOperationFromProto(op: ProtoBulkOperation): BulkOperation {
  let details: Record<string, unknown> = {};
  try {
    details = JSON.parse(op.detailsJson) as Record<string, unknown>;
  } catch {
    // A server that sends no details (or not JSON) leaves them empty.
  }
  return {
    id: op.id,
    action: op.action as BulkAction,
    state: states[op.state],
    details,
    matched: op.matchedCount,
    matchedAtLeast: op.matchedAtLeast,
    changed: op.changedCount,
    cancelRequested: op.cancelRequestedCount,
    examined: op.examinedCount,
    slices: op.slices,
    startedAt: new Date(op.startedAtMs),
    finishedAt: op.finishedAtMs === 0 ? null : new Date(op.finishedAtMs),
    error: op.error === '' ? null : op.error,
    actor: op.actor,
  };
}

/** A bulk call's answer as the SDK gives it. */
export function bulkResult(
  changed: number,
  response: { matchedCount: number; matchedAtLeast: boolean; operation?: ProtoBulkOperation | undefined },
  dryRun: boolean,
): BulkResult {
  const operation = response.operation === undefined ? null : bulkOperationFromProto(response.operation);
  return {
    changed,
    matched: dryRun ? response.matchedCount : (operation?.matched ?? changed),
    matchedAtLeast: dryRun ? response.matchedAtLeast : (operation?.matchedAtLeast ?? false),
    operation,
  };
}

/**
 * The request key of a call that can start a bulk operation: the caller's, or
 * 16 random bytes (base64url). Made once per call, so the call's retries send
 * the same and the server answers them with the operation the first started.
 */
export function requestKeyOf(options: RequestKeyOption): string {
  return options.requestKey ?? randomBytes(16).toString('base64url');
}

/**
 * A bulk call's filter and flags, with its request key (none for a dry run: it starts nothing).
 * Both are retried (retrySafe): a dry run repeats harmlessly, and a change's repeat carries
 * the same key, so it answers with the operation the first one started.
 */
export function bulkRequest(filter: JobFilter, options: BulkOptions) {
  const dryRun = options.dryRun === true;
  return {
    filter: filterToProto(filter),
    dryRun,
    background: options.background === true,
    requestKey: dryRun ? '' : requestKeyOf(options),
  };
}

export async function requeueJobsCall(
  conn: Connection,
  filter: JobFilter,
  options: BulkOptions,
): Promise<BulkResult> {
  const request = bulkRequest(filter, options);
  const response = await conn.invoke(conn.rpc.requeueJobs, request, retrySafe(options));
  return bulkResult(response.requeuedCount, response, request.dryRun);
}

export async function deleteJobsCall(
  conn: Connection,
  filter: JobFilter,
  options: BulkOptions,
): Promise<BulkResult> {
  const request = bulkRequest(filter, options);
  const response = await conn.invoke(conn.rpc.deleteJobs, request, retrySafe(options));
  return bulkResult(response.deletedCount, response, request.dryRun);
}

export async function getBulkOperationCall(
  conn: Connection,
  id: string,
  options: CallOptions,
): Promise<BulkOperation> {
  const response = await conn.invoke(conn.rpc.getBulkOperation, { id }, retrySafe(options));
  return bulkOperationFromProto(response.operation ?? missing());
}

export async function listBulkOperationsCall(
  conn: Connection,
  options: CallOptions,
): Promise<BulkOperation[]> {
  const response = await conn.invoke(conn.rpc.listBulkOperations, {}, retrySafe(options));
  return response.operations.map(bulkOperationFromProto);
}

export async function stopBulkOperationCall(
  conn: Connection,
  id: string,
  options: CallOptions,
): Promise<BulkOperation> {
  const response = await conn.invoke(conn.rpc.cancelBulkOperation, { id }, retrySafe(options));
  return bulkOperationFromProto(response.operation ?? missing());
}

function missing(): never {
  throw new Error('the server sent no operation');
}
