-- 0025: ended batches are swept, and batches are listed (issue 33, task batchlife).
-- Why: nothing deleted a batch, so ended batches and their member rows grew without bound,
-- and no call listed batches. The maintenance sweep deletes a batch ended longer ago than
-- limits.batch_retention_ms, its members first, oldest first, a bounded chunk per pass:
-- `batches_ended` finds them in ended_at_ms order without reading the others. ListBatches
-- pages newest first (ids are UUIDv7: their order is creation order) by state or by owner:
-- `batches_by_state` and `batches_by_owner` keep each page one bounded range.
CREATE INDEX batches_ended ON batches (ended_at_ms) WHERE state = 'ended';
CREATE INDEX batches_by_state ON batches (state, id);
CREATE INDEX batches_by_owner ON batches (owner, id);
