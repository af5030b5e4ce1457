-- 0021: the secret of the lease tokens of batch members, as the SQLite store's migration 0031
-- (see its header for why). Every server on the database computes and checks the tokens with the
-- one secret this table holds, so a member leased through one server adds through another: the
-- first server to start on this schema writes it (INSERT … ON CONFLICT DO NOTHING, 32 bytes of
-- crypto.randomBytes), and every server reads the row that won.
-- servers-from: 21 — servers of schema 20 and older accept an add from a member with its attempt alone,
--   the gap this closes: they stop once it is applied (docs/upgrading.md, "On PostgreSQL").
CREATE TABLE server_secrets (
  name    text COLLATE "C" PRIMARY KEY,
  secret  bytea NOT NULL
);
