-- 0021: a waiting job's pending edges by the job (issue 33), so that the release check after
-- each dependency's end is one seek, not a count of the job's edges.
-- Why: the check "is any edge of this job still pending?" read the job's edges through the
-- primary key, past every one already resolved: a collector waiting on 10,000 jobs cost
-- O(n) per dependency's ack, O(n²) in all (bench/w5-flows.ts: ~1 ms of server CPU per edge).
-- Resolved edges leave this index, so the check stops at the first pending one.
CREATE INDEX job_dependencies_pending_child ON job_dependencies (child_seq) WHERE state = 'pending';
