-- 0030: a batch member's batch id, kept with the job (issue 33, task leasebatch).
-- Why: a member that fans out into its own batch (AddToBatch with from_member) needs its
-- batch's id, and read it with GetJob: one more call per job. The lease returns it with the
-- job instead, from the row it already reads (no read of batch_members). It is written by the
-- UPDATE that marks a job a member (bit 4 of dependency_flags: no statement of its own), and is
-- NULL for every other job (nullable without a default: adding it rewrites no row). The sweep of
-- an ended batch leaves it (GetJob still reads batch_members, and names no swept batch).
-- Members stored before this migration get it from batch_members: found through the `id`
-- index, one probe per member row, no scan of the jobs. Only those a lease can still take
-- (scheduled, ready, waiting, leased, or dead: a requeue leases it again) are rewritten: the
-- migration holds the write lock while it runs, and the completed and cancelled members —
-- most of them, on a busy server — have had their last lease (GetJob names their batch from
-- batch_members; one requeued by a bulk requeue later leases without it).
ALTER TABLE jobs ADD COLUMN batch_id TEXT;
UPDATE jobs SET batch_id = (SELECT m.batch_id FROM batch_members m WHERE m.job_id = jobs.id)
 WHERE id IN (SELECT job_id FROM batch_members)
   AND state IN ('scheduled', 'ready', 'waiting', 'leased', 'dead');
