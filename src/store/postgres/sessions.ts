/** The admin UI's sessions: the SHA-256 of a session's id and of its CSRF token, never either. */

import type { Sessions } from '../operators.ts';
import type { SessionRow } from '../rows.ts';
import { type Connection, changes, rows, statement } from './sql.ts';

const live = statement(
  `SELECT id_sha256, "user", role, csrf_sha256, password_tag, created_at_ms, expires_at_ms FROM admin_sessions
    WHERE expires_at_ms > $1 ORDER BY created_at_ms, id_sha256`,
);
const insert = statement(
  `INSERT INTO admin_sessions (id_sha256, "user", role, csrf_sha256, password_tag, created_at_ms, expires_at_ms)
   VALUES ($1, $2, $3, $4, $5, $6, $7)`,
);
const remove = statement('DELETE FROM admin_sessions WHERE id_sha256 = $1');
const removeExpired = statement('DELETE FROM admin_sessions WHERE expires_at_ms <= $1');

export function sessionOps(c: Connection): Sessions {
  return {
    *live(nowMs) {
      return yield* rows<SessionRow>(c, live, [nowMs]);
    },
    *insert(row) {
      yield* changes(c, insert, [
        row.id_sha256,
        row.user,
        row.role,
        row.csrf_sha256,
        row.password_tag,
        row.created_at_ms,
        row.expires_at_ms,
      ]);
    },
    *delete(idSha256) {
      yield* changes(c, remove, [idSha256]);
    },
    *deleteExpired(nowMs) {
      yield* changes(c, removeExpired, [nowMs]);
    },
  };
}
