-- 0017: a schedule's run history (issue 36, item 5; docs/schedules.md "Run history").
-- Why: a schedule kept only its last outcome; an operator could not see how its
-- earlier ticks went or find the jobs they made. Each handled tick (or manual trigger)
-- now adds a row in the same write as the tick itself: when, which tick, the outcome,
-- its detail and the job it made. Bounded: the last 20 runs per schedule are kept (the
-- write that adds one deletes what falls out), and a schedule's runs go with it.
CREATE TABLE schedule_runs (
  name        TEXT NOT NULL,
  seq         INTEGER NOT NULL,   -- 1, 2, … per schedule: the order of its runs
  run_at_ms   INTEGER NOT NULL,   -- when the tick was handled, or the trigger made
  tick_ms     INTEGER,            -- the tick handled; NULL for a manual trigger
  outcome     TEXT NOT NULL,      -- a ScheduleOutcome, or 'triggered'
  detail      TEXT,
  job_id      TEXT,               -- the job the run made (or found, deduplicated); NULL: none
  PRIMARY KEY (name, seq)
) WITHOUT ROWID;
