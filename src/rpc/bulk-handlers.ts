/**
 * The RPCs of bulk operations (proto/sepp/v1/bulk.proto): CancelJobs,
 * UpdateJobs, RequeueJobs, DeleteJobs, PurgeQueue and `all` of the dead
 * letters start one (or, with `dry_run`, count what it would match), and
 * GetBulkOperation, ListBulkOperations and CancelBulkOperation follow it.
 * Without `background` a call answers when its operation has ended; with it,
 * as soon as it has begun. Each operation carries its audit entry into the
 * engine, which writes it with the first slice.
 */

import type { JobFilter as ProtoJobFilter } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import type { BulkOperation } from '../../clients/typescript/src/gen/sepp/v1/bulk_operation.js';
import { BulkOperationState } from '../../clients/typescript/src/gen/sepp/v1/bulk_operation.js';
import { DeadReason } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { AuditInput } from '../engine/admin-types.ts';
import { requestKeyField } from '../engine/control/index.ts';
import type {
  BulkAction,
  BulkOperationInfo,
  JobChanges,
  JobFilter,
  MatchCount,
} from '../engine/control-types.ts';
import type { Engine } from '../engine/engine.ts';
import { SeppError } from '../engine/errors.ts';
import type { DeadLetterSelection } from '../engine/types.ts';
import { rpcAudit } from './audit-input.ts';
import { changesFromProto } from './control-handlers.ts';
import { deadReasonFromProto, jobStateFromProto } from './convert.ts';
import { bulkOperationVisible } from './queue-scope-rules.ts';
import type { RpcContext } from './rpc-context.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireJobId, requireString } from './validate-fields.ts';

type BulkHandlers = Pick<
  QueueServiceServer,
  | 'cancelJobs'
  | 'updateJobs'
  | 'requeueJobs'
  | 'deleteJobs'
  | 'purgeQueue'
  | 'requeueDeadLetters'
  | 'deleteDeadLetters'
  | 'getBulkOperation'
  | 'listBulkOperations'
  | 'cancelBulkOperation'
>;

const stateToProto: Record<BulkOperationInfo['state'], BulkOperationState> = {
  running: BulkOperationState.RUNNING,
  done: BulkOperationState.DONE,
  cancelled: BulkOperationState.CANCELLED,
  failed: BulkOperationState.FAILED,
};

export function bulkOperationToProto(info: BulkOperationInfo): BulkOperation {
  return {
    id: info.id,
    action: info.action,
    state: stateToProto[info.state],
    detailsJson: JSON.stringify(info.details),
    matchedCount: info.matched,
    matchedAtLeast: !info.matchedExact,
    changedCount: info.changed,
    cancelRequestedCount: info.cancelRequested,
    examinedCount: info.examined,
    slices: info.slices,
    startedAtMs: info.startedAtMs,
    finishedAtMs: info.finishedAtMs ?? 0,
    error: info.error ?? '',
    actor: info.actor ?? '',
  };
}

export function createBulkHandlers(ctx: RpcContext, unary: Unary): BulkHandlers {
  const { engine } = ctx;

  /** A dry run's count, or the operation (waited for unless `background`). */
  async function perform(
    action: BulkAction,
    filter: JobFilter,
    changes: JobChanges,
    options: { dryRun: boolean; background: boolean; requestKey: string },
    audit: () => AuditInput,
  ): Promise<{ count: MatchCount | undefined; info: BulkOperationInfo | undefined }> {
    // Checked even where it is ignored (a dry run): a bad key is refused the same at every call.
    const key = requestKeyField(options.requestKey, 'request_key');
    if (options.dryRun) return { count: await engine.countBulk(action, filter, changes), info: undefined };
    const request = { action, filter, changes, audit: audit(), ...key };
    return { count: undefined, info: await runOrStart(engine, request, options.background) };
  }

  const counted = (count: MatchCount | undefined) => ({
    matchedCount: count?.matched ?? 0,
    matchedAtLeast: count === undefined ? false : !count.exact,
  });
  const operation = (info: BulkOperationInfo | undefined) =>
    info === undefined ? {} : { operation: bulkOperationToProto(info) };
  const changedBy = (info: BulkOperationInfo | undefined) =>
    info === undefined || info.state === 'running' ? 0 : info.changed;

  return {
    cancelJobs: unary('CancelJobs', 'admin', async (req, call, caller, observation) => {
      const filter = filterFromProto(req.filter);
      observation.annotate({ queue: filter.queue ?? '*' });
      const { count, info } = await perform('cancel', filter, {}, req, () =>
        rpcAudit(ctx, caller, call.metadata, 'jobs.cancel', targetOf(filter)),
      );
      const requested = info === undefined || info.state === 'running' ? 0 : info.cancelRequested;
      return {
        cancelledCount: changedBy(info) - requested,
        cancelRequestedCount: requested,
        ...counted(count),
        ...operation(info),
      };
    }),

    updateJobs: unary('UpdateJobs', 'admin', async (req, call, caller, observation) => {
      const filter = filterFromProto(req.filter);
      observation.annotate({ queue: filter.queue ?? '*' });
      const { count, info } = await perform('update', filter, changesFromProto(req.changes), req, () =>
        rpcAudit(ctx, caller, call.metadata, 'jobs.update', targetOf(filter)),
      );
      return { updatedCount: changedBy(info), ...counted(count), ...operation(info) };
    }),

    requeueJobs: unary('RequeueJobs', 'admin', async (req, call, caller, observation) => {
      const filter = filterFromProto(req.filter);
      observation.annotate({ queue: filter.queue ?? '*' });
      const { count, info } = await perform('requeue', filter, {}, req, () =>
        rpcAudit(ctx, caller, call.metadata, 'jobs.requeue', targetOf(filter)),
      );
      return { requeuedCount: changedBy(info), ...counted(count), ...operation(info) };
    }),

    deleteJobs: unary('DeleteJobs', 'admin', async (req, call, caller, observation) => {
      const filter = filterFromProto(req.filter);
      observation.annotate({ queue: filter.queue ?? '*' });
      const { count, info } = await perform('delete', filter, {}, req, () =>
        rpcAudit(ctx, caller, call.metadata, 'jobs.delete', targetOf(filter)),
      );
      return { deletedCount: changedBy(info), ...counted(count), ...operation(info) };
    }),

    purgeQueue: unary('PurgeQueue', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const queue = requireString(req.queue, 'queue');
      const audit = rpcAudit(ctx, caller, call.metadata, 'queue.purge', `queue:${queue}`);
      const filter: JobFilter = { queue, states: ['scheduled', 'ready'] };
      const info = await runOrStart(
        engine,
        { action: 'delete', filter, audit, ...requestKeyField(req.requestKey, 'request_key') },
        req.background,
      );
      return { deletedCount: changedBy(info), operation: bulkOperationToProto(info) };
    }),

    requeueDeadLetters: unary('RequeueDeadLetters', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const selection = deadLetterSelection(req);
      const action = 'all' in selection ? 'dead_letters.requeue_all' : 'dead_letters.requeue';
      const audit = rpcAudit(ctx, caller, call.metadata, action, `queue:${selection.queue}`);
      const info = await changeDeadLetters(engine, selection, 'requeue', audit, req);
      return typeof info === 'number'
        ? { requeuedCount: info }
        : { requeuedCount: changedBy(info), ...operation(info) };
    }),

    deleteDeadLetters: unary('DeleteDeadLetters', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const selection = deadLetterSelection(req);
      const action = 'all' in selection ? 'dead_letters.delete_all' : 'dead_letters.delete';
      const audit = rpcAudit(ctx, caller, call.metadata, action, `queue:${selection.queue}`);
      const info = await changeDeadLetters(engine, selection, 'delete', audit, req);
      return typeof info === 'number'
        ? { deletedCount: info }
        : { deletedCount: changedBy(info), ...operation(info) };
    }),

    getBulkOperation: unary('GetBulkOperation', 'admin', (req) => {
      return { operation: bulkOperationToProto(engine.getBulkOperation(requireString(req.id, 'id'))) };
    }),

    listBulkOperations: unary('ListBulkOperations', 'admin', (_req, _call, caller) => {
      const all = engine.listBulkOperations();
      // A key scoped to queues sees the operations whose filter names one of them.
      const shown =
        caller.scope === null ? all : all.filter((op) => bulkOperationVisible(engine, op.id, caller));
      return { operations: shown.map(bulkOperationToProto) };
    }),

    cancelBulkOperation: unary('CancelBulkOperation', 'admin', async (req) => {
      return {
        operation: bulkOperationToProto(await engine.cancelBulkOperation(requireString(req.id, 'id'))),
      };
    }),
  };
}

/** Runs an operation to its end, or starts it and answers at once (`background`). */
function runOrStart(
  engine: Engine,
  request: Parameters<Engine['runBulk']>[0],
  background: boolean,
): Promise<BulkOperationInfo> {
  return background ? engine.startBulk(request) : engine.runBulk(request);
}

/** Chosen dead letters (a count), or all of them as a bulk operation. */
async function changeDeadLetters(
  engine: Engine,
  selection: DeadLetterSelection,
  action: 'requeue' | 'delete',
  audit: AuditInput,
  req: { background: boolean; requestKey: string },
): Promise<number | BulkOperationInfo> {
  const key = requestKeyField(req.requestKey, 'request_key');
  if ('jobIds' in selection || !req.background) {
    return action === 'requeue'
      ? engine.requeueDeadLetters(selection, audit, key.requestKey)
      : engine.deleteDeadLetters(selection, audit, key.requestKey);
  }
  const filter = await engine.deadLetterFilter(selection);
  if (filter === null) return 0;
  return engine.startBulk({ action, filter, audit, ...key });
}

function targetOf(filter: JobFilter): string {
  return `queue:${filter.queue ?? '*'}`;
}

function deadLetterSelection(req: {
  queue: string;
  jobIds: string[];
  all: boolean;
  reason: DeadReason;
  errorText: string;
}): DeadLetterSelection {
  const queue = requireString(req.queue, 'queue');
  if (req.all && req.jobIds.length > 0)
    throw new SeppError('invalid_argument', 'give job_ids or all, not both');
  if (req.all) {
    const reason = optionalDeadReason(req.reason, 'reason');
    return {
      queue,
      all: true,
      ...(reason === undefined ? {} : { reason }),
      ...(req.errorText === '' ? {} : { errorText: req.errorText }),
    };
  }
  if (req.reason !== DeadReason.UNSPECIFIED || req.errorText !== '') {
    throw new SeppError(
      'invalid_argument',
      'reason and error_text narrow `all`; chosen job_ids are taken as they are',
    );
  }
  if (req.jobIds.length === 0)
    throw new SeppError('invalid_argument', 'job_ids: name the dead letters, or set all');
  return { queue, jobIds: req.jobIds.map((id, i) => requireJobId(id, `job_ids[${i}]`)) };
}

function optionalDeadReason(reason: DeadReason, field: string) {
  if (reason === DeadReason.UNSPECIFIED) return undefined;
  const name = deadReasonFromProto(reason);
  if (name === undefined)
    throw new SeppError('invalid_argument', `${field}: ${reason} is not a known dead reason`);
  return name;
}

export function filterFromProto(filter: ProtoJobFilter | undefined): JobFilter {
  if (filter === undefined)
    throw new SeppError('invalid_argument', 'filter: required (a queue, or all_queues)');
  if (filter.allQueues && filter.queue !== '') {
    throw new SeppError('invalid_argument', 'filter: give a queue or all_queues, not both');
  }
  const queue = filter.allQueues ? undefined : requireString(filter.queue, 'filter.queue');
  const states = filter.states.map((state, i) => {
    const name = jobStateFromProto(state);
    if (name === undefined)
      throw new SeppError('invalid_argument', `filter.states[${i}]: ${state} is not a job state`);
    return name;
  });
  if (filter.metadataKey === '' && filter.metadataValue !== '') {
    throw new SeppError('invalid_argument', 'filter.metadata_value: give metadata_key too');
  }
  const deadReason = optionalDeadReason(filter.deadReason, 'filter.dead_reason');
  const { type, typePrefix, group, errorText, metadataKey, metadataValue } = filter;
  return {
    states,
    ...(queue === undefined ? {} : { queue }),
    ...(type === '' ? {} : { type }),
    ...(typePrefix === '' ? {} : { typePrefix }),
    ...(group === '' ? {} : { group }),
    ...(errorText === '' ? {} : { errorText }),
    ...(metadataKey === '' ? {} : { metadata: { key: metadataKey, value: metadataValue } }),
    ...(filter.enqueuedFromMs === 0 ? {} : { enqueuedFromMs: filter.enqueuedFromMs }),
    ...(filter.enqueuedBeforeMs === 0 ? {} : { enqueuedBeforeMs: filter.enqueuedBeforeMs }),
    ...(deadReason === undefined ? {} : { deadReason }),
    ...(filter.retriesOnly ? { retriesOnly: true } : {}),
    ...(filter.errorGroup === undefined
      ? {}
      : { errorGroup: { errorClass: filter.errorGroup.errorClass, firstLine: filter.errorGroup.firstLine } }),
  };
}
