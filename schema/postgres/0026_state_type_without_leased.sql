-- 0026: the admin's index of jobs by (queue, state, type) no longer holds leased jobs (issue 37,
-- task pgidx20).
-- Why: a lease moves a job from `ready` to `leased`; the new row version got an entry in every
-- index on it, four in all (the primary key, `id`, `jobs_leased`, `jobs_by_state_type`), and
-- nothing on the lease path reads the last one. Without leased jobs in it a lease writes one
-- index entry and one WAL record less per job (14 % fewer buffers per lease in the drain of
-- bench/results/pg-drain-cpu-2026-12-07-s20.md; bench/results/pg-index-2026-12-07-s20.md).
-- The lists of a queue's leased jobs (by type, in enqueue order), their job types and their
-- counts per type read `jobs_leased` instead: every leased job once, then sorted, which the
-- number of jobs leased at once bounds; a read keeps a queue's leased jobs for its snapshot,
-- so a list reads them once per queue (src/store/postgres/browse.ts). The statements of the
-- other states say `state <> 'leased'`, so their prepared (generic) plans can use this index.
-- The new index is built before the old one goes, in the same transaction: the build holds a
-- SHARE lock on `jobs` (writers of jobs wait, readers go on; see the measured time in
-- bench/results/pg-index-2026-12-07-s20.md), then dropping the old one takes ACCESS EXCLUSIVE
-- for a moment to the commit, as 0015 did (it waits for the transactions using `jobs`).
-- servers-from: 25 — an index only: servers of schema 25 run on. Their statements name the
--   state as a parameter, so each of their lists is planned at each execution (a generic
--   plan cannot use a partial index for `state = $2`, and costs more than the custom plans).
CREATE INDEX jobs_by_state_type_new ON jobs (queue, state, type, seq) WHERE state <> 'leased';
DROP INDEX jobs_by_state_type;
ALTER INDEX jobs_by_state_type_new RENAME TO jobs_by_state_type;
