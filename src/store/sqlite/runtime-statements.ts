/**
 * The statements behind what operators change while the server runs
 * (schema/0006_runtime_settings.sql): queue settings overridden at run time and
 * the admin UI's sessions. None is on the producers' and workers' hot path: the
 * overrides are read once at start and the sessions once at start; afterwards
 * memory holds them and these statements only write. Prepared once; each lists
 * its parameters.
 */
import type { Db } from './open.ts';

export interface OverrideRow {
  queue: string;
  key: string;
  value_json: string;
}

export interface SessionRow {
  id_sha256: string;
  user: string;
  role: string;
  csrf_token: string;
  created_at_ms: number;
  expires_at_ms: number;
}

export function prepareRuntimeStatements(db: Db) {
  return {
    // ---- queue setting overrides (primary key: queue, key)
    allOverrides: db.prepare<[], OverrideRow>(
      'SELECT queue, key, value_json FROM queue_setting_overrides ORDER BY queue, key',
    ),
    /** One queue's overrides, as this transaction sees them (earlier operations of the batch included). */
    overridesOfQueue: db.prepare<[string], Omit<OverrideRow, 'queue'>>(
      'SELECT key, value_json FROM queue_setting_overrides WHERE queue = ?',
    ),
    upsertOverride: db.prepare<
      [{ queue: string; key: string; value_json: string; set_at_ms: number; set_by: string }]
    >(
      `INSERT INTO queue_setting_overrides (queue, key, value_json, set_at_ms, set_by)
       VALUES (@queue, @key, @value_json, @set_at_ms, @set_by)
       ON CONFLICT (queue, key) DO UPDATE SET value_json = excluded.value_json,
         set_at_ms = excluded.set_at_ms, set_by = excluded.set_by`,
    ),
    deleteOverride: db.prepare<[{ queue: string; key: string }]>(
      'DELETE FROM queue_setting_overrides WHERE queue = @queue AND key = @key',
    ),

    // ---- admin sessions (primary key: id_sha256; index admin_sessions_expiry)
    /** Sessions still live at @now_ms, oldest first (the order the per-user cap ends them in). */
    liveSessions: db.prepare<[{ now_ms: number }], SessionRow>(
      'SELECT * FROM admin_sessions WHERE expires_at_ms > @now_ms ORDER BY created_at_ms, id_sha256',
    ),
    insertSession: db.prepare<[SessionRow]>(
      `INSERT INTO admin_sessions (id_sha256, user, role, csrf_token, created_at_ms, expires_at_ms)
       VALUES (@id_sha256, @user, @role, @csrf_token, @created_at_ms, @expires_at_ms)`,
    ),
    deleteSession: db.prepare<[{ id_sha256: string }]>(
      'DELETE FROM admin_sessions WHERE id_sha256 = @id_sha256',
    ),
    /** Sessions that ended by time: an index range. */
    deleteExpiredSessions: db.prepare<[{ now_ms: number }]>(
      'DELETE FROM admin_sessions WHERE expires_at_ms <= @now_ms',
    ),
  };
}

export type RuntimeStatements = ReturnType<typeof prepareRuntimeStatements>;
