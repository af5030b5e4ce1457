-- 0028: a batch's death callback (issue 33, task batchdeath): `on_death`, enqueued once, in
-- the transaction that first counts a member dead.
-- Why: on_complete and on_success wait for the whole batch; a team wants to hear of a
-- failure while the rest still runs (Sidekiq Pro's `death` callback). `first_dead_id` is
-- the member whose death was counted first: the statement that counts a member dead sets
-- it only while it is NULL, so exactly one unit sees it set to its own member and enqueues
-- the job (`death_job_id`), also across a crash. A refused enqueue is told in
-- `completion_error`, as the end's are. Constant defaults (NULL): no row is rewritten.
ALTER TABLE batches ADD COLUMN on_death_json TEXT;
ALTER TABLE batches ADD COLUMN first_dead_id TEXT;
ALTER TABLE batches ADD COLUMN death_job_id TEXT;
