/**
 * Schedules as operators see them: each with its next run and last run's
 * outcome, one with its definition and next run times, and the operator's
 * actions (pause, resume, trigger), each audited in the engine's transaction.
 * Creating and changing schedules is for the config and the gRPC API.
 */

import type { Context } from 'hono';
import { roleFor } from '../../config/index.ts';
import type { ScheduleInfo } from '../../engine/schedules/types.ts';
import type { ScheduleView } from '../api-types.ts';
import { viewPayload } from '../payload-view.ts';
import { pathParam } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';

const nameParam = { name: 'schedule name' } as const;
/** Next run times on the schedule page. */
const detailNextRuns = 10;

/** A schedule for the API: the payload as a view (JSON, text or hex) instead of bytes. */
export function scheduleView(schedule: ScheduleInfo): ScheduleView {
  const { payload, ...template } = schedule.template;
  return {
    ...schedule,
    template: {
      ...template,
      payload: payload === null ? null : viewPayload(payload, template.contentType),
    },
  };
}

export function scheduleRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  const name = (c: Context) => pathParam(c, 'name');
  const target = (schedule: string) => `schedule:${schedule}`;

  return [
    {
      method: 'get',
      path: '/api/v1/schedules',
      access: 'viewer',
      tag: 'schedules',
      summary: 'Every schedule with its next run and the outcome of its last run',
      response: {
        type: 'object',
        properties: { schedules: { type: 'array', items: ref('Schedule') } },
        required: ['schedules'],
      },
      handle: async (c) => c.json({ schedules: (await engine.listSchedules(1)).map(scheduleView) }),
    },
    {
      method: 'get',
      path: '/api/v1/schedules/{name}',
      access: 'viewer',
      tag: 'schedules',
      summary: 'One schedule with its job (payload shown as JSON, text or hex) and its next 10 run times',
      pathParams: nameParam,
      response: ref('Schedule'),
      handle: async (c) => c.json(scheduleView(await engine.getSchedule(name(c), detailNextRuns))),
    },
    {
      method: 'get',
      path: '/api/v1/schedules/{name}/runs',
      access: 'viewer',
      tag: 'schedules',
      summary: "A schedule's latest runs, newest first: when, which tick, the outcome and the job it made",
      description:
        'The last 20 runs are kept per schedule, in the store (written with the tick). A pass that caught up several ticks is one run.',
      pathParams: nameParam,
      response: {
        type: 'object',
        properties: {
          runs: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                runAtMs: { type: 'integer', description: 'when it ran, ms since the Unix epoch' },
                tickMs: { type: ['integer', 'null'], description: 'the tick it handled; null for a trigger' },
                outcome: {
                  type: 'string',
                  enum: [
                    'enqueued',
                    'deduplicated',
                    'triggered',
                    'skipped_overlap',
                    'skipped_misfire',
                    'rejected',
                  ],
                },
                detail: { type: ['string', 'null'] },
                jobId: { type: ['string', 'null'], description: 'the job it made; null: none' },
              },
              required: ['runAtMs', 'tickMs', 'outcome', 'detail', 'jobId'],
            },
          },
        },
        required: ['runs'],
      },
      handle: async (c) => c.json({ runs: await engine.scheduleRuns(name(c)) }),
    },
    {
      method: 'post',
      path: '/api/v1/schedules/{name}/pause',
      access: roleFor('schedule.pause'),
      tag: 'schedules',
      summary: 'Pause a schedule: no ticks until it is resumed',
      pathParams: nameParam,
      response: ref('Schedule'),
      audits: 'schedule.pause',
      async handle(c, request) {
        const schedule = name(c);
        return c.json(
          scheduleView(
            await engine.pauseSchedule(schedule, request.audit('schedule.pause', target(schedule))),
          ),
        );
      },
    },
    {
      method: 'post',
      path: '/api/v1/schedules/{name}/resume',
      access: roleFor('schedule.resume'),
      tag: 'schedules',
      summary: 'Resume a paused schedule; ticks it missed follow its misfire policy',
      pathParams: nameParam,
      response: ref('Schedule'),
      audits: 'schedule.resume',
      async handle(c, request) {
        const schedule = name(c);
        return c.json(
          scheduleView(
            await engine.resumeSchedule(schedule, request.audit('schedule.resume', target(schedule))),
          ),
        );
      },
    },
    {
      method: 'post',
      path: '/api/v1/schedules/{name}/trigger',
      access: roleFor('schedule.trigger'),
      tag: 'schedules',
      summary: "Enqueue the schedule's job now, outside its ticks",
      pathParams: nameParam,
      response: {
        type: 'object',
        properties: { jobId: { type: 'string', format: 'uuid' }, deduplicated: { type: 'boolean' } },
        required: ['jobId', 'deduplicated'],
      },
      audits: 'schedule.trigger',
      async handle(c, request) {
        const schedule = name(c);
        const accepted = await engine.triggerSchedule(
          schedule,
          request.audit('schedule.trigger', target(schedule)),
        );
        return c.json({ jobId: accepted.jobId, deduplicated: accepted.deduplicated });
      },
    },
  ];
}
