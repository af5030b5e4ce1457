-- 0002: what the admin UI and HTTP API need.
-- Why: operators browse a queue's jobs by state (optionally one job type) page by
-- page, find jobs by idempotency key and filter dead letters by reason; with a
-- million jobs stored each of those must be an index range read, never a scan.
-- Every admin mutation is recorded in an audit log, written in the same
-- transaction as the change it describes, so the log cannot miss a change.

-- Jobs of one queue and state, optionally of one type, in enqueue order (seq is the
-- rowid, which every index carries last). The one index on the hot path that this
-- migration adds: enqueue, lease and ack each update it once.
CREATE INDEX jobs_by_state_type ON jobs (queue, state, type);

-- Find by idempotency key. Partial: only keyed jobs are indexed, and an UPDATE never
-- touches it (neither column changes after insert).
CREATE INDEX jobs_idempotency ON jobs (queue, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Dead letters of one queue and reason, oldest failure first. Partial: touched only
-- when a job enters or leaves `dead`.
CREATE INDEX jobs_dead_reason ON jobs (queue, dead_reason, failed_at_ms) WHERE state = 'dead';

-- Who did what, when. `id` orders entries by insertion (newest first when paging);
-- the clock is the server's, as everywhere, so at_ms follows the same order.
CREATE TABLE audit_log (
  id            INTEGER PRIMARY KEY,
  at_ms         INTEGER NOT NULL,
  actor         TEXT NOT NULL,   -- user name, or `anonymous` when login is off
  action        TEXT NOT NULL,   -- e.g. `queue.pause`, `job.requeue`, `session.login`
  target        TEXT NOT NULL,   -- e.g. `queue:emails`, `job:0190…`, `user:alice`
  details_json  TEXT NOT NULL DEFAULT '{}'
);
-- Filtered paging, newest first: each filter has an index ending in id.
CREATE INDEX audit_log_actor ON audit_log (actor, id);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_target ON audit_log (target, id);
