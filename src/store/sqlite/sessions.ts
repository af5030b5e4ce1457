/**
 * The admin UI's sessions (schema/0011_session_hashes.sql, primary key
 * id_sha256, index admin_sessions_expiry): the SHA-256 of a session's id and
 * of its CSRF token, never either. src/admin/ decides what a session is; this keeps it.
 */

import type { Sessions } from '../operators.ts';
import type { SessionRow } from '../rows.ts';
import type { Preparer } from './prepare-on-use.ts';

export function prepareSessionStatements(db: Preparer) {
  return {
    /** Sessions still live at @nowMs, oldest first (the order the per-user cap ends them in). */
    liveSessions: db.prepare<[{ nowMs: number }], SessionRow>(
      'SELECT * FROM admin_sessions WHERE expires_at_ms > @nowMs ORDER BY created_at_ms, id_sha256',
    ),
    insertSession: db.prepare<[SessionRow]>(
      `INSERT INTO admin_sessions (id_sha256, user, role, csrf_sha256, password_tag, created_at_ms, expires_at_ms)
       VALUES (@id_sha256, @user, @role, @csrf_sha256, @password_tag, @created_at_ms, @expires_at_ms)`,
    ),
    deleteSession: db.prepare<[string]>('DELETE FROM admin_sessions WHERE id_sha256 = ?'),
    /** Sessions that ended by time: an index range. */
    deleteExpiredSessions: db.prepare<[{ nowMs: number }]>(
      'DELETE FROM admin_sessions WHERE expires_at_ms <= @nowMs',
    ),
  };
}

type SessionStatements = ReturnType<typeof prepareSessionStatements>;

export function sessionOps(sql: SessionStatements): Sessions {
  return {
    *live(nowMs) {
      return sql.liveSessions.all({ nowMs });
    },
    *insert(row) {
      sql.insertSession.run(row);
    },
    *delete(idSha256) {
      sql.deleteSession.run(idSha256);
    },
    *deleteExpired(nowMs) {
      sql.deleteExpiredSessions.run({ nowMs });
    },
  };
}
