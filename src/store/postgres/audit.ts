/**
 * The audit log: appended inside the same write as the change it records,
 * paged newest first (indexes by actor, action and target, each ending in id).
 */

import type { Audit } from '../operators.ts';
import type { AuditRow } from '../rows.ts';
import { type Connection, changes, rows, statement, value } from './sql.ts';

const insert = statement(
  'INSERT INTO audit_log (at_ms, actor, action, target, details_json) VALUES ($1, $2, $3, $4, $5) RETURNING id AS v',
);
const updateDetails = statement('UPDATE audit_log SET details_json = $2 WHERE id = $1');
const page = statement(
  `SELECT id, at_ms, actor, action, target, details_json FROM audit_log
    WHERE ($1::text IS NULL OR actor = $1) AND ($2::text IS NULL OR action = $2)
      AND ($3::text IS NULL OR target = $3) AND id < $4
    ORDER BY id DESC LIMIT $5`,
);

export function auditOps(c: Connection): Audit {
  return {
    *page(p) {
      return yield* rows<AuditRow>(c, page, [p.actor, p.action, p.target, p.beforeId, p.limit]);
    },
    *insert(p) {
      const id = yield* value<number>(c, insert, [p.atMs, p.actor, p.action, p.target, p.detailsJson]);
      if (id === undefined) throw new Error('the audit log insert returned no id');
      return id;
    },
    *updateDetails(p) {
      yield* changes(c, updateDetails, [p.id, p.detailsJson]);
    },
  };
}
