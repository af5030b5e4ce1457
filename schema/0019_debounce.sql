-- 0019: debounce by key, with a maximum wait (issue 35).
-- Why: a producer that sends a burst of updates for one thing (a document saved ten times
-- a second) wants one job that runs once the burst is over, with the last update's payload.
-- An enqueue with `debounce_key` finds the queue's job with that key that is still waiting
-- and was never leased (state scheduled or ready, attempt 0), replaces its payload and
-- metadata and moves its run time to now + debounce_ms, never past `debounce_until_ms`
-- (its first enqueue + debounce_max_ms). The partial index holds only such jobs, so jobs
-- without a key add no entry, and a lease moves a debounced job out of it.
-- The key that later enqueues may replace this job's content under; NULL: not debounced.
ALTER TABLE jobs ADD COLUMN debounce_key TEXT;
-- The latest run time a later enqueue may push this job to; NULL: no cap.
ALTER TABLE jobs ADD COLUMN debounce_until_ms INTEGER;
CREATE INDEX jobs_debounce ON jobs (queue, debounce_key, seq)
  WHERE debounce_key IS NOT NULL AND attempt = 0 AND state IN ('scheduled', 'ready');

-- A schedule's job template may carry `timeout_ms` (the hard execution timeout of each
-- attempt of the jobs it enqueues, as EnqueueJob.timeout_ms); NULL: the queue's default.
ALTER TABLE schedules ADD COLUMN timeout_ms INTEGER;
