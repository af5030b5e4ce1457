/**
 * The dashboard's overview and the queues: counts (from the maintained
 * counters, never COUNT(*)), settings, pause/resume, purge and deleting an
 * empty queue.
 */

import type { Context } from 'hono';
import { protocolFeatures } from '../../api-schema/protocol-features.ts';
import { roleFor } from '../../config/index.ts';
import { SeppError } from '../../engine/errors.ts';
import { fitNamePage, type NamePageQuery } from '../../engine/name-pages.ts';
import type { QueueInfo, StateCounts } from '../../engine/types.ts';
import { jobStates } from '../../engine/types.ts';
import { storeKindOnly } from '../../store/store.ts';
import type { Overview, StoreHealth } from '../api-types.ts';
import { type QueueView, queueView } from '../queue-view.ts';
import { type RateWindow, rateWindows } from '../rate-history.ts';
import {
  bad,
  pathParam,
  queryChoice,
  queryInteger,
  queryString,
  readJsonObject,
  requiredString,
} from '../request-input.ts';
import { requestKeyDescription, requestKeyOf, requestKeyProperty } from '../request-key.ts';
import { type AdminServices, type RouteSpec, roleRank } from '../route-spec.ts';
import { ref } from '../schemas.ts';
import { readSettingsChange, settingsChangeBody } from '../settings-change.ts';

const queueParam = { queue: 'queue name' } as const;

/** The overview's parts read from the store, and why they are null when the read failed. */
type OverviewStoreParts = Pick<Overview, 'totals' | 'queueCount' | 'queues' | 'nextPageToken'> & {
  readFailure: string | null;
};

/** The store's health when nothing says otherwise (no maintenance loop behind the admin app). */
const healthy: StoreHealth = { available: true, unavailableSinceMs: null, lastError: null, failures: 0 };

/**
 * The store's health as the overview answers it: maintenance's, unless this request's read
 * failed while maintenance has seen no failure yet: then unavailable with the read's error,
 * since when not known yet (null) and no failed pass.
 */
function overviewHealth(tracked: StoreHealth, readFailure: string | null): StoreHealth {
  if (readFailure === null || !tracked.available) return tracked;
  return { ...tracked, available: false, lastError: readFailure };
}

const pagedQueuesHelp =
  'In name order, at most `page_size` queues (default and most: limits.max_page_size, 1000 unless set) ' +
  'and about 4 MiB of JSON; follow `nextPageToken` for the rest. There are at most limits.max_queues queues.';

/** Bytes of queues' JSON in one answer (a queue's settings hold lists that may be long). */
const queuesAnswerBytesMax = 4 * 1024 * 1024;

const queuePageParams = {
  page_size: {
    description: 'queues per page; default and most limits.max_page_size',
    schema: { type: 'integer', minimum: 1 },
  },
  page_token: { description: "the previous page's nextPageToken", schema: { type: 'string' } },
} as const;

/** The page of queues a request asks for; by default as many as a page may hold. */
function queuePageQuery(c: Context, maxPageSize: number): NamePageQuery {
  const cursor = queryString(c, 'page_token');
  return {
    pageSize: queryInteger(c, 'page_size') ?? maxPageSize,
    ...(cursor === undefined ? {} : { cursor }),
  };
}

export function queueRoutes({ deps }: AdminServices): RouteSpec[] {
  const { engine } = deps;

  /** A queue with its run-time overrides as given, which tell a derived value from a set one. */
  const view = (queue: QueueInfo): QueueView =>
    queueView(queue, engine.queueSettingOverrides().get(queue.name));

  /** The page of queues a request asks for, as views, bounded in entries and in bytes of JSON. */
  const queueViewPage = async (c: Context): Promise<{ items: QueueView[]; nextCursor: string | null }> => {
    const page = await engine.queuePage(queuePageQuery(c, engine.limits.maxPageSize));
    return fitNamePage(
      'queues',
      page.items.map(view),
      page.nextCursor,
      (queue) => queue.name,
      (queue) => Buffer.byteLength(JSON.stringify(queue)) + 1,
      queuesAnswerBytesMax,
    );
  };

  /** The queue, which must exist: operators act on queues that are there, a typo creates nothing. */
  const existingQueue = async (c: Context): Promise<QueueView> => {
    const name = pathParam(c, 'queue');
    const queue = await engine.getQueue(name);
    if (queue === undefined) throw new SeppError('not_found', `queue ${name} does not exist`);
    return view(queue);
  };

  /**
   * The overview's parts read from the store: totals from the maintained counters of every
   * queue (one read), details for one page only. While the store is unavailable, null and why:
   * the dashboard still shows what the server knows without it.
   */
  const storeParts = async (c: Context): Promise<OverviewStoreParts> => {
    try {
      const counts = await engine.queueCounts();
      const totals = Object.fromEntries(jobStates.map((s) => [s, 0])) as StateCounts;
      for (const queueCounts of counts.values()) for (const s of jobStates) totals[s] += queueCounts[s];
      const page = await queueViewPage(c);
      const { size: queueCount } = counts;
      return {
        readFailure: null,
        totals,
        queueCount,
        queues: page.items,
        nextPageToken: page.nextCursor,
      };
    } catch (error) {
      if (!(error instanceof SeppError) || error.code !== 'unavailable') throw error;
      return {
        readFailure: error.message,
        totals: null,
        queueCount: null,
        queues: null,
        nextPageToken: null,
      };
    }
  };

  return [
    {
      method: 'get',
      path: '/api/v1/overview',
      access: 'viewer',
      tag: 'overview',
      summary: 'Server facts, totals, per-queue counts, job rates and waits (the dashboard)',
      query: {
        window: {
          description: 'the rates over the last 5 minutes, hour (the default) or day',
          schema: { type: 'string', enum: Object.keys(rateWindows) },
        },
        ...queuePageParams,
      },
      response: ref('Overview'),
      async handle(c, request) {
        const window = queryChoice(c, 'window', Object.keys(rateWindows) as RateWindow[]) ?? '1h';
        const { identity, store, ...info } = deps.serverInfo();
        const nowMs = deps.clock.nowMs();
        const { readFailure, ...fromStore } = await storeParts(c);
        // The machine's name, pid and addresses, and where the store is with its replication and
        // bounds: from the operator role up (config/admin-roles.ts's table); a viewer sees the store's kind.
        const seesServers = roleRank[request.role] >= roleRank.operator;
        const overview: Overview = {
          server: {
            ...info,
            store: seesServers ? store : storeKindOnly(store.kind),
            identity: seesServers ? identity : null,
            uptimeMs: Math.max(0, nowMs - info.startedAtMs),
            serverTimeMs: nowMs,
            features: [...protocolFeatures],
          },
          storeHealth: overviewHealth(deps.storeHealth?.() ?? healthy, readFailure),
          ...fromStore,
          waitingWorkers: engine.waitingReserves,
          rates: deps.rates.snapshot(window),
        };
        return c.json(overview);
      },
    },
    {
      method: 'get',
      path: '/api/v1/queues',
      access: 'viewer',
      tag: 'queues',
      summary: 'The queues, a page at a time, with their counts by state, paused flag and effective settings',
      description: pagedQueuesHelp,
      query: queuePageParams,
      response: {
        type: 'object',
        properties: {
          queues: { type: 'array', items: ref('Queue') },
          nextPageToken: {
            type: ['string', 'null'],
            description: 'page_token of the next page; null on the last',
          },
        },
        required: ['queues', 'nextPageToken'],
      },
      async handle(c) {
        const page = await queueViewPage(c);
        return c.json({ queues: page.items, nextPageToken: page.nextCursor });
      },
    },
    {
      method: 'get',
      path: '/api/v1/queues/{queue}',
      access: 'viewer',
      tag: 'queues',
      summary: 'One queue',
      pathParams: queueParam,
      response: ref('Queue'),
      handle: async (c) => c.json(await existingQueue(c)),
    },
    {
      method: 'get',
      path: '/api/v1/queues/{queue}/push',
      access: 'viewer',
      tag: 'queues',
      summary:
        "A push queue's deliveries: its endpoint, open deliveries, the latest failures and the latency",
      description: 'null when the queue does not push ([queues.NAME.push] in the config file; docs/http.md).',
      pathParams: queueParam,
      response: ref('PushStatus'),
      handle: async (c) => c.json(deps.pushStatus?.((await existingQueue(c)).name) ?? null),
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/pause',
      access: roleFor('queue.pause'),
      tag: 'queues',
      summary: 'Pause a queue: it hands out no jobs; enqueue still works',
      pathParams: queueParam,
      response: ref('Queue'),
      audits: 'queue.pause',
      async handle(c, request) {
        const { name } = await existingQueue(c);
        await engine.pauseQueue(name, request.audit('queue.pause', `queue:${name}`));
        return c.json(await existingQueue(c));
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/resume',
      access: roleFor('queue.resume'),
      tag: 'queues',
      summary: 'Resume a paused queue',
      pathParams: queueParam,
      response: ref('Queue'),
      audits: 'queue.resume',
      async handle(c, request) {
        const { name } = await existingQueue(c);
        await engine.resumeQueue(name, request.audit('queue.resume', `queue:${name}`));
        return c.json(await existingQueue(c));
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/settings',
      access: roleFor('queue.settings.set'),
      tag: 'queues',
      summary: "Change a queue's settings at run time (overrides of the config file) or reset them",
      description:
        'Values are written as in the config file or an environment variable ("10", "30s", "4MiB", ["send"]) and checked as the config file checks them; every change applies in one transaction from the next lease or enqueue on, survives restarts, and is audited with the old and new values. `reset` gives settings back to the config file.',
      pathParams: queueParam,
      body: settingsChangeBody,
      response: ref('Queue'),
      audits: 'queue.settings.set',
      async handle(c, request) {
        const { name } = await existingQueue(c);
        const change = readSettingsChange(name, await readJsonObject(c));
        const action = change.set === undefined ? 'queue.settings.reset' : 'queue.settings.set';
        const info = await engine.changeQueueSettings(
          name,
          change,
          request.audit(action, `queue:${name}`, change.typed),
        );
        return c.json(view(info));
      },
    },
    {
      method: 'post',
      path: '/api/v1/queues/{queue}/purge',
      access: roleFor('queue.purge'),
      tag: 'queues',
      summary: 'Delete every ready and scheduled job of a queue (leased jobs finish; dead letters stay)',
      description: `Runs in chunks of 5,000 jobs; \`confirm\` must repeat the queue name. ${requestKeyDescription}`,
      pathParams: queueParam,
      body: {
        type: 'object',
        properties: {
          confirm: { type: 'string', description: 'the queue name, again' },
          requestKey: requestKeyProperty,
        },
        required: ['confirm'],
      },
      response: { type: 'object', properties: { deleted: { type: 'integer' } }, required: ['deleted'] },
      audits: 'queue.purge',
      async handle(c, request) {
        const { name } = await existingQueue(c);
        const body = await readJsonObject(c);
        if (requiredString(body, 'confirm', 256) !== name) {
          throw bad(`confirm must be the queue name (${name}) to purge it`);
        }
        const { requestKey } = requestKeyOf(body);
        const { deleted } = await engine.purgeQueue(
          name,
          request.audit('queue.purge', `queue:${name}`),
          requestKey,
        );
        return c.json({ deleted });
      },
    },
    {
      method: 'delete',
      path: '/api/v1/queues/{queue}',
      access: roleFor('queue.delete'),
      tag: 'queues',
      summary: 'Delete an empty queue (no job in any state), such as one a typo created',
      description:
        '409 while the queue holds jobs or when the configuration declares it. Its idempotency keys stay until ' +
        'their window ends; an enqueue creates the queue anew.',
      pathParams: queueParam,
      response: { type: 'object', properties: { deleted: { type: 'string' } }, required: ['deleted'] },
      audits: 'queue.delete',
      async handle(c, request) {
        const { name } = await existingQueue(c);
        await engine.deleteQueue(name, request.audit('queue.delete', `queue:${name}`));
        return c.json({ deleted: name });
      },
    },
  ];
}
