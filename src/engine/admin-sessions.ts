/**
 * The admin UI's sessions on disk, so that a restart or a reload does not log
 * operators out. The admin app keeps the live sessions in memory and decides
 * what a session is (src/admin/sessions.ts); this stores what it decided,
 * durably, before the answer that hands out or ends a cookie. Only the SHA-256
 * of a session's id is stored.
 */
import type { RuntimeStatements } from '../store/sqlite/runtime-statements.ts';
import type { AuditInput } from './admin-types.ts';
import type { AuditLog } from './audit.ts';
import type { EngineContext, Write } from './context.ts';

export interface SessionRecord {
  /** base64url SHA-256 of the cookie's id. */
  readonly idSha256: string;
  readonly user: string;
  readonly role: string;
  readonly csrfToken: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
}

export class AdminSessions {
  constructor(
    private readonly ctx: EngineContext,
    private readonly sql: RuntimeStatements,
    private readonly audit: AuditLog,
    private readonly write: Write,
  ) {}

  /** Sessions not yet expired, oldest first. */
  live(): SessionRecord[] {
    return this.sql.liveSessions.all({ now_ms: this.ctx.clock.nowMs() }).map((row) => ({
      idSha256: row.id_sha256,
      user: row.user,
      role: row.role,
      csrfToken: row.csrf_token,
      createdAtMs: row.created_at_ms,
      expiresAtMs: row.expires_at_ms,
    }));
  }

  /**
   * Stores a new session, ends the sessions it replaces (the user's oldest,
   * over the cap) and those expired, and writes `audit` (the login): all in
   * one transaction.
   */
  save(session: SessionRecord, ended: readonly string[], audit?: AuditInput): Promise<void> {
    return this.write(() => {
      for (const idSha256 of ended) this.sql.deleteSession.run({ id_sha256: idSha256 });
      this.sql.deleteExpiredSessions.run({ now_ms: this.ctx.clock.nowMs() });
      this.sql.insertSession.run({
        id_sha256: session.idSha256,
        user: session.user,
        role: session.role,
        csrf_token: session.csrfToken,
        created_at_ms: session.createdAtMs,
        expires_at_ms: session.expiresAtMs,
      });
      if (audit !== undefined) this.audit.write(audit);
    });
  }

  /** Ends sessions (a logout, a removed user), with `audit` in the same transaction. */
  end(ended: readonly string[], audit?: AuditInput): Promise<void> {
    return this.write(() => {
      for (const idSha256 of ended) this.sql.deleteSession.run({ id_sha256: idSha256 });
      if (audit !== undefined) this.audit.write(audit);
    });
  }
}
