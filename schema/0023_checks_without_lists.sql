-- 0023: the CHECK constraints on states, reasons and policies written as comparisons (issue 33).
-- Why: SQLite evaluates `CHECK (x IN ('a', 'b', 'c'))` by building a temporary B-tree of the
-- list's values, and in a constraint (unlike in a query) it builds it again for every row it
-- checks. jobs.state is checked at every INSERT and at every UPDATE that sets the state (each
-- lease, release, kept ack), jobs.dead_reason at every INSERT, and job_dependencies' state and
-- policy at every edge's INSERT (its state at each resolve): measured, a W5 flow job's INSERT
-- cost 4.2 µs of CPU with the lists and 3.0 without any CHECK (bench/results/w5enq-2026-12-07.md).
-- `x = 'a' OR x = 'b' OR …` accepts and refuses exactly the same values (a NULL is NULL in both,
-- which a CHECK accepts; dead_reason is NULL until a job dies) and costs a comparison each.
-- The definitions are edited in place, as 0009 did (see its header for the procedure and why).
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(replace(sql,
         'CHECK (state IN (''scheduled'', ''ready'', ''leased'', ''completed'', ''dead'', ''cancelled'', ''waiting''))',
         'CHECK (state = ''scheduled'' OR state = ''ready'' OR state = ''leased'' OR state = ''completed'' OR state = ''dead'' OR state = ''cancelled'' OR state = ''waiting'')'),
         'CHECK (dead_reason IN (''attempts_exhausted'', ''lease_expired'', ''dead_lettered'', ''expired'', ''timeout''))',
         'CHECK (dead_reason = ''attempts_exhausted'' OR dead_reason = ''lease_expired'' OR dead_reason = ''dead_lettered'' OR dead_reason = ''expired'' OR dead_reason = ''timeout'')')
 WHERE type = 'table' AND name = 'jobs';
UPDATE sqlite_schema
   SET sql = replace(replace(sql,
         'CHECK (state IN (''pending'', ''completed'', ''failed''))',
         'CHECK (state = ''pending'' OR state = ''completed'' OR state = ''failed'')'),
         'CHECK (policy IN (''cancel'', ''run'', ''wait''))',
         'CHECK (policy = ''cancel'' OR policy = ''run'' OR policy = ''wait'')')
 WHERE type = 'table' AND name = 'job_dependencies';
PRAGMA writable_schema = OFF;
-- An assertion: fails (CHECK constraint failed) unless all four constraints were found and rewritten.
CREATE TEMP TABLE migration_0023_check (rewritten INTEGER NOT NULL CHECK (rewritten = 1));
INSERT INTO migration_0023_check
  SELECT instr(sql, ' IN (''') = 0 AND instr(sql, 'state = ''waiting''') > 0 AND instr(sql, 'dead_reason = ''timeout''') > 0
    FROM sqlite_schema WHERE type = 'table' AND name = 'jobs';
INSERT INTO migration_0023_check
  SELECT instr(sql, ' IN (''') = 0 AND instr(sql, 'state = ''failed''') > 0 AND instr(sql, 'policy = ''wait''') > 0
    FROM sqlite_schema WHERE type = 'table' AND name = 'job_dependencies';
DROP TABLE migration_0023_check;
