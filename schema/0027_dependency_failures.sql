-- 0027: jobs whose failure is still to pass on to the jobs waiting on them (issue 37).
-- Why: a chain of jobs each waiting on the one before under the `cancel` policy, made over
-- many requests, was cancelled whole in the transaction of its first job's failure (5,000
-- in 194 ms, holding the writer meanwhile). A unit now passes failures on to a bounded
-- number of jobs (src/engine/dependencies/failures.ts); the jobs it did not reach are kept
-- here, in its transaction, and maintenance passes take them on, so a crash between two
-- passes loses none. Empty but for a chain being cancelled.
CREATE TABLE dependency_failures (
  job_id TEXT PRIMARY KEY  -- a job that ended dead or cancelled (jobs.id; kept if the job is swept)
) WITHOUT ROWID;
