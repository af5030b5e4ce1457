/** The job history that survives a restart (src/engine/history/): GET /api/v1/history. */
import { historyWindows } from '../../engine/history/index.ts';
import { queryChoice, queryString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';

export function historyRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;
  return [
    {
      method: 'get',
      path: '/api/v1/history',
      access: 'viewer',
      tag: 'overview',
      summary:
        'Completed and failed attempts, dead jobs, failure rate, wait and run time p50/p95 per queue and type',
      description:
        'From the history the server writes to its store once a minute, so it survives a restart: `1h` is the last 60 whole minutes (one-minute buckets), `24h` and `7d` the last 24 or 168 hours in one-hour buckets, the current hour up to its last whole minute. Buckets no server covered are no data (coveredMs 0).',
      query: {
        window: {
          description: '1h (the default), 24h or 7d',
          schema: { type: 'string', enum: [...historyWindows] },
        },
        queue: { description: 'only this queue', schema: { type: 'string' } },
      },
      response: ref('History'),
      async handle(c) {
        const window = queryChoice(c, 'window', historyWindows) ?? '1h';
        const queue = queryString(c, 'queue') ?? null;
        return c.json(await engine.history(window, queue));
      },
    },
  ];
}
