/**
 * The admin RPCs of job control and the audit log: CancelJob, UpdateJob and
 * ListAuditEntries (the bulk ones are in bulk-handlers.ts). Each change carries
 * its audit entry (audit-input.ts) into the engine, which writes it in the
 * same transaction.
 */

import {
  AuditEntry,
  type JobChanges as ProtoJobChanges,
} from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import type { JobChanges } from '../engine/control-types.ts';
import { fitCursorPage, listAnswerBytes } from './answer-pages.ts';
import { rpcAudit } from './audit-input.ts';
import { jobStateToProto, jobToProto } from './convert.ts';
import type { RpcContext } from './rpc-context.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireJobId } from './validate-fields.ts';

type ControlHandlers = Pick<QueueServiceServer, 'cancelJob' | 'updateJob' | 'listAuditEntries'>;

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

    updateJob: unary('UpdateJob', 'admin', async (req, call, caller, observation) => {
      observation.annotate({ jobId: req.jobId });
      const jobId = requireJobId(req.jobId);
      const audit = rpcAudit(ctx, caller, call.metadata, 'job.update', `job:${jobId}`);
      const job = await engine.updateJob(jobId, changesFromProto(req.changes), audit);
      return { job: jobToProto(job, true) };
    }),

    listAuditEntries: unary('ListAuditEntries', 'admin', async (req) => {
      // Bounded in bytes too: an entry's details (a bulk operation's filter, a reload's changes) may be long.
      const page = await fitCursorPage(
        (pageSize) =>
          engine.listAudit({
            ...(req.actor === '' ? {} : { actor: req.actor }),
            ...(req.action === '' ? {} : { action: req.action }),
            ...(req.target === '' ? {} : { target: req.target }),
            ...(req.pageToken === '' ? {} : { cursor: req.pageToken }),
            ...(pageSize === undefined ? {} : { pageSize }),
          }),
        req.pageSize === 0 ? undefined : req.pageSize,
        (e): AuditEntry => ({
          id: e.id,
          atMs: e.atMs,
          actor: e.actor,
          action: e.action,
          target: e.target,
          detailsJson: JSON.stringify(e.details),
        }),
        (entry) => AuditEntry.encode(entry).finish().length,
        listAnswerBytes(ctx.facts.maxMessageBytes),
      );
      return { entries: page.items, nextPageToken: page.nextCursor ?? '' };
    }),
  };
}

export function changesFromProto(changes: ProtoJobChanges | undefined): JobChanges {
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
