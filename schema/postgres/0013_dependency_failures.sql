-- 0013: jobs whose failure is still to pass on to the jobs waiting on them, as the SQLite
-- store's migration 0027 (see its header for why). Several servers' maintenance passes take
-- them at once: each takes rows the others have not locked (FOR UPDATE SKIP LOCKED).
-- servers-from: 13 — servers of schema 12 end a failed job others wait on without recording it
--   here: those are never told.
CREATE TABLE dependency_failures (
  job_id  text COLLATE "C" PRIMARY KEY
);
