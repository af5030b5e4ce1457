-- 0016: a batch member's batch id, kept with the job, as the SQLite store's migration 0030
-- (see its header for why). Nullable without a default: adding it rewrites no row; the
-- UPDATE rewrites only the rows of members stored before it that a lease can still take
-- (scheduled, ready, waiting, leased, dead), as 0030 does: the migration holds an exclusive
-- lock on jobs while it runs, and the completed and cancelled members have had their lease.
-- servers-from: 16 — servers of schema 15 store batch members without batch_id.
ALTER TABLE jobs ADD COLUMN batch_id text COLLATE "C";
UPDATE jobs j SET batch_id = m.batch_id FROM batch_members m
 WHERE j.id = m.job_id AND j.state IN ('scheduled', 'ready', 'waiting', 'leased', 'dead');
