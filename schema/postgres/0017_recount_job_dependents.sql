-- 0017: a one-off repair of the counts of dependents (0011) that servers of schema 10 or
-- earlier left short: they ran on after 0011 (before servers refused a newer schema) and added
-- edges without counting them, so a job could gain more dependents than
-- limits.max_dependents_per_job allows (seen on 2026-12-07; docs/upgrading.md, "On PostgreSQL").
-- A count is raised to the job's edges where it has fewer, never lowered: it counts edges as
-- they were made, and the retention sweep drops the edges of swept waiting jobs, so a count
-- above the edges left is right. Jobs without a row are counted by their edges when first named
-- (src/store/postgres/dependencies.ts), so they need none. A migration, not a command: it runs
-- once on every database that needs it, with no step to remember, under the migration lock.
-- Other servers may be adding edges meanwhile: the table lock (SHARE ROW EXCLUSIVE, held to the
-- commit) waits for the units that counted edges and holds back the next until the recount
-- commits; a unit whose edges the recount does not see adds them to the count after it. It
-- reads job_dependencies once, whole.
-- servers-from: 16 — a data repair: servers of schema 16 count edges as it does.
LOCK TABLE job_dependents IN SHARE ROW EXCLUSIVE MODE;
UPDATE job_dependents n SET dependents = e.edges
  FROM (SELECT d.parent_id, count(*)::integer AS edges FROM job_dependencies d
         WHERE d.parent_id IN (SELECT parent_id FROM job_dependents)
         GROUP BY d.parent_id) e
 WHERE n.parent_id = e.parent_id AND n.dependents < e.edges;
