-- 0016: job history that survives a restart (issue 36, item 3; docs/admin.md "History").
-- Why: the dashboard's rates were kept in memory only, so a restart erased them. The
-- server now aggregates what jobs did in memory and writes it here once a minute, in one
-- write: per (queue, type) and bucket, the attempts that completed and failed, the jobs
-- that went dead, and histograms of the wait (due → start) and run time (start → end) of
-- the attempts that ended, from which p50/p95 are read. Two resolutions: one-minute
-- buckets (`m`, kept 3 hours) and one-hour buckets (`h`, kept 8 days), each row written
-- by one server process (`writer`, random per start), so two processes (a restart within
-- a minute, or several servers on one PostgreSQL database) never write the same row.
-- The row with queue '' and type '' of a bucket is its coverage: how many ms of the
-- bucket the writer ran; a bucket without one is "no data", not zero.
-- Bounds: at most 200 (queue, type) series per process (the rest under '(other)'),
-- so at most 202 rows per writer and bucket.
CREATE TABLE job_history (
  resolution  TEXT NOT NULL CHECK (resolution IN ('m', 'h')),
  bucket_ms   INTEGER NOT NULL,   -- the bucket's start
  queue       TEXT NOT NULL,      -- '' with type '': the coverage row
  type        TEXT NOT NULL,
  writer      TEXT NOT NULL,
  completed   INTEGER NOT NULL,   -- attempts acked
  failed      INTEGER NOT NULL,   -- attempts that failed (nack, lease expiry), retried or not
  dead        INTEGER NOT NULL,   -- jobs that went dead, for any reason
  covered_ms  INTEGER NOT NULL,   -- coverage row: ms of the bucket the writer ran; else 0
  wait_hist   TEXT,               -- JSON [[bin, count], …] of due → start, ms (history-bins.ts)
  run_hist    TEXT,               -- JSON [[bin, count], …] of start → end, ms
  PRIMARY KEY (resolution, bucket_ms, queue, type, writer)
) WITHOUT ROWID;
