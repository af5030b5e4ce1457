-- 0014: a batch's death callback (issue 33, task batchdeath), as the SQLite store's 0028:
-- `on_death`, enqueued once, in the transaction that first counts a member dead.
-- Why: on_complete and on_success wait for the whole batch; a team wants to hear of a
-- failure while the rest still runs (Sidekiq Pro's `death` callback). The UPDATE that
-- counts a member's end sets `first_dead_id` only while it is NULL; two servers counting
-- two deaths of one batch at once are serialised on the batch's row (the second re-reads
-- it after the first's commit and finds it set), so exactly one unit sees its own member
-- there and enqueues the job (`death_job_id`), also across a crash. A refused enqueue is
-- told in `completion_error`. Nullable columns without a default: no row is rewritten.
-- servers-from: 14 — servers of schema 13 count a dead member without setting first_dead_id
--   (on_death is never enqueued), and their prepared `SELECT * FROM batches` fails once the
--   table has more columns (PostgreSQL: "cached plan must not change result type").
ALTER TABLE batches ADD COLUMN on_death_json text;
ALTER TABLE batches ADD COLUMN first_dead_id text COLLATE "C";
ALTER TABLE batches ADD COLUMN death_job_id text COLLATE "C";
