-- experiment A
DROP INDEX jobs_by_state_type;
CREATE INDEX jobs_by_state_type ON jobs (queue, state, type) WHERE state <> 'leased';
