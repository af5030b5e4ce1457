-- 0016: a batch member's batch id, kept with the job, as the SQLite store's migration 0030
-- (see its header for why). Nullable without a default: adding it rewrites no row. The rows of
-- members stored before it are filled by 0018, in a transaction of its own: ADD COLUMN holds
-- ACCESS EXCLUSIVE on jobs to its commit (every reader and writer of jobs waits), so filling
-- them here kept that lock for the UPDATE (bench/results/upgrade-2026-12-07.md).
-- servers-from: 16 — servers of schema 15 store batch members without batch_id.
ALTER TABLE jobs ADD COLUMN batch_id text COLLATE "C";
