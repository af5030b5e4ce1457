/**
 * The audit log (who changed what) and the effective configuration. The log
 * is for operators; the configuration, though redacted, describes the
 * deployment (addresses, file paths, users) and is for admins.
 */
import { type ConfigEntry, roleFor, tomlKey } from '../../config/index.ts';
import type { QueueInfo } from '../../engine/types.ts';
import { queueView } from '../queue-view.ts';
import { queryPageSize, queryString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';

export function auditConfigRoutes({ deps }: AdminServices): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/api/v1/audit',
      access: roleFor('audit.read'),
      tag: 'audit',
      summary: 'Audit entries, newest first',
      query: {
        actor: { description: 'only this user', schema: { type: 'string' } },
        action: { description: 'only this action, e.g. queue.pause', schema: { type: 'string' } },
        target: {
          description: 'only this target, e.g. queue:emails or job:<id>',
          schema: { type: 'string' },
        },
        cursor: { description: "the previous page's nextCursor", schema: { type: 'string' } },
        limit: {
          description: 'page size: default 50 (none or 0), at most limits.max_page_size',
          schema: { type: 'integer', minimum: 0 },
        },
      },
      response: ref('AuditPage'),
      async handle(c) {
        const query = {
          actor: queryString(c, 'actor', 256),
          action: queryString(c, 'action', 256),
          target: queryString(c, 'target', 256),
          cursor: queryString(c, 'cursor'),
          pageSize: queryPageSize(c, deps.engine.limits.maxPageSize),
        };
        const defined = Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined));
        return c.json(await deps.engine.listAudit(defined));
      },
    },
    {
      method: 'get',
      path: '/api/v1/config',
      access: roleFor('config.read'),
      tag: 'config',
      summary: 'The effective configuration, secrets redacted, with the source of each value',
      description:
        '`config` is the loaded configuration as JSON; `entries` lists every setting by its TOML key with its value in plain units, where it comes from (default, file, an environment variable or flag, or for a queue a run-time override) and whether changing it takes a restart.',
      response: {
        type: 'object',
        properties: {
          config: { type: 'object' },
          configFile: { type: ['string', 'null'] },
          entries: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                key: { type: 'string' },
                value: { type: 'string' },
                source: { type: 'string' },
                restartRequired: { type: 'boolean' },
              },
              required: ['key', 'value', 'source', 'restartRequired'],
            },
          },
        },
        required: ['config', 'configFile', 'entries'],
      },
      async handle(c) {
        const view = deps.configView?.() ?? { configFile: null, entries: [] };
        return c.json({
          config: deps.effectiveConfig(),
          configFile: view.configFile,
          // Only the queues with overrides: bounded by what operators changed, not by the queues there are.
          entries: withOverrides(
            view.entries,
            await deps.engine.describeQueues([...deps.engine.queueSettingOverrides().keys()]),
          ),
        });
      },
    },
  ];
}

/**
 * The file's queue settings with the run-time overrides in force put over
 * them, and the overrides of queues the file does not declare, so the page
 * shows what each queue runs with.
 */
function withOverrides(entries: readonly ConfigEntry[], queues: readonly QueueInfo[]): ConfigEntry[] {
  const overrides = new Map<string, Map<string, string>>();
  for (const queue of queues) {
    const found = new Map<string, string>();
    for (const setting of queueView(queue).settingValues) {
      if (setting.source === 'override') found.set(setting.key, setting.text);
    }
    if (found.size > 0) overrides.set(queue.name, found);
  }
  const result = entries.map((entry) => {
    const text = entry.queue && overrides.get(entry.queue.name)?.get(entry.queue.setting);
    if (entry.queue === undefined || text === undefined) return entry;
    overrides.get(entry.queue.name)?.delete(entry.queue.setting);
    return { ...entry, value: text, source: 'override' };
  });
  for (const [name, found] of overrides) {
    for (const [setting, text] of found) {
      const key = `queues.${tomlKey(name)}.${setting}`;
      result.push({ key, value: text, source: 'override', restartRequired: false, queue: { name, setting } });
    }
  }
  return result;
}
