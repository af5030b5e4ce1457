-- 0015: hard execution timeouts (issue 35).
-- Why: a handler that hangs should not keep its job forever by extending the lease, nor run
-- twice because its lease ran out. A job may carry `timeout_ms` (or take its queue's
-- `default_timeout_ms` when leased); the lease stores when that attempt must end
-- (`timeout_at_ms`) and caps its deadline there, so the lease-expiry sweep over jobs_leased
-- ends it — with reason `timeout`, not `lease_expired` — and no index is added.
-- The job's own hard timeout per attempt, in ms; NULL: its queue's default_timeout_ms.
ALTER TABLE jobs ADD COLUMN timeout_ms INTEGER;
-- When the current attempt must end (leased_at_ms + the timeout); NULL: no timeout.
ALTER TABLE jobs ADD COLUMN timeout_at_ms INTEGER;

-- dead_reason gains `timeout` (a job whose last attempt ran out of time): widened in
-- place, as 0009 did (see its header for the procedure and why).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql,
         'CHECK (dead_reason IN (''attempts_exhausted'', ''lease_expired'', ''dead_lettered'', ''expired''))',
         'CHECK (dead_reason IN (''attempts_exhausted'', ''lease_expired'', ''dead_lettered'', ''expired'', ''timeout''))')
 WHERE type = 'table' AND name = 'jobs';
PRAGMA writable_schema = OFF;
-- An assertion: fails (CHECK constraint failed) unless the constraint was found and widened.
CREATE TEMP TABLE migration_0015_check (widened INTEGER NOT NULL CHECK (widened = 1));
INSERT INTO migration_0015_check
  SELECT instr(sql, '''timeout''') > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'jobs';
DROP TABLE migration_0015_check;
