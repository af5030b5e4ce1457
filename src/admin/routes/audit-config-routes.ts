/**
 * The audit log (who changed what) and the effective configuration. The log
 * is for operators; the configuration, though redacted, describes the
 * deployment (addresses, file paths, users) and is for admins.
 */
import { queryInteger, queryString } from '../request-input.ts';
import type { AdminServices, RouteSpec } from '../route-spec.ts';
import { ref } from '../schemas.ts';

export function auditConfigRoutes({ deps }: AdminServices): RouteSpec[] {
  return [
    {
      method: 'get',
      path: '/api/v1/audit',
      access: 'operator',
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
        limit: { description: 'page size, default 50, at most 1000', schema: { type: 'integer' } },
      },
      response: ref('AuditPage'),
      handle(c) {
        const query = {
          actor: queryString(c, 'actor', 256),
          action: queryString(c, 'action', 256),
          target: queryString(c, 'target', 256),
          cursor: queryString(c, 'cursor'),
          pageSize: queryInteger(c, 'limit'),
        };
        const defined = Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined));
        return c.json(deps.engine.listAudit(defined));
      },
    },
    {
      method: 'get',
      path: '/api/v1/config',
      access: 'admin',
      tag: 'config',
      summary: 'The effective configuration, secrets redacted',
      response: {
        type: 'object',
        properties: { config: { type: 'object' } },
        required: ['config'],
      },
      handle: (c) => c.json({ config: deps.effectiveConfig() }),
    },
  ];
}
