-- 0026: how many jobs depend on each job that others depend on (limits.max_dependents_per_job).
-- Why: the end of a job releases (or cancels) every job waiting on it in its own transaction
-- (docs/decisions/0101-workflows-design.md), holding the writer while it does: the enqueue
-- refuses an edge that would give a job more dependents than the limit (SECURITY.md,
-- "Workflows under attack"). Counting a job's edges at each new one would cost O(n) per edge,
-- O(n²) for a wide fan-out; this count goes up once per write unit by the edges it made. Only
-- jobs named by id have a row (a job outside workflows never touches it): the edges a flow
-- makes to its own new jobs are counted from the request (at most the limit), and a job with
-- no row is counted by its edges, once, when it is first named by id (store/dependencies.ts,
-- countDependents). It counts edges as they were made and is dropped with the job by the
-- retention sweep.
CREATE TABLE job_dependents (
  parent_id   TEXT PRIMARY KEY,    -- the job others depend on (jobs.id)
  dependents  INTEGER NOT NULL     -- edges made to it (job_dependencies rows naming it)
) WITHOUT ROWID;
-- The edges stored before this migration, for the jobs still kept.
INSERT INTO job_dependents (parent_id, dependents)
  SELECT d.parent_id, count(*) FROM job_dependencies d
   WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.parent_id)
   GROUP BY d.parent_id;
