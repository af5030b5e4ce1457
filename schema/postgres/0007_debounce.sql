-- 0007: debounce by key, with a maximum wait (issue 35), as the SQLite store's migration of
-- the same name: the key and the latest run time a later enqueue may push the job to, and a
-- partial index over the jobs that can still absorb an enqueue (waiting, never leased). Both
-- columns are NULL for jobs without a key, so adding them rewrites nothing.
ALTER TABLE jobs ADD COLUMN debounce_key text COLLATE "C";
ALTER TABLE jobs ADD COLUMN debounce_until_ms bigint;
CREATE INDEX jobs_debounce ON jobs (queue, debounce_key, seq)
  WHERE debounce_key IS NOT NULL AND attempt = 0 AND state IN ('scheduled', 'ready');
