-- 0010: ended batches are swept, and batches are listed (issue 33, task batchlife), as the
-- SQLite store's 0025. The maintenance sweep of every server deletes a batch ended longer
-- ago than limits.batch_retention_ms, its members first, oldest first, a bounded chunk per
-- pass, taking rows with SKIP LOCKED so servers sweeping at once take different rows:
-- `batches_ended` finds them in ended_at_ms order. ListBatches pages newest first (ids are
-- UUIDv7: their order is creation order) by state or by owner, one bounded range of
-- `batches_by_state` or `batches_by_owner` per page.
-- servers-from: 9 — indexes only, which PostgreSQL keeps: servers of schema 9 run on (they neither
--   sweep nor list batches; newer servers do).
CREATE INDEX batches_ended ON batches (ended_at_ms) WHERE state = 'ended';
CREATE INDEX batches_by_state ON batches (state, id);
CREATE INDEX batches_by_owner ON batches (owner, id);
