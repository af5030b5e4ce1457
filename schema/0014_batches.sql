-- 0014: batches — a set of jobs with a completion job (issue 33).
-- Why: "run this once all of these jobs have ended". A batch is a row with its counts; its
-- members are rows too (kept after the jobs are swept: the completion job lists them). A
-- member's end counts it in the unit that ends it, and the unit in which the last member of
-- a sealed batch ends moves the batch to `ended` (one statement that checks it was `sealed`
-- with nothing pending) and enqueues the completion job: exactly once, also across a crash
-- (docs/decisions/0101-workflows-design.md). Jobs outside batches never touch these tables:
-- bit 4 of `jobs.dependency_flags` (migration 0012) marks a member, 0 for every other job.
CREATE TABLE batches (
  id                TEXT PRIMARY KEY,
  state             TEXT NOT NULL CHECK (state IN ('open', 'sealed', 'ended')),
  created_at_ms     INTEGER NOT NULL,
  sealed_at_ms      INTEGER,
  ended_at_ms       INTEGER,
  members           INTEGER NOT NULL DEFAULT 0,  -- jobs ever added (the next member's position)
  pending           INTEGER NOT NULL DEFAULT 0,  -- members not ended yet
  completed         INTEGER NOT NULL DEFAULT 0,
  dead              INTEGER NOT NULL DEFAULT 0,
  cancelled         INTEGER NOT NULL DEFAULT 0,
  -- The completion jobs as requested (JSON, validated at creation): on_complete runs when the
  -- batch ends, on_success only when every member completed. NULL: none.
  on_complete_json  TEXT,
  on_success_json   TEXT,
  -- What the end enqueued: the jobs' ids, or why the enqueue was refused.
  complete_job_id   TEXT,
  success_job_id    TEXT,
  completion_error  TEXT
) WITHOUT ROWID;
-- The batches not ended (the batches_open gauge, the admin list).
CREATE INDEX batches_unended ON batches (created_at_ms) WHERE state <> 'ended';

CREATE TABLE batch_members (
  job_id    TEXT PRIMARY KEY,   -- a job is a member of at most one batch
  batch_id  TEXT NOT NULL,
  position  INTEGER NOT NULL,   -- the order members were added in
  -- How the member first ended; a member counts once (a requeued dead member does not count again).
  state     TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed', 'dead', 'cancelled'))
) WITHOUT ROWID;
CREATE INDEX batch_members_batch ON batch_members (batch_id, position);
