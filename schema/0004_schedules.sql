-- 0004: schedules (periodic jobs) kept by the server.
-- Why: a schedule's ticks are enqueued by the server's maintenance loop, each
-- exactly once: the tick's job insert and the advance of the schedule's cursor
-- (`next_tick_ms`) commit in the same transaction, so a crash at any moment
-- neither loses nor doubles a tick. The definition is stored in readable columns
-- (the cron expression, the timezone, the job template) so `sqlite3` shows what
-- each schedule does and when it last ran; times are in ms since the epoch.

CREATE TABLE schedules (
  name               TEXT PRIMARY KEY,
  -- `config`: declared in sepp.toml [[schedules]] (reconciled at every start, not
  -- changeable over the API); `api`: created over gRPC (kept until deleted).
  source             TEXT NOT NULL CHECK (source IN ('config', 'api')),
  -- Exactly one of cron and interval_ms.
  cron               TEXT,
  interval_ms        INTEGER CHECK (interval_ms IS NULL OR interval_ms > 0),
  timezone           TEXT NOT NULL,
  -- Interval ticks fall on anchor_ms + k × interval_ms.
  anchor_ms          INTEGER NOT NULL,
  start_at_ms        INTEGER,
  end_at_ms          INTEGER,
  -- `run_latest`, `skip` or `catch_up` (up to catch_up_max ticks).
  misfire            TEXT NOT NULL CHECK (misfire IN ('run_latest', 'skip', 'catch_up')),
  catch_up_max       INTEGER NOT NULL DEFAULT 0,
  -- `allow`, or `skip` a tick while the schedule's last job is scheduled, ready or leased.
  overlap            TEXT NOT NULL CHECK (overlap IN ('allow', 'skip')),
  jitter_ms          INTEGER NOT NULL DEFAULT 0,
  -- The job template.
  queue              TEXT NOT NULL,
  type               TEXT NOT NULL,
  payload            BLOB NOT NULL,
  content_type       TEXT NOT NULL,
  priority           INTEGER NOT NULL,
  metadata_json      TEXT,
  max_attempts       INTEGER,   -- NULL: the queue's
  lease_ms           INTEGER,   -- NULL: what the reserve asks for
  paused             INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
  -- The cursor: the earliest tick not yet handled; NULL when no tick will come (past end_at).
  next_tick_ms       INTEGER,
  -- What happened last: the tick (or manual trigger) time, when it was handled, how, and its job.
  last_tick_ms       INTEGER,
  last_run_at_ms     INTEGER,
  last_outcome       TEXT,      -- enqueued | deduplicated | triggered | skipped_overlap | skipped_misfire | rejected
  last_detail        TEXT,
  last_job_id        TEXT,
  ticks_enqueued     INTEGER NOT NULL DEFAULT 0,
  ticks_skipped      INTEGER NOT NULL DEFAULT 0,
  created_at_ms      INTEGER NOT NULL,
  updated_at_ms      INTEGER NOT NULL,
  CHECK ((cron IS NULL) <> (interval_ms IS NULL))
) WITHOUT ROWID;

-- The maintenance loop's question: which running schedules are due?
CREATE INDEX schedules_due ON schedules (next_tick_ms) WHERE paused = 0 AND next_tick_ms IS NOT NULL;

-- A job's own lease length (a schedule's template can set one): a reserve that asks
-- for a shorter lease, or for none, gives the job this long, up to the queue's
-- max_lease_ms. NULL for jobs that do not set one. ADD COLUMN with a NULL default
-- rewrites nothing, and a NULL costs one byte of the record header.
ALTER TABLE jobs ADD COLUMN lease_ms INTEGER;
