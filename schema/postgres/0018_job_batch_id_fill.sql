-- 0018: the batch id (0016) of the batch members stored before it, as the SQLite store's 0030
-- fills them. Only the rows a lease can still take (scheduled, ready, waiting, leased, dead: a
-- requeue leases it again); the completed and cancelled members have had their lease.
-- Why a migration of its own: in 0016's transaction the UPDATE ran under the ACCESS EXCLUSIVE
-- lock of its ADD COLUMN, which every reader of jobs waits for; here it takes ROW EXCLUSIVE
-- (readers, and writers of other rows, go on) and locks only the rows it fills until its commit
-- (bench/results/upgrade-2026-12-07.md).
-- servers-from: 16 — a data fill: servers of schema 16 write batch_id as it does.
UPDATE jobs j SET batch_id = m.batch_id FROM batch_members m
 WHERE j.id = m.job_id AND j.state IN ('scheduled', 'ready', 'waiting', 'leased', 'dead')
   AND j.batch_id IS NULL;
