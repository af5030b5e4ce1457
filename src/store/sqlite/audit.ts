/**
 * The audit log (schema/0002_admin.sql): appended inside the same write as the
 * change it records, paged newest first through the index of the most
 * selective filter given.
 */

import type { Audit } from '../operators.ts';
import type { AuditRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

/** Optional filters: null matches anything. */
interface AuditFilter {
  actor: string | null;
  action: string | null;
  target: string | null;
  beforeId: number;
  limit: number;
}

const auditFilters = `(@actor IS NULL OR actor = @actor) AND (@action IS NULL OR action = @action)
  AND (@target IS NULL OR target = @target) AND id < @beforeId`;

export function prepareAuditStatements(db: Preparer) {
  return {
    insertAudit: db
      .prepare<
        [{ atMs: number; actor: string; action: string; target: string; detailsJson: string }],
        number
      >(
        `INSERT INTO audit_log (at_ms, actor, action, target, details_json)
         VALUES (@atMs, @actor, @action, @target, @detailsJson) RETURNING id`,
      )
      .pluck(),
    updateAuditDetails: db.prepare<[{ id: number; detailsJson: string }]>(
      'UPDATE audit_log SET details_json = @detailsJson WHERE id = @id',
    ),
    /** Newest first before @beforeId; the other filters narrow it. Driven by the primary key. */
    auditPage: db.prepare<[AuditFilter], AuditRow>(
      `SELECT * FROM audit_log WHERE ${auditFilters} ORDER BY id DESC LIMIT @limit`,
    ),
    /** Driven by audit_log_target (the most selective filter). */
    auditPageByTarget: db.prepare<[AuditFilter], AuditRow>(
      `SELECT * FROM audit_log INDEXED BY audit_log_target WHERE target = @target AND ${auditFilters}
        ORDER BY id DESC LIMIT @limit`,
    ),
    auditPageByActor: db.prepare<[AuditFilter], AuditRow>(
      `SELECT * FROM audit_log INDEXED BY audit_log_actor WHERE actor = @actor AND ${auditFilters}
        ORDER BY id DESC LIMIT @limit`,
    ),
    auditPageByAction: db.prepare<[AuditFilter], AuditRow>(
      `SELECT * FROM audit_log INDEXED BY audit_log_action WHERE action = @action AND ${auditFilters}
        ORDER BY id DESC LIMIT @limit`,
    ),
  };
}

type AuditStatements = ReturnType<typeof prepareAuditStatements>;

export function auditOps(sql: AuditStatements): Audit {
  return {
    *page(p) {
      // Drive the read by the most selective filter's index; the others narrow it.
      const statement =
        p.target !== null
          ? sql.auditPageByTarget
          : p.actor !== null
            ? sql.auditPageByActor
            : p.action !== null
              ? sql.auditPageByAction
              : sql.auditPage;
      return statement.all(p);
    },
    *insert(p) {
      const id = sql.insertAudit.get(p);
      if (id === undefined) throw new Error('the audit log insert returned no id');
      return id;
    },
    *updateDetails(p) {
      sql.updateAuditDetails.run(p);
    },
  };
}
