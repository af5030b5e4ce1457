-- 0009: the request keys of bulk operations, as the SQLite store's migration 0024 (see its
-- header for why). Several servers may share this table: the primary key decides which
-- start holds a key (INSERT … ON CONFLICT), so two servers never both start an operation
-- under one key.
-- servers-from: 9 — servers of schema 8 start a bulk operation without taking its request key:
--   one key, two operations.
CREATE TABLE bulk_operation_keys (
  actor          text COLLATE "C" NOT NULL,
  request_key    text COLLATE "C" NOT NULL,
  operation_id   text COLLATE "C" NOT NULL,
  request_json   text NOT NULL,
  started_at_ms  bigint NOT NULL,
  PRIMARY KEY (actor, request_key)
);
CREATE INDEX bulk_operation_keys_started ON bulk_operation_keys (started_at_ms);
