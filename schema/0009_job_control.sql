-- 0009: job control — a `cancelled` state, cancel requests for running jobs, expiry (TTL).
-- Why: operators cancel jobs that are waiting or running, and want to see afterwards who
-- cancelled what and when (so a cancelled job is kept, not deleted); producers give jobs a
-- deadline after which they must not start (`expires_at_ms`); a job that expired goes to
-- the dead letters with reason `expired`.
--
-- jobs.state and jobs.dead_reason each gain a value, but SQLite cannot ALTER a CHECK
-- constraint, and rebuilding the table copies every row (measured with 1,000,000 jobs in
-- the README). Widening a CHECK constraint leaves every stored row valid, so this
-- migration follows SQLite's documented procedure for changing a constraint in place
-- (https://www.sqlite.org/lang_altertable.html#otheralter): it rewrites the table's
-- definition in sqlite_schema. src/store/migrate.ts runs a migration that turns
-- writable_schema on with SQLite's defensive mode off, then bumps schema_version, as the
-- procedure asks; a mistyped definition fails the migration and rolls it back. The edit
-- comes last: ALTER TABLE works from the parsed definition, which the bump refreshes.
-- The job is not handed out at or after this time (a TTL); NULL: never expires.
ALTER TABLE jobs ADD COLUMN expires_at_ms INTEGER;
-- When a cancel was asked for. A leased job stays `leased` until its worker stops or its
-- lease ends, then becomes `cancelled`; any other job becomes `cancelled` at once.
ALTER TABLE jobs ADD COLUMN cancelled_at_ms INTEGER;
-- Who asked: `key:NAME` (an API key, over gRPC or the CLI), an admin UI user, or `anonymous`.
ALTER TABLE jobs ADD COLUMN cancelled_by TEXT;

-- Expiry: waiting jobs that carry an expiry, soonest first. Partial: a job without one is
-- never in it, so enqueue, lease and ack of such jobs never touch it.
CREATE INDEX jobs_expiry ON jobs (expires_at_ms) WHERE expires_at_ms IS NOT NULL AND state IN ('scheduled', 'ready');
-- Cancelled jobs of a queue, oldest first: the retention sweep.
CREATE INDEX jobs_cancelled ON jobs (queue, cancelled_at_ms) WHERE state = 'cancelled';

-- A counter per queue for the new state (the engine keeps queue_counts, migration 0003).
INSERT INTO queue_counts (queue, state) SELECT name, 'cancelled' FROM queues;
DROP TRIGGER queues_counts_init;
CREATE TRIGGER queues_counts_init AFTER INSERT ON queues BEGIN
  INSERT INTO queue_counts (queue, state) VALUES
    (new.name, 'scheduled'), (new.name, 'ready'), (new.name, 'leased'), (new.name, 'completed'), (new.name, 'dead'),
    (new.name, 'cancelled');
END;

-- Widen the two CHECK constraints (see the header).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(replace(sql,
         'CHECK (state IN (''scheduled'', ''ready'', ''leased'', ''completed'', ''dead''))',
         'CHECK (state IN (''scheduled'', ''ready'', ''leased'', ''completed'', ''dead'', ''cancelled''))'),
         'CHECK (dead_reason IN (''attempts_exhausted'', ''lease_expired'', ''dead_lettered''))',
         'CHECK (dead_reason IN (''attempts_exhausted'', ''lease_expired'', ''dead_lettered'', ''expired''))')
 WHERE type = 'table' AND name = 'jobs';
PRAGMA writable_schema = OFF;
-- An assertion: fails (CHECK constraint failed) unless both constraints were found and widened.
CREATE TEMP TABLE migration_0009_check (widened INTEGER NOT NULL CHECK (widened = 1));
INSERT INTO migration_0009_check
  SELECT instr(sql, '''cancelled''') > 0 AND instr(sql, '''expired''') > 0
    FROM sqlite_schema WHERE type = 'table' AND name = 'jobs';
DROP TABLE migration_0009_check;
