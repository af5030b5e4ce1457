-- experiment B
DROP INDEX jobs_by_state_type;
CREATE INDEX jobs_by_state_type ON jobs (queue, state, type) WHERE state NOT IN ('leased', 'ready');
