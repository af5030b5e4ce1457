-- 0024: the request keys of bulk operations (CancelJobsRequest.request_key in admin.proto).
-- Why: a bulk call whose answer is lost (UNAVAILABLE, a deadline, a dropped connection) is
-- retried by the SDKs or the user; without a record of what the first call started, the retry
-- started a second operation (a second of the few bulk-operation slots, a second audit entry).
-- A key names one request of one principal (the audit actor: `key:NAME`, an admin UI user,
-- or `anonymous`); the row is written when the operation starts, before the caller is
-- answered, and the primary key makes a second start under the same key impossible.
-- Rows older than the key's window (24 hours) are replaced by a new start under the same key
-- and deleted, a few at a time, by later starts (src/engine/control/bulk-keys.ts).
CREATE TABLE bulk_operation_keys (
  actor          TEXT NOT NULL,
  request_key    TEXT NOT NULL,
  operation_id   TEXT NOT NULL,
  -- The checked request (action, audit action, filter and changes) as JSON: the same key
  -- with another request is refused, never taken as a repeat.
  request_json   TEXT NOT NULL,
  started_at_ms  INTEGER NOT NULL,
  PRIMARY KEY (actor, request_key)
) WITHOUT ROWID;
CREATE INDEX bulk_operation_keys_started ON bulk_operation_keys (started_at_ms);
