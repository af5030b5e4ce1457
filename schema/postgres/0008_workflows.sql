-- 0008: workflows — job dependencies and batches (issue 33), as the SQLite store's
-- migrations 0012, 0014, 0020 and 0021 (docs/decisions/0101-workflows-design.md).
-- Why: a job may wait for other jobs (`depends_on`, the `waiting` state), a flow is a graph
-- of such jobs, and a batch is a set of jobs with a completion job. The release of a waiting
-- job and the end of a batch happen in the transaction that ends the last job they wait on.
--
-- Jobs without dependencies never touch the new tables: `dependency_flags` is 0 for them
-- (bits: 1 = waits on other jobs, 2 = other jobs wait on it, 4 = member of a batch), and
-- the one-statement ack deletes only jobs with 0 there. A constant default: adding the
-- column rewrites no row.
--
-- Several servers share these tables (src/store/postgres/dependencies.ts says how each
-- decision is made exactly once: row locks, checked in the statement that changes a row).
-- servers-from: 8 — servers of schema 7 know no dependencies: their ack deletes a job others
--   wait on and releases none.
ALTER TABLE jobs ADD COLUMN dependency_flags integer NOT NULL DEFAULT 0;
-- true once the queue has had a job that waited on others: only its leases read the results
-- of dependencies.
ALTER TABLE queues ADD COLUMN has_dependencies boolean NOT NULL DEFAULT false;

-- jobs.state gains `waiting`. NOT VALID adds the wider CHECK without a scan under the table
-- lock; VALIDATE checks the rows under a lighter one (as 0003 did for dead_reason).
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
  CHECK (state IN ('scheduled', 'ready', 'leased', 'completed', 'dead', 'cancelled', 'waiting')) NOT VALID;
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_state_check;

CREATE TABLE job_dependencies (
  child_seq  bigint NOT NULL,                 -- the waiting job (jobs.seq); its edges go with it
  parent_id  text COLLATE "C" NOT NULL,       -- the job it depends on (jobs.id; kept when that job is swept)
  state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed', 'failed')),
  -- What the failure of the job depended on does to the waiting job (the same on each of its edges).
  policy     text NOT NULL CHECK (policy IN ('cancel', 'run', 'wait')),
  name       text,                            -- the depended-on job's name in its flow; NULL: named by id
  PRIMARY KEY (child_seq, parent_id)
);
-- Who still waits on a job: the release at its end. Resolved edges leave the index.
CREATE INDEX job_dependencies_pending ON job_dependencies (parent_id, child_seq) WHERE state = 'pending';
-- Who depends on a job at all (GetJob's dependents, the retention check, a flow's graph).
CREATE INDEX job_dependencies_parent ON job_dependencies (parent_id);
-- Whether a waiting job has a pending edge left: one seek, however many edges it has.
CREATE INDEX job_dependencies_pending_child ON job_dependencies (child_seq) WHERE state = 'pending';

CREATE TABLE batches (
  id                text COLLATE "C" PRIMARY KEY,
  state             text NOT NULL CHECK (state IN ('open', 'sealed', 'ended')),
  created_at_ms     bigint NOT NULL,
  sealed_at_ms      bigint,
  ended_at_ms       bigint,
  members           integer NOT NULL DEFAULT 0,  -- jobs ever added (the next member's position)
  pending           integer NOT NULL DEFAULT 0,  -- members not ended yet
  completed         integer NOT NULL DEFAULT 0,
  dead              integer NOT NULL DEFAULT 0,
  cancelled         integer NOT NULL DEFAULT 0,
  -- The completion jobs as requested (JSON, validated at creation); NULL: none.
  on_complete_json  text,
  on_success_json   text,
  -- What the end enqueued: the jobs' ids, or why the enqueue was refused.
  complete_job_id   text COLLATE "C",
  success_job_id    text COLLATE "C",
  completion_error  text,
  -- The API key that created it ('' without one): limits.max_open_batches_per_key.
  owner             text COLLATE "C" NOT NULL DEFAULT ''
) WITH (fillfactor = 80);
-- The batches not ended (the batches_open gauge, the admin list), and one owner's.
CREATE INDEX batches_unended ON batches (created_at_ms) WHERE state <> 'ended';
CREATE INDEX batches_unended_owner ON batches (owner) WHERE state <> 'ended';

CREATE TABLE batch_members (
  job_id    text COLLATE "C" PRIMARY KEY,   -- a job is a member of at most one batch
  batch_id  text COLLATE "C" NOT NULL,
  position  integer NOT NULL,               -- the order members were added in
  -- How the member first ended; a member counts once (a requeued dead member does not count again).
  state     text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'completed', 'dead', 'cancelled'))
);
CREATE INDEX batch_members_batch ON batch_members (batch_id, position);
