/**
 * Workers for operators: every connected worker with the leases it holds, and
 * releasing a stuck lease (audited).
 */
import { roleFor } from '../../config/index.ts';
import type { WorkersAnswer } from '../api-types.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import { jobIdParam } from './job-routes.ts';

const int = { type: 'integer' } as const;
const msOrNull = { type: ['integer', 'null'], description: 'ms since the Unix epoch' } as const;

export function workerRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  return [
    {
      method: 'get',
      path: '/api/v1/workers',
      access: 'viewer',
      tag: 'workers',
      summary: 'The workers connected now: id, address, transport, queues, leases held, when last seen',
      description:
        'Work streams are listed from their subscribe to their end; unary Reserve callers after each call, until 5 minutes without one. `jobsHeld` counts the leases recorded under the worker id.',
      response: {
        type: 'object',
        properties: {
          workers: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                workerId: { type: 'string' },
                address: { type: 'string' },
                transport: { type: 'string', enum: ['work_stream', 'reserve'] },
                queues: { type: 'array', items: { type: 'string' } },
                connectedAtMs: int,
                lastSeenAtMs: int,
                jobsHeld: int,
                oldestLeaseAtMs: msOrNull,
                completedRecent: {
                  type: 'integer',
                  description:
                    'attempts of this worker id acked over the last recentWindowMs (in memory since the start)',
                },
                failedRecent: {
                  type: 'integer',
                  description:
                    'attempts of this worker id that failed (nack, lease expiry) over the last recentWindowMs',
                },
                recentWindowMs: { type: 'integer', description: '900000: the last 15 minutes' },
              },
            },
          },
          waitingReserves: int,
        },
        required: ['workers', 'waitingReserves'],
      },
      async handle(c) {
        const answer: WorkersAnswer = {
          workers: await engine.listWorkers(),
          waitingReserves: engine.waitingReserves,
        };
        return c.json(answer);
      },
    },
    {
      method: 'post',
      path: '/api/v1/jobs/{id}/release-lease',
      access: roleFor('worker.release_lease'),
      tag: 'workers',
      summary: "End a leased job's lease now, as its expiry would (for a stuck worker)",
      description:
        'The attempt counts: the job goes back to ready, or to the dead letters (reason lease_expired) if it was the last attempt. The worker learns of it when its next extend, ack or nack is refused.',
      pathParams: { id: 'job id (a UUID)' },
      response: ref('PreviousState'),
      audits: 'worker.release_lease',
      async handle(c, request) {
        const id = jobIdParam(c);
        return c.json(await engine.releaseLease(id, request.audit('worker.release_lease', `job:${id}`)));
      },
    },
  ];
}
