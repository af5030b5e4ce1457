/**
 * The admin RPCs of job control and the audit log: CancelJob, CancelJobs,
 * UpdateJob, UpdateJobs, PurgeQueue and ListAuditEntries. Each change carries
 * its audit entry (audit-input.ts) into the engine, which writes it in the
 * same transaction.
 */

import type {
  JobChanges as ProtoJobChanges,
  JobFilter as ProtoJobFilter,
} from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { JobChanges, JobFilter } from '../engine/control-types.ts';
import { SeppError } from '../engine/errors.ts';
import { rpcAudit } from './audit-input.ts';
import { jobStateFromProto, jobStateToProto, jobToProto } from './convert.ts';
import type { RpcContext } from './rpc-context.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireJobId, requireString } from './validate-fields.ts';

type ControlHandlers = Pick<
  QueueServiceServer,
  'cancelJob' | 'cancelJobs' | 'updateJob' | 'updateJobs' | 'purgeQueue' | 'listAuditEntries'
>;

export function createControlHandlers(ctx: RpcContext, unary: Unary): ControlHandlers {
  const { engine } = ctx;
  return {
    cancelJob: unary('CancelJob', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ jobId: req.jobId });
      const jobId = requireJobId(req.jobId);
      const result = await engine.cancel(
        jobId,
        rpcAudit(ctx, caller, call.metadata, 'job.cancel', `job:${jobId}`),
      );
      return { previousState: jobStateToProto(result.previousState), state: jobStateToProto(result.state) };
    }),

    cancelJobs: unary('CancelJobs', 'admin', async (req, call, caller, observation) => {
      const filter = filterFromProto(req.filter);
      observation.annotate({ queue: filter.queue });
      if (req.dryRun) {
        return {
          cancelledCount: 0,
          cancelRequestedCount: 0,
          matchedCount: await engine.countCancellable(filter),
        };
      }
      const audit = rpcAudit(ctx, caller, call.metadata, 'jobs.cancel', `queue:${filter.queue}`);
      const result = await engine.cancelJobs(filter, audit);
      return {
        cancelledCount: result.cancelled,
        cancelRequestedCount: result.cancelRequested,
        matchedCount: 0,
      };
    }),

    updateJob: unary('UpdateJob', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ jobId: req.jobId });
      const jobId = requireJobId(req.jobId);
      const audit = rpcAudit(ctx, caller, call.metadata, 'job.update', `job:${jobId}`);
      const job = await engine.updateJob(jobId, changesFromProto(req.changes), audit);
      return { job: jobToProto(job, true) };
    }),

    updateJobs: unary('UpdateJobs', 'admin', async (req, call, caller, observation) => {
      const filter = filterFromProto(req.filter);
      observation.annotate({ queue: filter.queue });
      const audit = rpcAudit(ctx, caller, call.metadata, 'jobs.update', `queue:${filter.queue}`);
      return { updatedCount: await engine.updateJobs(filter, changesFromProto(req.changes), audit) };
    }),

    purgeQueue: unary('PurgeQueue', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ queue: req.queue });
      const queue = requireString(req.queue, 'queue');
      const audit = rpcAudit(ctx, caller, call.metadata, 'queue.purge', `queue:${queue}`);
      return { deletedCount: (await engine.purgeQueue(queue, audit)).deleted };
    }),

    listAuditEntries: unary('ListAuditEntries', 'admin', async (req) => {
      const page = await engine.listAudit({
        ...(req.actor === '' ? {} : { actor: req.actor }),
        ...(req.action === '' ? {} : { action: req.action }),
        ...(req.target === '' ? {} : { target: req.target }),
        ...(req.pageToken === '' ? {} : { cursor: req.pageToken }),
        ...(req.pageSize === 0 ? {} : { pageSize: req.pageSize }),
      });
      return {
        entries: page.items.map((e) => ({
          id: e.id,
          atMs: e.atMs,
          actor: e.actor,
          action: e.action,
          target: e.target,
          detailsJson: JSON.stringify(e.details),
        })),
        nextPageToken: page.nextCursor ?? '',
      };
    }),
  };
}

function filterFromProto(filter: ProtoJobFilter | undefined): JobFilter {
  if (filter === undefined) throw new SeppError('invalid_argument', 'filter: required (at least its queue)');
  const states = filter.states.map((state, i) => {
    const name = jobStateFromProto(state);
    if (name === undefined)
      throw new SeppError('invalid_argument', `filter.states[${i}]: ${state} is not a job state`);
    return name;
  });
  return {
    queue: requireString(filter.queue, 'filter.queue'),
    ...(filter.type === '' ? {} : { type: filter.type }),
    ...(filter.group === '' ? {} : { group: filter.group }),
    states,
  };
}

function changesFromProto(changes: ProtoJobChanges | undefined): JobChanges {
  const result: JobChanges = {};
  if (changes?.priorityChange?.$case === 'priority') result.priority = changes.priorityChange.value;
  const schedule = changes?.scheduleChange;
  if (schedule?.$case === 'runAtMs') result.runAtMs = schedule.value;
  else if (schedule?.$case === 'delayMs') result.delayMs = schedule.value;
  else if (schedule?.$case === 'runNow' && schedule.value) result.runNow = true;
  // As on enqueue, an empty group is no group: "" takes the job out of its group.
  if (changes?.groupChange?.$case === 'group') result.group = changes.groupChange.value || null;
  return result;
}
