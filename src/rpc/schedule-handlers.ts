/**
 * The schedule RPCs of QueueService (schedule.proto): reads for every role,
 * changes for admin keys, each change audited in the engine's transaction
 * (actor `key:NAME`). Semantics live in the engine (src/engine/schedules).
 */
import type { QueueServiceServer } from '../../clients/typescript/src/gen/sepp/v1/queue_service.js';
import { Schedule } from '../../clients/typescript/src/gen/sepp/v1/schedule.js';
import { fitNamePage } from '../engine/name-pages.ts';
import { listAnswerBytes } from './answer-pages.ts';
import { rpcAudit } from './audit-input.ts';
import type { RpcContext } from './rpc-context.ts';
import { scheduleRunToProto, scheduleSpecFromProto, scheduleToProto } from './schedule-convert.ts';
import type { Unary } from './unary-wrapper.ts';
import { requireName } from './validate-fields.ts';

type ScheduleHandlers = Pick<
  QueueServiceServer,
  | 'createSchedule'
  | 'updateSchedule'
  | 'getSchedule'
  | 'listSchedules'
  | 'pauseSchedule'
  | 'resumeSchedule'
  | 'deleteSchedule'
  | 'triggerSchedule'
>;

export function createScheduleHandlers(ctx: RpcContext, unary: Unary): ScheduleHandlers {
  const { engine } = ctx;
  const target = (name: string) => `schedule:${name}`;
  const nameOf = (name: string) => requireName(name, 'name', engine.limits.maxNameLength);
  return {
    createSchedule: unary('CreateSchedule', 'admin', async (req, call, caller) => {
      const spec = scheduleSpecFromProto(req.schedule);
      nameOf(spec.name);
      const audit = rpcAudit(ctx, caller, call.metadata, 'schedule.create', target(spec.name));
      const { schedule } = await engine.putSchedule(spec, 'create', audit);
      return { schedule: scheduleToProto(schedule) };
    }),

    updateSchedule: unary('UpdateSchedule', 'admin', async (req, call, caller) => {
      const spec = scheduleSpecFromProto(req.schedule);
      nameOf(spec.name);
      const audit = rpcAudit(ctx, caller, call.metadata, 'schedule.update', target(spec.name));
      const { schedule, created } = await engine.putSchedule(
        spec,
        req.allowMissing ? 'upsert' : 'update',
        audit,
      );
      return { schedule: scheduleToProto(schedule), created };
    }),

    getSchedule: unary('GetSchedule', 'read', async (req) => {
      const name = nameOf(req.name);
      const schedule = scheduleToProto(await engine.getSchedule(name, req.nextRuns || 10));
      return { schedule, runs: (await engine.scheduleRuns(name)).map(scheduleRunToProto) };
    }),

    listSchedules: unary('ListSchedules', 'read', async (req, _call, caller) => {
      const page = await engine.schedulePage(
        { pageSize: req.pageSize, cursor: req.pageToken },
        req.nextRuns || 1,
      );
      // A key scoped to queues sees the schedules that enqueue into them (a page may hold fewer).
      const shown =
        caller.scope === null ? page.items : page.items.filter((s) => caller.scope?.allows(s.template.queue));
      // Bounded in bytes too: a template's metadata may be large.
      const fitted = fitNamePage(
        'schedules',
        shown.map(scheduleToProto),
        page.nextCursor,
        (schedule) => schedule.spec?.name ?? '',
        (schedule) => Schedule.encode(schedule).finish().length + 8,
        listAnswerBytes(ctx.facts.maxMessageBytes),
      );
      return { schedules: fitted.items, nextPageToken: fitted.nextCursor ?? '' };
    }),

    pauseSchedule: unary('PauseSchedule', 'admin', async (req, call, caller) => {
      const name = nameOf(req.name);
      const audit = rpcAudit(ctx, caller, call.metadata, 'schedule.pause', target(name));
      return { schedule: scheduleToProto(await engine.pauseSchedule(name, audit)) };
    }),

    resumeSchedule: unary('ResumeSchedule', 'admin', async (req, call, caller) => {
      const name = nameOf(req.name);
      const audit = rpcAudit(ctx, caller, call.metadata, 'schedule.resume', target(name));
      return { schedule: scheduleToProto(await engine.resumeSchedule(name, audit)) };
    }),

    deleteSchedule: unary('DeleteSchedule', 'admin', async (req, call, caller) => {
      const name = nameOf(req.name);
      await engine.deleteSchedule(
        name,
        rpcAudit(ctx, caller, call.metadata, 'schedule.delete', target(name)),
      );
      return {};
    }),

    triggerSchedule: unary('TriggerSchedule', 'admin', async (req, call, caller) => {
      const name = nameOf(req.name);
      const audit = rpcAudit(ctx, caller, call.metadata, 'schedule.trigger', target(name));
      const accepted = await engine.triggerSchedule(name, audit);
      return { jobId: accepted.jobId, deduplicated: accepted.deduplicated };
    }),
  };
}
