-- 0011: how many jobs depend on each job that others depend on, as the SQLite store's
-- migration 0026 (see its header for why). Several servers may add edges to one job at once:
-- each locks the job's row before it reads its count (dependencies.ts `targets`), so the
-- count it checks is the last committed one and no other server adds to it before commit.
-- servers-from: 11 — servers of schema 10 add edges without counting them in job_dependents
--   (seen on 2026-12-07; 0017 repairs the counts).
CREATE TABLE job_dependents (
  parent_id   text COLLATE "C" PRIMARY KEY,
  dependents  integer NOT NULL
);
INSERT INTO job_dependents (parent_id, dependents)
  SELECT d.parent_id, count(*) FROM job_dependencies d
   WHERE EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.parent_id)
   GROUP BY d.parent_id;
