/**
 * The paged listings of what a server holds — ListQueues, ListWorkers and
 * ListDeadLetters (ListSchedules is with the schedules, ListAuditEntries with
 * job control): each page bounded by count and, through answer-pages.ts, by
 * the bytes the caller can take; a key scoped to queues sees its queues only.
 */

import { DeadReason, Job } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import { QueueInfo as ProtoQueueInfo } from '../../clients/typescript/src/gen/sepp/v1/queue.js';
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { WorkerInfo } from '../../clients/typescript/src/gen/sepp/v1/workers.js';
import { SeppError } from '../engine/errors.ts';
import { fitNamePage, pickKeyedPage } from '../engine/name-pages.ts';
import { fitCursorPage, listAnswerBytes } from './answer-pages.ts';
import { deadReasonFromProto, jobToProto, queueInfoToProto, workerInfoToProto } from './convert.ts';
import type { RpcContext } from './rpc-context.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireString } from './validate-fields.ts';

type ListHandlers = Pick<
  QueueServiceServer,
  'listQueues' | 'listWorkers' | 'listDeadLetters' | 'listTopErrors'
>;

export function createListHandlers(ctx: RpcContext, unary: Unary): ListHandlers {
  const { engine } = ctx;
  return {
    listQueues: unary('ListQueues', 'read', async (req, _call, caller) => {
      const page = await engine.queuePage({ pageSize: req.pageSize, cursor: req.pageToken });
      // A scoped key sees its queues only: a page may hold fewer than asked, or none, with a next page.
      const shown =
        caller.scope === null ? page.items : page.items.filter((q) => caller.scope?.allows(q.name));
      // Bounded in bytes too: a queue's settings hold lists (allowed_types) that may be long.
      const fitted = fitNamePage(
        'queues',
        shown.map(queueInfoToProto),
        page.nextCursor,
        (queue) => queue.name,
        (queue) => ProtoQueueInfo.encode(queue).finish().length + 8,
        listAnswerBytes(ctx.facts.maxMessageBytes),
      );
      return { queues: fitted.items, nextPageToken: fitted.nextCursor ?? '' };
    }),

    listWorkers: unary('ListWorkers', 'read', async (req, _call, caller) => {
      const scope = caller.scope;
      const all = await engine.listWorkers();
      // A scoped key sees the workers of its queues, with only those queues, and no server-wide count.
      const workers =
        scope === null
          ? all
          : all
              .map((worker) => ({ ...worker, queues: worker.queues.filter((q) => scope.allows(q)) }))
              .filter((worker) => worker.queues.length > 0);
      const page = pickKeyedPage(
        'workers',
        workers.map(workerInfoToProto),
        workerKey,
        { pageSize: req.pageSize, cursor: req.pageToken },
        engine.limits,
      );
      // Bounded in bytes too: a worker's queue list may be long.
      const fitted = fitNamePage(
        'workers',
        page.items,
        page.nextCursor,
        workerKey,
        (worker) => WorkerInfo.encode(worker).finish().length + 8,
        listAnswerBytes(ctx.facts.maxMessageBytes),
      );
      return {
        workers: fitted.items,
        waitingReserves: scope === null ? engine.waitingReserves : 0,
        nextPageToken: fitted.nextCursor ?? '',
      };
    }),

    listDeadLetters: unary('ListDeadLetters', 'read', async (req, _call, _caller, observation) => {
      observation.annotate({ queue: req.queue });
      const reason = req.reason === DeadReason.UNSPECIFIED ? undefined : deadReasonFromProto(req.reason);
      if (req.reason !== DeadReason.UNSPECIFIED && reason === undefined) {
        throw new SeppError('invalid_argument', `reason: ${req.reason} is not a known dead reason`);
      }
      const queue = requireString(req.queue, 'queue');
      // Bounded in bytes too: a dead letter's metadata and error may be large.
      const page = await fitCursorPage(
        (pageSize) =>
          engine.listDeadLetters({
            queue,
            ...(reason === undefined ? {} : { reason }),
            ...(req.pageToken === '' ? {} : { cursor: req.pageToken }),
            ...(pageSize === undefined ? {} : { pageSize }),
          }),
        req.pageSize === 0 ? undefined : req.pageSize,
        (job) => jobToProto(job, false),
        (job) => Job.encode(job).finish().length,
        listAnswerBytes(ctx.facts.maxMessageBytes),
      );
      return { jobs: page.items, nextPageToken: page.nextCursor ?? '' };
    }),

    listTopErrors: unary('ListTopErrors', 'read', async (req, _call, _caller, observation) => {
      observation.annotate({ queue: req.queue });
      const top = await engine.topErrors({
        queue: requireString(req.queue, 'queue'),
        ...(req.limit === 0 ? {} : { limit: req.limit }),
      });
      return {
        groups: top.groups.map((g) => ({
          key: { errorClass: g.errorClass, firstLine: g.firstLine },
          jobs: g.jobs,
          firstFailedAtMs: g.firstFailedAtMs,
          lastFailedAtMs: g.lastFailedAtMs,
        })),
        groupCount: top.groupCount,
        scanned: top.scanned,
        deadTotal: top.deadTotal,
        complete: top.complete,
      };
    }),
  };
}

/** A worker's place in ListWorkers' pages: its id, then transport and address (which make it unique). */
function workerKey(worker: WorkerInfo): string {
  return `${worker.workerId}\u0000${worker.transport}\u0000${worker.address}`;
}
