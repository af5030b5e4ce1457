-- 0004: job history that survives a restart (issue 36, item 3): the table of
-- schema/0016_job_history.sql (SQLite), which says why and what each column holds.
-- servers-from: 4 — servers of schema 3 write no history: what they complete would be missing
--   from it.
CREATE TABLE job_history (
  resolution  text NOT NULL CHECK (resolution IN ('m', 'h')),
  bucket_ms   bigint NOT NULL,
  queue       text COLLATE "C" NOT NULL,
  type        text COLLATE "C" NOT NULL,
  writer      text COLLATE "C" NOT NULL,
  completed   bigint NOT NULL,
  failed      bigint NOT NULL,
  dead        bigint NOT NULL,
  covered_ms  bigint NOT NULL,
  wait_hist   text,
  run_hist    text,
  PRIMARY KEY (resolution, bucket_ms, queue, type, writer)
);
