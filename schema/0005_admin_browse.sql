-- 0005: what the admin UI's job lists across queues need.
-- Why: operators look at scheduled jobs and retries by when they are due, in one queue or
-- all of them; with a million jobs stored that must be an index range read, not a sort of
-- every scheduled row. Both indexes are partial over scheduled jobs only, so enqueueing a
-- job to run now, leasing and acking never touch them; a scheduled enqueue, a retry
-- (nack with backoff) and a promotion each update one or two entries.

-- Scheduled jobs of one queue by due time, ties in enqueue order.
CREATE INDEX jobs_scheduled_due ON jobs (queue, run_at_ms, seq) WHERE state = 'scheduled';

-- Retries waiting for their next attempt (scheduled after at least one delivery), by due time.
CREATE INDEX jobs_retrying_due ON jobs (queue, run_at_ms, seq) WHERE state = 'scheduled' AND attempt > 0;
