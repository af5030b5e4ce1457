/**
 * The admin UI's sessions on disk, so that a restart or a reload does not log
 * operators out: the store's `sessions` capability, written in the store's
 * write path (durable before the answer that hands out or ends a cookie).
 * sessions.ts decides what a session is; this keeps what it decided. Only the
 * SHA-256 of a session's id and of its CSRF token are stored.
 */
import type { Op } from '../store/op.ts';
import type { SessionRow } from '../store/rows.ts';
import type { Store, StoreTx } from '../store/store.ts';
import type { SessionPersistence, StoredSession } from './sessions.ts';

export function storedSessions(store: Store, nowMs: () => number): SessionPersistence {
  return {
    live: () => store.read((view) => view.sessions.live(nowMs())).then((rows) => rows.map(sessionOf)),
    save: (session, ended) => store.write((tx) => saveSession(tx, session, ended, nowMs())),
    end: (ended) => store.write((tx) => endSessions(tx, ended)),
  };
}

/** Stores a new session, and ends those it replaces (the user's oldest, over the cap) and those expired. */
function* saveSession(
  tx: StoreTx,
  session: StoredSession,
  ended: readonly string[],
  nowMs: number,
): Op<void> {
  yield* endSessions(tx, ended);
  yield* tx.sessions.deleteExpired(nowMs);
  yield* tx.sessions.insert({
    id_sha256: session.idSha256,
    user: session.user,
    role: session.role,
    csrf_sha256: session.csrfSha256,
    password_tag: session.passwordTag,
    created_at_ms: session.createdAtMs,
    expires_at_ms: session.expiresAtMs,
  });
}

function* endSessions(tx: StoreTx, ended: readonly string[]): Op<void> {
  for (const idSha256 of ended) yield* tx.sessions.delete(idSha256);
}

function sessionOf(row: SessionRow): StoredSession {
  return {
    idSha256: row.id_sha256,
    user: row.user,
    role: row.role,
    csrfSha256: row.csrf_sha256,
    passwordTag: row.password_tag,
    createdAtMs: row.created_at_ms,
    expiresAtMs: row.expires_at_ms,
  };
}
