/**
 * Job control from the admin UI: change one waiting job (priority, run time,
 * run now, group), and cancel or change every job of a queue that a filter matches
 * (the jobs page's "Cancel all matching" and "Run all now"). Each change is
 * audited in the same transaction, as over gRPC.
 */

import type { Context } from 'hono';
import { roleFor } from '../../config/index.ts';
import {
  type CancellableState,
  cancellableStates,
  type JobChanges,
  type JobFilter,
} from '../../engine/control-types.ts';
import type { JobState } from '../../engine/types.ts';
import { jobDetail } from '../job-view.ts';
import {
  bad,
  type JsonObject,
  optionalBoolean,
  optionalInteger,
  optionalString,
  pathParam,
  readJsonObject,
  stringArray,
} from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import { jobIdParam } from './job-routes.ts';

const int = { type: 'integer' } as const;

const changesBody = {
  priority: { type: 'integer', minimum: 0, maximum: 9 },
  runNow: { type: 'boolean', description: 'due now: a scheduled (or retrying) job becomes ready' },
  runAtMs: { type: 'integer', description: 'due at this time (one job only)' },
  delayMs: { type: 'integer', description: 'due this long from now (one job only)' },
  group: {
    type: ['string', 'null'],
    description: 'the new group; "" or null takes the job out of its group (one job only)',
  },
} as const;

const filterBody = {
  type: { type: 'string', description: 'only jobs of this type' },
  group: { type: 'string', description: 'only jobs of this group' },
  states: { type: 'array', items: { type: 'string', enum: [...cancellableStates] } },
} as const;

/** In a bulk body `group` is the filter's (filterOf), so `groupIsChange` is false there. */
function changesOf(body: JsonObject, groupIsChange: boolean): JobChanges {
  const changes: JobChanges = {};
  for (const field of ['priority', 'runAtMs', 'delayMs'] as const) {
    const value = optionalInteger(body, field);
    if (value !== undefined) changes[field] = value;
  }
  if (optionalBoolean(body, 'runNow') === true) changes.runNow = true;
  // Present (even null): a change; as on enqueue, an empty group is no group.
  if (groupIsChange && 'group' in body) changes.group = optionalString(body, 'group', 256) || null;
  return changes;
}

function filterOf(c: Context, body: JsonObject): JobFilter {
  const type = optionalString(body, 'type', 256);
  const group = optionalString(body, 'group', 256);
  const given = body.states === undefined || body.states === null ? [] : stringArray(body, 'states', 3);
  const states = given.map((state) => {
    if (!(cancellableStates as readonly string[]).includes(state)) {
      throw bad(`states: ${state} is not one of ${cancellableStates.join(', ')}`);
    }
    return state as CancellableState;
  });
  return {
    queue: pathParam(c, 'queue'),
    ...(type === undefined || type === '' ? {} : { type }),
    ...(group === undefined || group === '' ? {} : { group }),
    states: states as JobState[],
  };
}

export function jobControlRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  return [
    {
      method: 'post',
      path: '/api/v1/jobs/{id}/update',
      access: roleFor('job.update'),
      tag: 'jobs',
      summary: 'Change a scheduled or ready job: priority, run time, group, or run it now',
      description: 'A leased job is refused with 409: it is running.',
      pathParams: { id: 'job id (a UUID)' },
      body: { type: 'object', properties: changesBody },
      response: ref('JobDetail'),
      audits: 'job.update',
      async handle(c, request) {
        const id = jobIdParam(c);
        const changes = changesOf(await readJsonObject(c), true);
        const job = await engine.updateJob(id, changes, request.audit('job.update', `job:${id}`));
        return c.json(jobDetail(job));
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/jobs/cancel',
      access: roleFor('jobs.cancel'),
      tag: 'jobs',
      summary: 'Cancel every job of a queue that the filter matches (default: scheduled, ready and leased)',
      description:
        'Waiting jobs are cancelled at once; the workers of leased ones are told to stop, and those end cancelled. With `dryRun` nothing changes and `matched` counts the jobs a cancel would change now (for the confirmation).',
      pathParams: { queue: 'queue name' },
      body: { type: 'object', properties: { ...filterBody, dryRun: { type: 'boolean' } } },
      response: {
        type: 'object',
        properties: { cancelled: int, cancelRequested: int, matched: int },
        required: ['cancelled', 'cancelRequested', 'matched'],
      },
      audits: 'jobs.cancel',
      async handle(c, request) {
        const body = await readJsonObject(c);
        const filter = filterOf(c, body);
        if (optionalBoolean(body, 'dryRun') === true) {
          return c.json({ cancelled: 0, cancelRequested: 0, matched: await engine.countCancellable(filter) });
        }
        const result = await engine.cancelJobs(filter, request.audit('jobs.cancel', `queue:${filter.queue}`));
        return c.json({ ...result, matched: 0 });
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/jobs/update',
      access: roleFor('jobs.update'),
      tag: 'jobs',
      summary: 'Run now, or set the priority of, every waiting job of a queue that the filter matches',
      description:
        'With `dryRun` nothing changes and `matched` counts the waiting (ready or scheduled) jobs the filter matches now (for the confirmation).',
      pathParams: { queue: 'queue name' },
      body: {
        type: 'object',
        properties: {
          ...filterBody,
          priority: changesBody.priority,
          runNow: changesBody.runNow,
          dryRun: { type: 'boolean' },
        },
      },
      response: {
        type: 'object',
        properties: {
          updated: int,
          matched: { type: 'integer', description: 'with dryRun: the jobs it would change now' },
        },
        required: ['updated'],
      },
      audits: 'jobs.update',
      async handle(c, request) {
        const body = await readJsonObject(c);
        const filter = filterOf(c, body);
        if (optionalBoolean(body, 'dryRun') === true) {
          const named = filter.states ?? [];
          const given = named.filter((state) => state !== 'leased');
          const states: JobState[] = named.length === 0 ? ['ready', 'scheduled'] : given;
          return c.json({
            updated: 0,
            matched: states.length === 0 ? 0 : await engine.countCancellable({ ...filter, states }),
          });
        }
        const audit = request.audit('jobs.update', `queue:${filter.queue}`);
        return c.json({ updated: await engine.updateJobs(filter, changesOf(body, false), audit) });
      },
    },
  ];
}
