-- 0031: the secret of the lease tokens of batch members (task token19).
-- Why: a running member adds jobs to its own sealed batch (AddToBatch with from_member). It
-- proved itself with its lease's attempt, which is no secret: GetJob shows it to every key that
-- reads jobs, so a key that could read and enqueue could fill another's sealed batch. A member's
-- lease now carries a token, HMAC-SHA256 of this secret over the job's id and attempt, that only
-- the leasing worker is handed, and the add must carry it (src/engine/batches/lease-tokens.ts).
-- The server writes the secret (32 bytes of crypto.randomBytes) at its first start on this
-- schema, if no row holds it yet, and reads it at every start: it outlives restarts, so a worker
-- holding a lease across one still adds. One row per secret, by name; nothing shows or logs it.
CREATE TABLE server_secrets (
  name    TEXT PRIMARY KEY,
  secret  BLOB NOT NULL
) WITHOUT ROWID;
