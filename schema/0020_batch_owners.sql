-- 0020: who created a batch (issue 33), to bound the batches one API key holds.
-- Why: a batch not ended is a row and a completion job in waiting that nobody may hold
-- without bound (limits.max_open_batches_per_key). `owner` is the API key's name that
-- created it ('' without a key, or in-process); the partial index counts one owner's
-- batches not ended, up to the limit, without reading the others.
ALTER TABLE batches ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX batches_unended_owner ON batches (owner) WHERE state <> 'ended';
