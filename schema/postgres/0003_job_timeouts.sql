-- 0003: hard execution timeouts (issue 35), as the SQLite
-- store's migration of the same name. A job's own `timeout_ms` (NULL: its queue's
-- default_timeout_ms) and the current attempt's end, `timeout_at_ms`, set by the lease,
-- which caps the lease deadline there: the lease-expiry sweep ends the attempt with
-- reason `timeout`. No index is added. Both columns are NULL for jobs without a timeout,
-- so adding them rewrites nothing.
-- servers-from: 3 — servers of schema 2 lease without setting timeout_at_ms: a job's timeout
--   would not hold.
ALTER TABLE jobs ADD COLUMN timeout_ms bigint;
ALTER TABLE jobs ADD COLUMN timeout_at_ms bigint;
-- dead_reason gains `timeout`. A wider CHECK holds for every stored row: NOT VALID adds it
-- without a scan under the table lock, VALIDATE checks the rows under a lighter one.
ALTER TABLE jobs DROP CONSTRAINT jobs_dead_reason_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_dead_reason_check
  CHECK (dead_reason IN ('attempts_exhausted', 'lease_expired', 'dead_lettered', 'expired', 'timeout')) NOT VALID;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_dead_reason_check;
