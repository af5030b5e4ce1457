-- 0008: job results and progress.
-- Why: an ack may carry the job's result (bytes with a content type, like the
-- payload), kept with the job while its queue retains completed jobs
-- (completed_retention_ms), so GetJob, `sepp job` and the admin UI can show
-- what a job returned. A worker may report progress (a percentage and/or a
-- small JSON document) while it holds the lease. Plain columns, added without
-- rewriting the table; no index: they are read only with the job's row, and
-- the hot paths (enqueue, lease, ack without retention) never write them.
ALTER TABLE jobs ADD COLUMN result BLOB;
ALTER TABLE jobs ADD COLUMN result_content_type TEXT;
ALTER TABLE jobs ADD COLUMN progress_percent REAL;     -- 0 to 100, or NULL when never reported
ALTER TABLE jobs ADD COLUMN progress_json TEXT;        -- the latest JSON document reported, or NULL
ALTER TABLE jobs ADD COLUMN progress_at_ms INTEGER;    -- when progress was last reported
