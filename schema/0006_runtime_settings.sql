-- 0006: queue settings changed at run time, and admin sessions that outlive a restart.
-- Why: an operator raises a retry limit or a lease length without a restart
-- (`sepp queue set`, the SetQueueSettings RPC, the admin UI) and the change must
-- still hold after the next restart; and a rolling restart must not log every
-- operator out of the admin UI.

-- One row per queue setting overridden at run time. An override wins over the config
-- file ([queues.NAME], then [queue_defaults]); deleting the row (`sepp queue reset`)
-- gives the setting back to the file. `key` is the setting's TOML name
-- (`max_attempts`, `backoff_base_ms`); `value_json` its value in the setting's unit
-- (`30000` for a duration in ms, `["send"]` for allowed_types). Deliberately no
-- foreign key to queues: a queue's row and its overrides are removed together by
-- the code that removes queues.
CREATE TABLE queue_setting_overrides (
  queue       TEXT NOT NULL,
  key         TEXT NOT NULL,
  value_json  TEXT NOT NULL,
  set_at_ms   INTEGER NOT NULL,
  set_by      TEXT NOT NULL,   -- the actor, as in the audit log
  PRIMARY KEY (queue, key)
) WITHOUT ROWID;

-- Logged-in admin UI sessions. The cookie holds a random id; only its SHA-256 is
-- stored, so a copy of the database holds no usable cookie. A session ends at
-- expires_at_ms (fixed at login), on logout, when its user logs in more often than
-- admin.max_sessions_per_user allows (the oldest goes), or when its user is removed
-- from the config. Sessions without login (`anonymous`) are not stored.
CREATE TABLE admin_sessions (
  id_sha256      TEXT PRIMARY KEY,   -- base64url SHA-256 of the cookie's id
  user           TEXT NOT NULL,
  role           TEXT NOT NULL,      -- the role at login (the config's current role is what counts)
  csrf_token     TEXT NOT NULL,      -- useless without the cookie; the UI sends it back on mutations
  created_at_ms  INTEGER NOT NULL,
  expires_at_ms  INTEGER NOT NULL
) WITHOUT ROWID;
-- Sweeping expired sessions.
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at_ms);
