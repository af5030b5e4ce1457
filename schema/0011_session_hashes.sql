-- 0011: admin sessions keep only hashes, and the password they were opened with.
-- Why: the CSRF token of every session was stored in clear (issue 29, item 13), and a
-- session outlived a change of its user's password (item 7). Now the CSRF token is an
-- HMAC of the cookie's id (src/admin/sessions.ts), so the server can hand it out again
-- after a restart, and only its SHA-256 is kept, as of the id; `password_tag` is a
-- fingerprint of the password hash the user logged in with, and a session whose user
-- has another password in the config ends.
--
-- The stored sessions cannot be carried over: their rows hold neither the cookie's id
-- (to derive the token from) nor the password they were opened with. The table is made
-- again, empty: every admin UI user logs in once more after this upgrade
-- (docs/upgrading.md). Sessions are few (users × admin.max_sessions_per_user), so this
-- takes no time.
DROP TABLE admin_sessions;
CREATE TABLE admin_sessions (
  id_sha256      TEXT PRIMARY KEY,   -- base64url SHA-256 of the cookie's id
  user           TEXT NOT NULL,
  role           TEXT NOT NULL,      -- the role at login (the config's current role is what counts)
  csrf_sha256    TEXT NOT NULL,      -- base64url SHA-256 of the session's CSRF token
  password_tag   TEXT NOT NULL,      -- fingerprint of the user's password hash at login
  created_at_ms  INTEGER NOT NULL,
  expires_at_ms  INTEGER NOT NULL
) WITHOUT ROWID;
-- Sweeping expired sessions.
CREATE INDEX admin_sessions_expiry ON admin_sessions (expires_at_ms);
