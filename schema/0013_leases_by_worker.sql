-- 0013: the index of leased jobs also holds who leased them and since when.
-- Why: the Workers page and GET /api/v1/workers count the leases each worker holds
-- (leasesByWorker). With the index on lease_deadline_ms alone, that read fetched every
-- leased row from the table: 263 / 316 ms p50 / p95 with 80,000 leases held
-- (bench/results/admin-1m.txt, issue 36 item 5). With worker_id and leased_at_ms in the
-- index it reads the index only. The lease deadline stays its first column, so the
-- sweep of expired leases uses it as before; it is the same one index to maintain per
-- lease and ack, a little wider.
DROP INDEX jobs_leased;
CREATE INDEX jobs_leased ON jobs (lease_deadline_ms, worker_id, leased_at_ms) WHERE state = 'leased';
