-- 0012: job dependencies — a `waiting` state and the edges between jobs (issue 33).
-- Why: a job may wait for other jobs to complete (`depends_on`). It waits in a state of its
-- own, `waiting`, that no lease reads; the edges are rows, so the end of a job releases what
-- waits on it with one index seek in the transaction that ends it
-- (docs/decisions/0101-workflows-design.md). Jobs without dependencies never touch the
-- edges: one column, 0 for them, tells the ack whether there is anything to do.
--
-- The job's part in dependencies, bits: 1 = it waits on other jobs (it has edges as the
-- waiting job), 2 = other jobs wait on it (edges name it). The one-statement ack deletes
-- only jobs with 0 here; a job others depend on is kept `completed` (its result is
-- theirs). One column and no CHECK: every insert writes it (measured, bench/engine-ab.ts).
ALTER TABLE jobs ADD COLUMN dependency_flags INTEGER NOT NULL DEFAULT 0;
-- 1 once the queue has had a job that waited on others: only its leases look for the results
-- of dependencies (the lease of every other queue returns nothing more than before).
ALTER TABLE queues ADD COLUMN has_dependencies INTEGER NOT NULL DEFAULT 0;

CREATE TABLE job_dependencies (
  child_seq  INTEGER NOT NULL,   -- the waiting job (jobs.seq); its edges go with it
  parent_id  TEXT NOT NULL,      -- the job it depends on (jobs.id; kept when that job is swept)
  state      TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed', 'failed')),
  -- What the failure of the job depended on does to the waiting job (the same on each of its edges).
  policy     TEXT NOT NULL CHECK (policy IN ('cancel', 'run', 'wait')),
  name       TEXT,              -- the depended-on job's name in the flow that made the edge; NULL: by id
  PRIMARY KEY (child_seq, parent_id)
) WITHOUT ROWID;
-- Who still waits on a job: the release at its end. Resolved edges leave the index.
CREATE INDEX job_dependencies_pending ON job_dependencies (parent_id, child_seq) WHERE state = 'pending';
-- Who depends on a job at all (GetJob's dependents, the retention check).
CREATE INDEX job_dependencies_parent ON job_dependencies (parent_id);

-- A counter per queue for the new state (the engine keeps queue_counts, migration 0003).
INSERT INTO queue_counts (queue, state) SELECT name, 'waiting' FROM queues;
DROP TRIGGER queues_counts_init;
CREATE TRIGGER queues_counts_init AFTER INSERT ON queues BEGIN
  INSERT INTO queue_counts (queue, state) VALUES
    (new.name, 'scheduled'), (new.name, 'ready'), (new.name, 'leased'), (new.name, 'completed'), (new.name, 'dead'),
    (new.name, 'cancelled'), (new.name, 'waiting');
END;

-- Widen the CHECK constraint on jobs.state, as 0009 did (see its header).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql,
         'CHECK (state IN (''scheduled'', ''ready'', ''leased'', ''completed'', ''dead'', ''cancelled''))',
         'CHECK (state IN (''scheduled'', ''ready'', ''leased'', ''completed'', ''dead'', ''cancelled'', ''waiting''))')
 WHERE type = 'table' AND name = 'jobs';
PRAGMA writable_schema = OFF;
-- An assertion: fails (CHECK constraint failed) unless the constraint was found and widened.
CREATE TEMP TABLE migration_0012_check (widened INTEGER NOT NULL CHECK (widened = 1));
INSERT INTO migration_0012_check
  SELECT instr(sql, '''waiting''') > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'jobs';
DROP TABLE migration_0012_check;
