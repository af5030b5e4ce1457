-- 0029: a flow job's name, kept with the job (issue 33, task wfedges).
-- Why: a job's name in its flow was kept only on the edges that name it (job_dependencies.name),
-- so a job nothing waits on — a flow's final job, or a flow of one job — had none: GetFlow,
-- `sepp flow show` and the admin flow page showed `-` for it. The name is now a column of the
-- job: written by the INSERT that stores a flow's jobs (no statement of its own), deleted with
-- the row on every path, NULL for every job a flow did not store (the INSERT of such jobs does
-- not list it). Jobs stored before this migration have none: their names still come from edges.
ALTER TABLE jobs ADD COLUMN flow_name TEXT;
