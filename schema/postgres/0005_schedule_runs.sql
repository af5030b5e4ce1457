-- 0005: a schedule's run history (issue 36, item 5): the table of
-- schema/0017_schedule_runs.sql (SQLite), which says why and what each column holds.
-- servers-from: 5 — servers of schema 4 fire schedules without recording the runs.
CREATE TABLE schedule_runs (
  name        text COLLATE "C" NOT NULL,
  seq         bigint NOT NULL,
  run_at_ms   bigint NOT NULL,
  tick_ms     bigint,
  outcome     text NOT NULL,
  detail      text,
  job_id      text,
  PRIMARY KEY (name, seq)
);
